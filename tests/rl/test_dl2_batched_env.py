"""`Dl2BatchedEnv` against the scalar `Dl2Env`: per trace seed, the same trajectory."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dlsched.papers.dl2.batched_env import Dl2BatchedEnv, resolve_device
from dlsched.papers.dl2.env import Dl2Env
from dlsched.papers.dl2.paper import exploration_fixes, paper_inputs, paper_network
from dlsched.papers.dl2.state import Dl2Shape

SMALL = {"servers": 3, "num_jobs": 14}


def _run_side_by_side(seeds: list[int], void_share: float, options: dict[str, int]) -> int:
    """Random legal actions (shared) in both; asserts every observation, mask, reward and flag
    is equal; returns the steps taken."""
    batched = Dl2BatchedEnv(len(seeds), **options)
    obs, mask = batched.reset(seeds)
    scalar = [Dl2Env(**options) for _ in seeds]
    s_obs, s_mask = [], []
    for env, seed in zip(scalar, seeds, strict=True):
        o, info = env.reset(options={"trace_seed": seed})
        s_obs.append(o)
        s_mask.append(info["action_mask"])
    rng = np.random.default_rng(0)
    done = [False] * len(seeds)
    steps = 0
    while not all(done):
        for b in range(len(seeds)):
            if not done[b]:
                np.testing.assert_array_equal(obs[b], s_obs[b], err_msg=f"step {steps} env {b}")
                np.testing.assert_array_equal(mask[b], s_mask[b], err_msg=f"step {steps} env {b}")
        void = scalar[0].shape.void
        actions = [
            void if rng.random() < void_share else int(rng.choice(np.flatnonzero(mask[b])))
            for b in range(len(seeds))
        ]
        obs, mask, rewards, terminated, truncated, slot_end = batched.step(actions)
        for b in range(len(seeds)):
            if done[b]:
                continue
            o, r, te, tr, info = scalar[b].step(actions[b])
            s_obs[b], s_mask[b] = o, info["action_mask"]
            assert r == rewards[b]
            assert (te, tr, info["slot_end"]) == (terminated[b], truncated[b], slot_end[b])
            done[b] = te or tr
        steps += 1
    return steps


def test_batched_episode_is_the_scalar_episode() -> None:
    assert _run_side_by_side([11, 12], 0.1, SMALL) > 100


@pytest.mark.slow
def test_batched_episode_is_the_scalar_episode_on_the_testbed() -> None:
    assert _run_side_by_side([5], 0.05, {"num_jobs": 60}) > 500


def test_restart_and_bad_actions() -> None:
    env = Dl2BatchedEnv(2, **SMALL)
    env.reset([1, 2])
    with pytest.raises(ValueError, match="actions"):
        env.step([0, env.shape.num_actions])
    with pytest.raises(ValueError, match="give 2"):
        env.step([0])
    seen_end = False
    for _ in range(5000):
        _, _, _, terminated, truncated, _ = env.step(np.full(2, env.shape.void))
        if (terminated | truncated).any():
            seen_end = True
            restarted = env.reset_done()
            assert restarted.any() and not env.slot_i[:, 4].any()
            break
    assert seen_end


def test_exploration_fixes_match_the_scalar_rule() -> None:
    batched = Dl2BatchedEnv(1, **SMALL)
    batched.reset([3])
    scalar = Dl2Env(**SMALL)
    scalar.reset(options={"trace_seed": 3})
    assert scalar.slot is not None
    for _ in range(2):  # workers without PS on every row that can take one
        for row in range(len(scalar.slot.rows)):
            if batched.mask[0, 3 * row]:
                batched.step([3 * row])
                scalar.step(3 * row)
    want = sorted(scalar.slot.poor_state_fixes())
    assert want and list(np.flatnonzero(exploration_fixes(batched)[0])) == want


def test_paper_network_reads_only_the_paper_state() -> None:
    shape = Dl2Shape()
    keep = paper_inputs(shape)
    assert keep.sum() == shape.J * (shape.L + 5)
    net = paper_network(torch.nn.Sequential(torch.nn.Linear(shape.obs_dim, 4)), shape)
    x = torch.rand(3, shape.obs_dim)
    net(x).sum().backward()
    torch.optim.Adam(net.parameters(), lr=0.1).step()
    y = x.clone()
    y[:, ~torch.from_numpy(keep)] = 5.0
    torch.testing.assert_close(net(x), net(y))


def test_device_names() -> None:
    assert resolve_device("cpu").type == "cpu"
    with pytest.raises(ValueError, match="device"):
        resolve_device("tpu")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_rollout_and_update_match_the_cpu() -> None:
    """On CUDA: the env's tensors are the CPU arrays, and one paper update runs there."""
    from dlsched.papers.dl2.algorithm import Learner
    from dlsched.papers.dl2.paper import Collector, SlotReplay, paper_config, rl_update

    env = Dl2BatchedEnv(4, device="cuda", **SMALL)
    obs, mask = env.reset([1, 2, 3, 4])
    t_obs, t_mask = env.tensors()
    assert t_obs.is_cuda and torch.equal(t_obs.cpu(), torch.from_numpy(obs))
    assert torch.equal(t_mask.cpu(), torch.from_numpy(mask))
    cfg = paper_config(replay_size=64, batch_size=32)
    learner = Learner.create(cfg)
    learner.policy.cuda()
    learner.value.cuda()
    replay = SlotReplay(64, env.shape.obs_dim, env.shape.num_actions)
    collector = Collector(env, learner, replay, seed=0)
    while replay.size < 64:
        collector.step()
    stats = rl_update(learner, replay.sample(32, np.random.default_rng(0), torch.device("cuda")))
    assert all(np.isfinite(v) for v in stats.values())


