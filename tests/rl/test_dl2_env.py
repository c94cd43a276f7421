"""DL2's environment and state: Gymnasium conformance, masks, batches, rewards."""

from __future__ import annotations

import numpy as np
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.api import simulate
from dlsched.papers.dl2.env import TRAIN_SEED_MIN, Dl2Env
from dlsched.papers.dl2.state import Dl2Shape, Dl2Slot
from dlsched.rl.sim_driver import SimDriver
from dlsched.schedulers.registry import make_scheduler
from dlsched.workloads.registry import make_workload

SMALL = {"servers": 3, "num_jobs": 12}


def test_check_env() -> None:
    env = Dl2Env(shape=Dl2Shape(J=4), **SMALL)
    check_env(env, skip_render_check=True)
    assert env.action_space.n == 3 * 4 + 1
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    assert info["trace_seed"] >= TRAIN_SEED_MIN
    assert np.array_equal(info["action_mask"], env.action_masks())


def test_driver_reproduces_simulate() -> None:
    """Driving the simulator point by point gives exactly `simulate`'s result."""
    workload = make_workload("dl2", seed=5, **SMALL)
    driver = SimDriver(workload, seed=5)
    drf = make_scheduler("drf")
    while driver.next_point() is not None:
        driver.apply(drf.decide(driver.view()))
    ours = driver.result().summary()["avg_jct_s"]
    assert ours == simulate("dl2", "drf", seed=5, **SMALL).summary()["avg_jct_s"]


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), j=st.integers(2, 6))
def test_masks_never_over_allocate(seed: int, j: int) -> None:
    """Random legal actions: the scratch copy never goes negative, caps hold, the cluster stays
    within capacity, and every job of every batch gets a row."""
    rng = np.random.default_rng(seed)
    shape = Dl2Shape(J=j)
    driver = SimDriver(make_workload("dl2", seed=seed, servers=2, num_jobs=10), seed=seed)
    for _ in range(15):
        if driver.next_point() is None:
            break
        view = driver.view()
        slot = Dl2Slot(view, shape)
        seen: set[int] = set()
        while True:
            seen.update(run.job_id for run in slot.rows)
            mask = slot.action_mask()
            assert mask.any()
            action = int(rng.choice(np.flatnonzero(mask)))
            done = slot.apply(action)
            assert (slot.free >= -1e-9).all()
            for run, (w, p) in zip(slot.rows, slot.row_counts(), strict=False):
                assert w <= run.spec.max_workers and p <= run.spec.max_ps
            if done:
                break
        assert seen == {run.job_id for run in view.jobs()}
        driver.apply(slot.decision())
        driver.sim.cluster.assert_consistent()


def test_rewards_sum_to_jobs_finished() -> None:
    """Σ over slots of Σ_i t_i/E_i is the number of finished jobs (each contributes 1)."""
    env = Dl2Env(shape=Dl2Shape(J=4), **SMALL)
    drf = make_scheduler("drf")
    env.reset(seed=3)
    total, done = 0.0, False
    while not done:
        assert env.slot is not None
        decision = drf.decide(env.view())
        targets = {k: (t.num_workers, t.num_ps) for k, t in decision.targets.items()}
        action = env.slot.teacher_action(targets, list(decision.targets))
        _, reward, terminated, truncated, info = env.step(action)
        assert reward == 0.0 or info["slot_end"]
        total += reward
        done = terminated or truncated
    assert terminated
    assert abs(total - SMALL["num_jobs"]) < 1e-6


def test_masked_action_acts_as_void() -> None:
    env = Dl2Env(shape=Dl2Shape(J=4), **SMALL)
    env.reset(seed=2)
    mask = env.action_masks()
    illegal = int(np.flatnonzero(~mask)[0])
    before = env.slots
    slot_before = env.slot
    env.step(illegal)
    assert env.slots > before or env.slot is not slot_before or env.slot.batch > 0
