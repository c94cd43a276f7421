"""DeepRM environment: Gymnasium contract, image pixels, frozen time, rewards, drops, fits."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.papers.deeprm.env import DeepRMEnv
from dlsched.papers.deeprm.state import DeepRMBatch, DeepRMShape, Jobset, fit_table


def _jobset(rows: list[tuple[int, int, int, int]]) -> Jobset:
    """(arrival, length, demand r0, demand r1) per job."""
    a = np.array(rows, np.int64).reshape(-1, 4)
    return Jobset(a[:, 0], a[:, 1], a[:, 2:4].copy(), np.arange(len(a)))


@pytest.mark.parametrize("mask_invalid", [True, False])
def test_check_env(mask_invalid: bool) -> None:
    env = DeepRMEnv(load=1.3, mask_invalid=mask_invalid)
    check_env(env, skip_render_check=True)
    _, info = env.reset(seed=3)
    assert info["action_mask"][0]
    assert env.action_masks()[0] and (mask_invalid or env.action_masks().all())


def test_image_of_a_hand_built_state() -> None:
    shape = DeepRMShape(horizon=3, slots=2, backlog=3, res_slots=4)
    jobs = _jobset([(0, 2, 3, 1), (0, 1, 2, 2), (0, 3, 1, 4), (0, 1, 1, 1)])
    batch = DeepRMBatch([jobs], shape)
    assert batch.slot[0].tolist() == [0, 1] and batch.backlog[0] == 2
    batch.step(np.array([1]))  # job 0 at offset 0; job 2 moves from the backlog to slot 1
    expected = [
        # cpu: cluster|slot1 |slot2  mem: cluster|slot1 |slot2  backlog
        "1110100011001000111111001",
        "1110100000001000111100000",
        "0000100000000000111100000",
    ]
    want = np.array([[int(c) for c in row] for row in expected], np.float32)
    np.testing.assert_array_equal(batch.images()[0], want)


def test_time_is_frozen_until_void() -> None:
    env = DeepRMEnv()
    jobs = _jobset([(0, 2, 5, 1), (0, 3, 1, 5), (1, 1, 2, 2)])
    env.reset(seed=0, options={"jobset": jobs})
    _, reward, _, _, info = env.step(1)
    assert (reward, info["time_step"], info["advanced"]) == (0.0, 0, False)
    assert env.action_masks().tolist()[:3] == [True, False, True]  # slot 1 is now empty
    _, reward, _, _, info = env.step(2)
    assert (reward, info["time_step"], info["advanced"]) == (0.0, 0, False)
    _, reward, _, _, info = env.step(0)
    assert info["time_step"] == 1 and info["advanced"]
    assert reward == pytest.approx(-(1 / 2 + 1 / 3))  # both jobs were in the system in step 0


def test_invalid_action_advances_time_when_unmasked() -> None:
    env = DeepRMEnv(mask_invalid=False)
    env.reset(seed=0, options={"jobset": _jobset([(0, 2, 10, 1), (5, 1, 1, 1)])})
    assert env.action_masks().all()
    _, reward, _, _, info = env.step(5)  # empty slot: invalid
    assert info["time_step"] == 1 and reward == pytest.approx(-1 / 2)


def test_jobs_beyond_the_backlog_are_dropped_and_counted() -> None:
    shape = DeepRMShape(slots=2, backlog=3)
    env = DeepRMEnv(shape=shape)
    _, info = env.reset(options={"jobset": _jobset([(0, 1, 1, 1)] * 8)})
    assert (info["backlog"], info["dropped"], info["jobs_in_system"]) == (3, 3, 5)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.3, 1.9))
def test_return_is_minus_total_slowdown(seed: int, load: float) -> None:
    env = DeepRMEnv(load=load, horizon_steps=15, max_steps=10_000)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    total, done = 0.0, False
    while not done:
        mask = env.action_masks()
        _, reward, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        total += float(reward)
        done = term or trunc
    assert term and info["dropped"] == 0
    assert env.batch is not None
    assert total == pytest.approx(-env.batch.slowdowns(0).sum())


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_fit_table_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    b, m, t, r = 4, 5, 8, 6
    used = rng.integers(0, r + 1, (b, t, 2)) * (rng.random((b, t, 2)) < 0.6)
    length = rng.integers(0, t + 1, (b, m))
    demand = rng.integers(0, r + 1, (b, m, 2))
    fits, first = fit_table(used, length, demand, r)
    for i in range(b):
        for j in range(m):
            starts = [
                s
                for s in range(t - length[i, j] + 1)
                if length[i, j] > 0 and (used[i, s : s + length[i, j]] + demand[i, j] <= r).all()
            ]
            assert fits[i, j] == bool(starts)
            assert first[i, j] == (starts[0] if starts else 0)