@pytest.mark.slow
def test_paper_trainer_runs_and_says_how_it_was_made(tmp_path) -> None:
    """A tiny paper run through the shared loop: SL, then actor-critic updates; the card says
    the paper method and its numbers."""
    from dlsched.papers.dl2.paper import PaperSpec, paper_config, train_paper
    from dlsched.rl.checkpoint import read_card

    spec = PaperSpec(
        out=tmp_path / "run",
        workload_options=dict(SMALL),
        config=paper_config(replay_size=256, batch_size=32),
        sl_traces=1,
        sl_steps=5,
        rl_updates=4,
        eval_every=2,
        num_envs=2,
        val_seeds=(201,),
        device="cpu",
        critic_warmup=2,
    )
    result = train_paper(spec)
    assert result.steps == 3
    card = read_card(result.out)
    assert card.hyperparams["method"] == "paper" and card.hyperparams["arch"] == "mlp"
    assert "paper method" in card.notes and "value-only warm-up updates=2" in card.notes
    rows = (result.out / "train_log.csv").read_text().splitlines()
    assert rows[0].startswith("phase,updates,slots") and rows[-1].startswith("rl,4,")


def test_job_seconds_are_the_scalar_jct_reward() -> None:
    """``job_s`` of a slot is the time in system `Dl2Env(reward="jct")` charges for it."""
    batched = Dl2BatchedEnv(1, **SMALL)
    _, mask = batched.reset([7])
    scalar = Dl2Env(reward="jct", **SMALL)
    scalar.reset(options={"trace_seed": 7})
    rng = np.random.default_rng(1)
    slots = 0
    while True:
        action = int(rng.choice(np.flatnonzero(mask[0])))
        _, mask, _, terminated, truncated, slot_end = batched.step([action])
        _, reward, s_term, s_trunc, _ = scalar.step(action)
        if slot_end[0]:
            slots += 1
            assert -batched.job_s[0] / 3600.0 == pytest.approx(reward, rel=1e-12, abs=1e-9)
        if terminated[0] or truncated[0]:
            assert s_term or s_trunc
            break
    assert slots > 5
