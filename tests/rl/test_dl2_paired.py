"""Paired rollouts (`dlsched.papers.dl2.paired`) and the batched environment's per-job noise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dlsched.papers.dl2 import batched_kernels as bk
from dlsched.papers.dl2.batched_env import Dl2BatchedEnv
from dlsched.papers.dl2.network import make_policy
from dlsched.papers.dl2.paired import (
    PairedBatch,
    _act,
    paired_rollout,
    returns_to_go,
    rloo_advantages,
)
from dlsched.papers.dl2.paper import paper_config

SMALL = {"servers": 3, "num_jobs": 14}


def _random_run(env: Dl2BatchedEnv, seeds: list[int], steps: int, seed: int) -> None:
    """Random legal actions, drawn separately for every environment."""
    env.reset(seeds)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        legal = env.mask
        env.step(np.where(legal, rng.random(legal.shape), -1.0).argmax(1))


def test_bad_noise_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="noise must be one of"):
        Dl2BatchedEnv(1, noise="per_slot", **SMALL)


def test_per_job_noise_is_a_function_of_trace_tick_and_job() -> None:
    """Every running job's speed is its table speed × the hashed factor of (trace, tick, job)
    drawn at the tick the slot began, also in two copies of a trace that took different
    actions (common random numbers); not so under the simulator's stream."""
    env = Dl2BatchedEnv(2, noise="per_job", **SMALL)
    _random_run(env, [11, 11], 60, 0)
    level = env.noise_level
    checked = 0
    for b in range(2):
        tick = int(env.floats[b, bk.F_NOW] / bk.SLOT_S + 0.5)
        for j in np.flatnonzero(env.status[b] == bk.RUNNING):
            base = env.speed[env.jtype[b, j], env.ap[b, j], env.aw[b, j]]
            z = bk.hashed_normal(int(env.trace_seeds[b]), tick, bk.TICK_DRAW, int(j))
            assert env.rate[b, j] / base == pytest.approx(max(0.1, 1 + level * z))
            checked += 1
    assert checked > 2
    assert not np.array_equal(env.status[0], env.status[1])  # the copies did differ
    stream = Dl2BatchedEnv(1, **SMALL)
    _random_run(stream, [11], 60, 0)
    j = int(np.flatnonzero(stream.status[0] == bk.RUNNING)[0])
    tick = int(stream.floats[0, bk.F_NOW] / bk.SLOT_S + 0.5)
    base = stream.speed[stream.jtype[0, j], stream.ap[0, j], stream.aw[0, j]]
    z = bk.hashed_normal(11, tick, bk.TICK_DRAW, j)
    assert stream.rate[0, j] / base != pytest.approx(max(0.1, 1 + level * z))


def test_hashed_normals_look_standard() -> None:
    z = np.array([bk.hashed_normal(7, t, 0, j) for t in range(200) for j in range(100)])
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03
    assert bk.hashed_normal(7, 3, 0, 5) == bk.hashed_normal(7, 3, 0, 5)
    assert len({bk.hashed_normal(7, 3, k, 5) for k in (0, 1)} | {bk.hashed_normal(8, 3, 0, 5)}) == 3


def test_returns_to_go_and_leave_one_out() -> None:
    rewards = np.array([[1.0, 2.0, 4.0], [0.0, 0.0, 4.0], [3.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    G = returns_to_go(rewards, 0.5, 2)
    np.testing.assert_allclose(G, [[3.0, 4.0], [1.0, 2.0], [3.0, 0.0], [3.0, 0.0]])
    batch = PairedBatch(
        obs=np.zeros((4, 1), np.float32), masks=np.ones((4, 1), bool),
        actions=np.zeros(4, np.int64), env=np.array([0, 1, 1, 2]), slot=np.array([0, 0, 1, 1]),
        rewards=rewards, copies=2, window=2,
    )  # fmt: skip
    # trace 0 = copies 0, 1: G slot 0 = 3 vs 1 → ±2; slot 1 = 4 vs 2 → −2 for copy 1;
    # trace 1 = copies 2, 3: equal returns → 0
    np.testing.assert_allclose(rloo_advantages(batch, 0.5), [2.0, -2.0, -2.0, 0.0])


def test_paired_rollout_burns_in_identical_copies_and_records_the_window() -> None:
    cfg = paper_config(hidden=(16, 16))
    torch.manual_seed(0)
    policy = make_policy(cfg)
    env = Dl2BatchedEnv(6, shape=cfg.shape(), noise="per_job", **SMALL)
    batch = paired_rollout(
        env, policy, [11, 12], [3, 0], window=2, horizon=3, gen=torch.Generator().manual_seed(0)
    )
    assert batch.copies == 3 and batch.rewards.shape == (6, 5)
    first = np.stack([batch.obs[np.flatnonzero(batch.env == b)[0]] for b in range(6)])
    for trace in range(2):  # the copies start their window from one state
        np.testing.assert_array_equal(first[3 * trace : 3 * trace + 3], first[[3 * trace] * 3])
    assert not np.array_equal(first[0], first[3])
    assert set(batch.slot.tolist()) == {0, 1}
    assert len(batch.actions) == len(batch.env) == len(batch.obs) > 6
    assert (batch.rewards > 0).any()
    assert batch.masks[np.arange(len(batch.actions)), batch.actions].all()


def test_jct_reward_is_minus_the_job_hours_of_each_slot() -> None:
    """``reward="jct"`` records, for the very same actions, minus the job-hours the batched
    environment reports for each slot (the paper's reward stays the default); a bad name fails."""
    cfg = paper_config(hidden=(16, 16))
    torch.manual_seed(0)
    policy = make_policy(cfg)
    kw = {"window": 2, "horizon": 3}
    env = Dl2BatchedEnv(4, shape=cfg.shape(), noise="per_job", **SMALL)
    paper = paired_rollout(
        env, policy, [11, 12], [3, 0], gen=torch.Generator().manual_seed(0), **kw
    )
    jct = paired_rollout(
        env, policy, [11, 12], [3, 0], gen=torch.Generator().manual_seed(0), reward="jct", **kw
    )
    np.testing.assert_array_equal(paper.actions, jct.actions)  # the reward does not act
    assert (paper.rewards >= 0).all() and (jct.rewards <= 0).all() and (jct.rewards < 0).any()
    # the same rollout by hand, with the rollout's own action rule and generator seed, reading
    # the environment's job-seconds at each slot end
    replay = Dl2BatchedEnv(4, shape=cfg.shape(), noise="per_job", **SMALL)
    gen = torch.Generator().manual_seed(0)
    replay.reset([11, 11, 12, 12])
    start = np.array([3, 3, 0, 0])
    slot = np.zeros(4, dtype=np.int64)
    alive = np.ones(4, dtype=bool)
    job_h = np.zeros((4, 5))
    while alive.any():
        rel = slot - start
        alive &= rel < 5
        if not alive.any():
            break
        act = _act(policy, replay, alive & (rel >= 0), gen)
        act = np.where(alive, act, replay.shape.num_actions - 1)
        _, _, _, term, trunc, end = replay.step(act)
        hit = end & alive & (rel >= 0)
        job_h[hit, rel[hit]] = replay.job_s[hit] / 3600.0
        slot += end
        alive &= ~(term | trunc)
    np.testing.assert_allclose(jct.rewards, -job_h)
    np.testing.assert_allclose(paper.job_hours, job_h)  # recorded under either reward
    with pytest.raises(ValueError, match="reward must be"):
        paired_rollout(env, policy, [11], [0], gen=torch.Generator(), reward="x", **kw)
