"""`BatchedSched2Env` steps SCED² episodes exactly as `Sched2Env` does, per seed; the vector
prioritized replay samples in proportion to priority; ``train sched2 --paper``'s loop runs and
writes a loadable policy. CUDA variants (``@pytest.mark.cuda``) skip without a GPU."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from dlsched.papers.sched2.batched_env import BatchedSched2Env, resolve_device
from dlsched.papers.sched2.env import Sched2Env
from dlsched.papers.sched2.paper import PaperConfig, evaluate_batched, train_paper
from dlsched.papers.sched2.policy import load_policy
from dlsched.papers.sched2.replay import VectorReplay, VectorSumTree

SMALL = {"num_jobs": 60, "load": 1.8, "servers": 3}
"""Short, contended traces on 3 × 8 GPUs: queues, spread placements and holds within ~150
steps an episode."""
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def lockstep(seeds: list[int], backend: str, device: str, action_seed: int = 0) -> int:
    """Drive a batched env and one scalar env per seed with the same random actions (some
    illegal, acting as φ); assert equal masks, observations, rewards and ends. Returns the
    steps taken."""
    scalars = [Sched2Env(**SMALL) for _ in seeds]
    batched = BatchedSched2Env(len(seeds), backend=backend, device=device, **SMALL)
    obs_b, masks_b = batched.reset(seeds)
    state = [env.reset(options={"trace_seed": s}) for env, s in zip(scalars, seeds, strict=True)]
    rng = np.random.default_rng(action_seed)
    done = [False] * len(seeds)
    steps = 0
    while not all(done):
        obs_np, masks_np = batched.ops.numpy(obs_b), batched.ops.numpy(masks_b)
        actions = []
        for i, (obs, info) in enumerate(state):
            if not done[i]:
                np.testing.assert_array_equal(masks_np[i], info["action_mask"])
                np.testing.assert_allclose(obs_np[i], obs, rtol=1e-6, atol=1e-6)
            legal = np.flatnonzero(info["action_mask"])
            pick = rng.integers(0, 11) if rng.random() < 0.1 else rng.choice(legal)
            actions.append(int(pick))
        obs_b, rewards_b, ended_b, masks_b, info_b = batched.step(np.array(actions))
        rewards, ended = batched.ops.numpy(rewards_b), batched.ops.numpy(ended_b)
        finished = dict(info_b["episodes"])
        for i, env in enumerate(scalars):
            if done[i]:
                assert not ended[i] and rewards[i] == 0.0
                continue
            obs, reward, terminated, truncated, info = env.step(actions[i])
            state[i] = (obs, info)
            assert reward == pytest.approx(rewards[i], rel=1e-12, abs=1e-12)
            assert terminated == bool(ended[i]) and not truncated
            if terminated:
                done[i] = True
                for key in ("avg_jct_s", "makespan_s", "avg_effectiveness"):
                    assert finished[i][key] == pytest.approx(info["result"][key], rel=1e-9)
        steps += 1
    return steps


def test_batched_episode_equals_scalar_numpy() -> None:
    assert lockstep([11, 12, 13], "numpy", "cpu") > 80


def test_batched_episode_equals_scalar_torch_on_cpu() -> None:
    assert lockstep([21, 22], "torch", "cpu", action_seed=1) > 80


def test_reset_some_restarts_one_episode_only() -> None:
    env = BatchedSched2Env(2, **SMALL)
    env.reset([1, 2])
    for _ in range(5):
        env.step(np.full(2, 10))
    now_other = float(env.now[1])
    obs, _ = env.reset_some([0], [7])
    assert env.trace_seeds == [7, 2] and float(env.now[1]) == now_other
    fresh = BatchedSched2Env(1, **SMALL)
    obs_fresh, _ = fresh.reset([7])
    np.testing.assert_array_equal(obs[0], obs_fresh[0])


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_incremental_reward_sums_to_the_papers_return_less_the_job_count(backend: str) -> None:
    """Same trajectory as the paper's reward; per episode Σ r = Σ_j (E_j − 1), and holding
    (φ) while jobs wait costs reward at once (the paper's reward pays 0 for it)."""
    paper = BatchedSched2Env(2, backend=backend, **SMALL)
    inc = BatchedSched2Env(2, backend=backend, reward="incremental", **SMALL)
    for env in (paper, inc):
        env.reset([5, 6])
    rng = np.random.default_rng(3)
    totals, ends, hold_costs = np.zeros(2), {}, []
    while len(ends) < 2:
        masks = paper.ops.numpy(paper.action_masks())
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        waiting = paper.ops.numpy((paper.status == 1).any(axis=1))
        _, r_paper, _, _, info = paper.step(actions)
        _, r_inc, _, _, _ = inc.step(actions)
        r_paper, r_inc = paper.ops.numpy(r_paper), inc.ops.numpy(r_inc)
        hold_costs += [r_inc[i] for i in range(2) if actions[i] == 10 and waiting[i]]
        assert np.array_equal(paper.ops.numpy(paper.status), inc.ops.numpy(inc.status))
        totals += r_inc
        ends.update(info["episodes"])
    for i in range(2):
        n = SMALL["num_jobs"]
        assert totals[i] == pytest.approx(n * (ends[i]["avg_effectiveness"] - 1.0), rel=1e-9)
    assert hold_costs and max(hold_costs) < 0.0


@pytest.mark.parametrize("bad", [np.array([0, 11]), np.array([0.0, 1.0]), np.array([1, 2, 3])])
def test_bad_actions_are_refused_with_one_line(bad: Any) -> None:
    env = BatchedSched2Env(2, **SMALL)
    env.reset([1, 2])
    with pytest.raises(ValueError, match=r"BatchedSched2Env\.step"):
        env.step(bad)


def test_workload_outside_the_setting_is_refused() -> None:
    from dataclasses import replace

    from dlsched.workloads.registry import make_workload

    def spread(seed: int) -> Any:
        return replace(make_workload("sched2", seed=seed, num_jobs=20), placement="spread")

    with pytest.raises(ValueError, match="batched sched2 env"):
        BatchedSched2Env(1, spread)
    with pytest.raises(ValueError, match="--device"):
        resolve_device("tpu")


def test_sum_tree_samples_in_proportion_to_priority() -> None:
    tree = VectorSumTree(5)
    tree.update(np.arange(5), np.array([1.0, 0.0, 3.0, 0.0, 4.0]))
    assert tree.total() == 8.0
    np.testing.assert_array_equal(tree.find(np.array([0.5, 1.5, 3.9, 4.1, 7.9])), [0, 2, 2, 4, 4])
    replay = VectorReplay(8, 2, 3, alpha=1.0, seed=0)
    n = 8
    replay.add(
        np.zeros((n, 2), np.float32), np.zeros(n, np.int64), np.zeros(n), np.zeros((n, 2),
        np.float32), np.ones((n, 3), bool), np.zeros(n, bool),
    )  # fmt: skip
    replay.update_priorities(np.arange(n), np.array([1e-9] * 7 + [1.0]))
    drawn = np.concatenate([replay.sample(8, 0.4).indices for _ in range(50)])
    assert (drawn == 7).mean() > 0.95


def _fill(replay: VectorReplay, n: int) -> None:
    replay.add(
        np.zeros((n, 2), np.float32), np.zeros(n, np.int64), np.zeros(n), np.zeros((n, 2),
        np.float32), np.ones((n, 3), bool), np.zeros(n, bool),
    )  # fmt: skip


def test_new_transitions_enter_at_the_max_or_at_given_priorities() -> None:
    replay = VectorReplay(16, 2, 3, alpha=1.0, seed=0)
    _fill(replay, 4)
    replay.update_priorities(np.arange(4), np.array([0.004, 0.002, 0.003, 0.001]))
    _fill(replay, 2)
    # Schaul et al.: at the largest priority ever set (at least 1.0), 400x the replayed ones
    np.testing.assert_allclose(replay.tree.leaves(np.arange(4, 6)), [1.0, 1.0])
    assert replay.newest_weight(2) == pytest.approx(1.0 / (2.01 / 6))
    replay.add(
        np.zeros((2, 2), np.float32), np.zeros(2, np.int64), np.zeros(2), np.zeros((2, 2),
        np.float32), np.ones((2, 3), bool), np.zeros(2, bool), priorities=np.array([0.5, 0.25]),
    )  # fmt: skip
    np.testing.assert_allclose(replay.tree.leaves(np.arange(6, 8)), [0.5, 0.25])


def test_td_priorities_are_the_new_transitions_td_errors(tmp_path: Path) -> None:
    from dlsched.papers.sched2.paper import PaperLearner

    config = PaperConfig(num_envs=2, num_jobs=30, learning_starts=10**9, new_priority="td",
                         device="cpu")  # fmt: skip
    learner = PaperLearner(config)
    obs = learner.obs.copy()
    learner._batched_step()
    batch = learner.replay.sample(2, 1.0)
    expected = learner.dqn.td_abs(batch.obs, batch.actions, batch.rewards, batch.next_obs,
                                  batch.next_masks, batch.dones)  # fmt: skip
    np.testing.assert_allclose(learner.replay.tree.leaves(batch.indices),
                               (expected + config.prio_eps) ** config.alpha, rtol=1e-6)  # fmt: skip
    assert np.isin(batch.obs[:, 0], obs[:, 0]).all()
    with pytest.raises(ValueError, match="new_priority"):
        PaperLearner(PaperConfig(num_envs=1, num_jobs=20, new_priority="newest", device="cpu"))


def test_sampled_transitions_report_their_age_and_first_draw() -> None:
    replay = VectorReplay(8, 2, 3, alpha=0.0, seed=0)
    _fill(replay, 5)
    first = replay.sample(64, 0.4)
    assert first.fresh[np.unique(first.indices, return_index=True)[1]].all()
    np.testing.assert_array_equal(first.ages, 4 - first.indices)
    assert not replay.sample(64, 0.4).fresh.any()
    _fill(replay, 5)  # wraps: slots 5, 6, 7, 0, 1 are new
    batch = replay.sample(256, 0.4)
    assert batch.fresh[np.isin(batch.indices, [5, 6, 7, 0, 1])].any()
    assert batch.ages.max() <= 7


def test_paper_run_writes_a_policy_the_simulator_agrees_with(tmp_path: Path) -> None:
    config = PaperConfig(
        episodes=4, num_envs=2, num_jobs=40, learning_starts=64, batch_size=16,
        eval_every=2, eps_decay_episodes=2, time_budget_s=120.0, device="cpu",
    )  # fmt: skip
    result = train_paper(config, tmp_path / "p", command="dlsched train sched2 --paper")
    assert result.steps == 4 and result.best is not None
    net, shape, card = load_policy(result.out)
    assert card.hyperparams["method"] == "paper" and "no demonstrations" in card.notes
    assert "Command: dlsched train sched2 --paper" in card.notes and card.steps["episodes"] >= 2
    assert shape.order == "arrival"
    with (result.out / "train_log.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["episode"]) for r in rows] == [1, 2, 3, 4]
    assert rows[1]["eval_effectiveness"] and not rows[0]["eval_effectiveness"]
    # the batched greedy evaluation is what the simulator reports for the same network
    from dlsched.api import simulate
    from dlsched.papers.sched2.policy import make_scheduler_from
    from dlsched.workloads.registry import make_workload

    batched = evaluate_batched(net, (5,), num_jobs=40, load=1.8)
    result = simulate(
        make_workload("sched2", seed=5, num_jobs=40, load=1.8), make_scheduler_from(net, shape)
    ).summary()
    assert batched["avg_jct_s"] == pytest.approx(result["avg_jct_s"], rel=1e-9)
    assert batched["makespan_s"] == pytest.approx(result["makespan_s"], rel=1e-9)


@pytest.mark.cuda
@needs_cuda
def test_batched_episode_equals_scalar_on_cuda() -> None:
    assert lockstep([31, 32, 33], "torch", "cuda", action_seed=2) > 80


@pytest.mark.cuda
@needs_cuda
def test_paper_run_on_cuda(tmp_path: Path) -> None:
    assert resolve_device("auto") == "cuda"
    config = PaperConfig(
        episodes=4, num_envs=4, num_jobs=40, learning_starts=64, batch_size=16,
        eval_every=2, eps_decay_episodes=2, time_budget_s=300.0, device="cuda",
    )  # fmt: skip
    result = train_paper(config, tmp_path / "p")
    assert result.best is not None and float(str(result.best.row["eval_avg_jct_s"])) > 0
    assert load_policy(result.out)[2].hyperparams["device"] == "cuda"
