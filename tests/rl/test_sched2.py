"""SCED²: profiling, state builder, environment, shared-weight network, prioritized replay."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

from dlsched.papers.sched2.algorithm import DQNConfig, make_net
from dlsched.papers.sched2.env import Sched2Env, workload_traces
from dlsched.papers.sched2.profiling import Profiler, profile_spans
from dlsched.papers.sched2.replay import VectorReplay
from dlsched.papers.sched2.state import Sched2Shape
from dlsched.workloads.registry import make_workload

TINY = {"servers": 2, "num_jobs": 25, "load": 2.0}


def test_profile_spans_go_from_concentrated_to_scattered():
    assert profile_spans(1, 8) == (1, 1, 1, 1)
    assert profile_spans(2, 8) == (1, 2, 2, 2)
    assert profile_spans(8, 8) == (1, 2, 4, 8)
    assert profile_spans(16, 8) == (2, 4, 8, 16)


def test_profile_measures_locality_sensitivity_with_noise():
    jobs = make_workload("sched2", seed=3, num_jobs=400).jobs
    profiler = Profiler(8, seed=1)
    vgg = next(j for j in jobs if j.model == "vgg-16" and j.num_gpus == 8)
    incep = next(j for j in jobs if j.model == "inception-v3" and j.num_gpus == 8)
    one = next(j for j in jobs if j.num_gpus == 1)
    p_vgg, p_inc, p_one = (profiler.profile(j) for j in (vgg, incep, one))
    assert len(p_vgg.speeds) == 4
    assert p_vgg.speeds[0] == pytest.approx(1.0, rel=0.1)
    assert p_vgg.speeds[-1] < 0.2 < p_inc.speeds[-1]  # 9.6x vs 1.7x slower on 8 servers
    assert all(s == pytest.approx(1.0, rel=0.1) for s in p_one.speeds)
    assert len(set(p_one.speeds)) > 1  # measured with noise, not read from the model
    assert Profiler(8, seed=1).profile(vgg) == p_vgg  # deterministic in (seed, job)


def test_env_passes_check_env():
    check_env(Sched2Env(**TINY), skip_render_check=True)


def _first_legal_rollout(env: Sched2Env, seed: int) -> dict:
    _, info = env.reset(seed=seed)
    done = False
    while not done:
        legal = np.flatnonzero(info["action_mask"][:-1])
        action = int(legal[0]) if legal.size else env.shape.slots
        _, _, terminated, truncated, info = env.step(action)
        assert not info["illegal_action"]
        done = terminated or truncated
    return info


def test_env_rewards_are_the_simulators_effectiveness_and_masks_hold():
    env = Sched2Env(**TINY)
    info = _first_legal_rollout(env, seed=4)
    assert info["result"]["finished"] == TINY["num_jobs"]
    assert info["avg_effectiveness"] == pytest.approx(info["result"]["avg_effectiveness"])


def test_phi_is_masked_on_an_idle_cluster():
    env = Sched2Env(**TINY)
    _, info = env.reset(seed=0)  # first point: first job arrives on an empty cluster
    assert not info["action_mask"][-1]
    assert info["action_mask"][0]


def test_window_orders_arrival_or_shortest():
    arrival = Sched2Env(servers=1, num_jobs=60, load=4.0)
    shortest = Sched2Env(servers=1, num_jobs=60, load=4.0, order="shortest")
    for env in (arrival, shortest):
        env.reset(seed=0, options={"trace_seed": 9})
        for _ in range(30):  # let a queue build up
            env.step(env.shape.slots)
    a, b = arrival.builder, shortest.builder
    assert a is not None and b is not None and len(a.waiting) > 10
    assert [r.spec.submit_time_s for r in a.window()] == sorted(
        r.spec.submit_time_s for r in a.window()
    )
    work = [r.spec.total_work for r in b.window()]
    assert work == sorted(work)
    assert max(work) <= min(r.spec.total_work for r in b.waiting[10:])


def test_builder_state_matches_the_simulators_metrics():
    from dlsched.sim.metrics import gpu_remaining_matrix

    env = Sched2Env(servers=2, num_jobs=80, load=4.0)
    env.reset(seed=0, options={"trace_seed": 5})
    for _ in range(40):
        env.step(env.shape.slots)
    b = env.builder
    assert b is not None and b.view.running and len(b.waiting) > 10
    expected = gpu_remaining_matrix(b.view.cluster, b.view.running, b.now_s)
    np.testing.assert_allclose(b.gpu_time_s, expected)
    rest = b.waiting[10:]
    stats = b.observation()[-4:]
    assert stats[0] == pytest.approx(np.log1p(len(rest)), rel=1e-5)
    assert stats[1] == pytest.approx(np.mean([r.spec.num_gpus for r in rest]) / 8, rel=1e-5)
    mean_work = np.mean([r.spec.total_work for r in rest])
    assert stats[2] == pytest.approx(np.log1p(mean_work / 3600), rel=1e-5)


def test_trace_windows_restart_at_zero_and_keep_jobs():
    traces = workload_traces("sched2", num_jobs=50, window=10)
    w = traces(7)
    assert len(w.jobs) == 10 and w.jobs[0].submit_time_s == 0.0
    assert traces(7).jobs == w.jobs


def test_shared_encoder_weights_are_one_parameter_set_for_every_server():
    shape = Sched2Shape(servers=5, gpus_per_server=8)
    net = make_net(shape)
    server_params = [n for n, _ in net.named_parameters() if n.startswith("server_encoder")]
    assert len(server_params) == 4  # two linear layers: weights + biases, not 5 copies
    obs = torch.zeros(1, shape.obs_dim)
    obs[0, :40] = torch.rand(40)
    obs[0, 8:16] = obs[0, 0:8]  # servers 0 and 1 identical
    feats = net.server_features(obs)
    assert torch.allclose(feats[0, 0], feats[0, 1])
    # every server's row sends gradient into the same weights
    grads = []
    for i in range(shape.servers):
        net.zero_grad()
        net.server_features(obs)[0, i].sum().backward()
        grads.append(net.server_encoder[0].weight.grad.clone())
    assert all(g.abs().sum() > 0 for g in grads)
    with torch.no_grad():
        net.server_encoder[0].bias.add_(1.0)
    after = net.server_features(obs)
    assert all(not torch.allclose(after[0, i], feats[0, i]) for i in range(shape.servers))


def test_prioritized_replay_samples_in_proportion_to_priority():
    buf = VectorReplay(8, obs_dim=2, num_actions=2, alpha=1.0, seed=0)
    priorities = [1.0, 2.0, 3.0, 4.0, 0.5, 6.0]
    for p in priorities:
        buf.add(np.zeros((1, 2), np.float32), np.zeros(1, np.int64), np.zeros(1),
                np.zeros((1, 2), np.float32), np.ones((1, 2), bool), np.zeros(1, bool),
                priorities=np.array([p]))  # fmt: skip
    counts = np.zeros(len(priorities))
    for _ in range(500):
        for i in buf.sample(64, 0.4).indices:
            counts[i] += 1
    expected = np.asarray(priorities) / sum(priorities) * counts.sum()
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 20.5  # 99.9 % quantile of chi-square with 5 degrees of freedom
    assert counts[5] > 10 * counts[4]  # priority 6 vs 0.5


def test_prioritized_replay_alpha_zero_is_uniform_and_weights_normalised():
    buf = VectorReplay(4, obs_dim=1, num_actions=2, alpha=0.0, seed=1)
    for p in (1.0, 100.0, 1.0, 1.0):
        buf.add(np.zeros((1, 1), np.float32), np.ones(1, np.int64), np.ones(1),
                np.zeros((1, 1), np.float32), np.ones((1, 2), bool), np.ones(1, bool),
                priorities=np.array([p]))  # fmt: skip
    batch = buf.sample(400, beta=1.0)
    counts = np.bincount(batch.indices, minlength=4)
    assert counts.min() > 70
    assert float(batch.weights.max()) == pytest.approx(1.0)


@pytest.mark.slow
def test_short_training_improves_average_effectiveness_on_a_tiny_setting():
    from dlsched.papers.sched2.algorithm import DQN
    from dlsched.papers.sched2.policy import evaluate

    options = {"servers": 1, "num_jobs": 30, "load": 3.0}
    env = Sched2Env(**options)
    validation = [make_workload("sched2", seed=s, **options) for s in (501, 502, 503)]
    config = DQNConfig(
        seed=0,
        episodes=12,
        learning_starts=200,
        train_freq=1,
        target_update=200,
        eps_decay_steps=600,
        eval_every=0,
        lr=1e-3,
    )
    torch.manual_seed(config.seed)
    before = evaluate(make_net(env.shape, config), validation)["avg_effectiveness"]
    dqn = DQN(env, config)
    log = [dqn.episode() for _ in range(config.episodes)]
    after = evaluate(dqn.net, validation)["avg_effectiveness"]
    assert len(log) == 12 and log[-1].steps == dqn.steps
    assert after > before + 0.02, (before, after)


def test_dsif_teacher_takes_legal_actions_and_finishes_every_job():
    from dlsched.papers.sched2.teacher import DsifTeacher

    env = Sched2Env(servers=2, num_jobs=40, load=3.0, order="shortest")
    teacher = DsifTeacher()
    _, info = env.reset(seed=0, options={"trace_seed": 8})
    teacher.reset()
    done = False
    while not done:
        action = teacher.act(env.builder)
        assert info["action_mask"][action]
        _, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    assert info["result"]["finished"] == 40
    assert max(teacher.delays.values(), default=0) <= 3
