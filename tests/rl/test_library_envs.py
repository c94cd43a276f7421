"""Issue 19's environment options for standard RL libraries: DL2 one step a slot
(``dlsched/DL2Slot-v0``) and DeepRM's ``reward="wait"``, ``work_conserving``, ``window`` and
``observation="compact"``."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.papers.deeprm.compact import compact_dim
from dlsched.papers.deeprm.env import DeepRMEnv
from dlsched.papers.dl2.slot_env import LEVELS, Dl2SlotEnv
from dlsched.papers.dl2.state import Dl2Shape
from dlsched.rl.adapter import PolicyAdapter
from dlsched.workloads.deeprm import STEP_S
from dlsched.workloads.registry import make_workload

Mask = npt.NDArray[np.bool_]
SMALL_DL2: dict[str, Any] = {"shape": Dl2Shape(J=6), "servers": 3, "num_jobs": 14}
SMALL_DL2_JOB: dict[str, Any] = {**SMALL_DL2, "per": "job"}
LIBRARY_DEEPRM: dict[str, Any] = {
    "reward": "wait",
    "work_conserving": True,
    "window": "shortest",
    "observation": "compact",
}


# -- DL2, one step a slot -------------------------------------------------------------------


def test_dl2_slot_defaults_to_a_level_per_job_type() -> None:
    """The registered default is the README example's setting (``per="type"``, the one that
    learned); ``per="job"`` stays an option (issue 34)."""
    env = gym.make("dlsched/DL2Slot-v0", **SMALL_DL2).unwrapped
    assert env.per == "type" and Dl2SlotEnv(**SMALL_DL2).per == "type"  # type: ignore[attr-defined]
    assert env.action_space.nvec.tolist() == [len(LEVELS)] * env.shape.L  # type: ignore[attr-defined]


def test_dl2_slot_env_passes_gymnasiums_checker() -> None:
    env = gym.make("dlsched/DL2Slot-v0", **SMALL_DL2_JOB)
    check_env(env.unwrapped, skip_render_check=True)
    assert isinstance(env.action_space, gym.spaces.MultiDiscrete)
    assert env.action_space.nvec.tolist() == [len(LEVELS)] * 6


def test_dl2_slot_env_passes_sb3s_checker() -> None:
    checker = pytest.importorskip("stable_baselines3.common.env_checker")
    checker.check_env(gym.make("dlsched/DL2Slot-v0", **SMALL_DL2_JOB).unwrapped)


def test_dl2_slot_return_is_minus_total_jct_over_slot_times_rows() -> None:
    env = Dl2SlotEnv(**SMALL_DL2_JOB)
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0, options={"trace_seed": 7})
    total, done, steps = 0.0, False, 0
    while not done:
        action = rng.integers(0, len(LEVELS), 6) * info["action_mask"].reshape(6, -1)[:, 1]
        _, reward, terminated, truncated, info = env.step(action)
        total += reward
        steps += 1
        done = terminated or truncated
    assert terminated and steps == info["slot"]  # one step a slot
    assert env.driver is not None
    jct = env.driver.sim.result().column("jct_s")
    assert len(jct) == 14
    assert total == pytest.approx(-jct.sum() / (1200.0 * 6), rel=1e-9)


def test_dl2_slot_level_zero_everywhere_is_drf() -> None:
    """(1 worker, 1 PS) units round robin until nothing fits: DRF's allocation."""
    assert LEVELS[0] == (1, 1)
    adapter = PolicyAdapter(
        lambda o, m: np.zeros(40, np.int64), "dlsched/DL2Slot-v0", name="level-0", per="job"
    )
    workload = make_workload("dl2", seed=101, servers=5, num_jobs=40)
    levels = dlsched.simulate(workload, adapter, seed=101).summary()["avg_jct_s"]
    drf = dlsched.simulate(workload, "drf", seed=101).summary()["avg_jct_s"]
    assert levels == pytest.approx(drf, rel=1e-12)


def test_dl2_slot_levels_shape_the_units() -> None:
    """A PS-heavy level gives parameter-server jobs about two PS a worker."""
    from dlsched.core import Arch
    from dlsched.papers.dl2.slot_env import Dl2LevelBuilder

    env = Dl2SlotEnv(**SMALL_DL2_JOB)
    env.reset(seed=0, options={"trace_seed": 3})
    builder = Dl2LevelBuilder(env.view(), env.shape)
    builder.apply(np.full(6, LEVELS.index((1, 2))) * builder.action_mask().reshape(6, -1)[:, 1])
    decision = builder.decision()
    specs = {run.job_id: run.spec for run in builder.slot.jobs}
    ps_jobs = [j for j in decision if specs[j].arch is Arch.PS]
    assert ps_jobs
    for job in ps_jobs:
        target = decision.targets[job]
        assert target.num_ps >= target.num_workers


def test_dl2_slot_per_type_gives_every_job_of_a_type_its_level() -> None:
    from dlsched.papers.dl2.slot_env import row_levels

    env = Dl2SlotEnv(per="type", **SMALL_DL2)
    assert env.action_space.nvec.tolist() == [len(LEVELS)] * env.shape.L  # type: ignore[attr-defined]
    _, info = env.reset(seed=0, options={"trace_seed": 3})
    assert info["action_mask"].shape == (env.shape.L * len(LEVELS),)
    assert env.slot is not None
    levels = np.arange(env.shape.L) % len(LEVELS)
    got = row_levels(env.slot, levels, "type")
    for run, level in zip(env.slot.rows, got, strict=True):
        assert level == levels[env.shape.job_types.index(run.spec.model)]
    adapter = PolicyAdapter(lambda o, m: np.zeros(8, np.int64), "dlsched/DL2Slot-v0", per="type")
    workload = make_workload("dl2", seed=101, servers=5, num_jobs=40)
    drf = dlsched.simulate(workload, "drf", seed=101).summary()["avg_jct_s"]
    assert dlsched.simulate(workload, adapter, seed=101).summary()["avg_jct_s"] == pytest.approx(
        drf, rel=1e-12
    )


def test_dl2_slot_adapter_refuses_a_masked_level() -> None:
    adapter = PolicyAdapter(
        lambda o, m: np.full(6, len(LEVELS) - 1), "dlsched/DL2Slot-v0", **SMALL_DL2_JOB
    )
    with pytest.raises(ValueError, match="masked entries at dimensions"):
        dlsched.simulate(make_workload("dl2", seed=3, servers=3, num_jobs=14), adapter, seed=3)


# -- DeepRM options --------------------------------------------------------------------------


def test_deeprm_library_options_pass_the_checkers() -> None:
    env = gym.make("dlsched/DeepRM-v0", load=1.3, **LIBRARY_DEEPRM)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space.shape == (compact_dim(env.unwrapped.shape),)  # type: ignore[attr-defined]


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31 - 2), load=st.sampled_from([0.7, 1.3, 1.9]))
def test_wait_reward_sums_to_minus_total_waiting_slowdown(seed: int, load: float) -> None:
    """Σ rewards = −Σ_j (S_j − 1): the run time of each job is a constant dropped from the sum,
    so starting a job sooner never moves a cost earlier (where a discount weighs it more)."""
    env = DeepRMEnv(load=load, reward="wait", horizon_steps=20)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        _, reward, terminated, truncated, _ = env.step(
            int(rng.choice(np.flatnonzero(env.action_masks())))
        )
        total += float(reward)
        done = terminated or truncated
    assert terminated
    assert env.batch is not None
    slowdowns = env.batch.slowdowns(0)
    assert total == pytest.approx(-(slowdowns - 1.0).sum(), rel=1e-9, abs=1e-9)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31 - 2))
def test_work_conserving_shortest_window_invariants(seed: int) -> None:
    """At every step: ∅ is legal iff no slot job fits now, only jobs that fit now are offered,
    and the slots hold the shortest waiting jobs, shortest first."""
    env = DeepRMEnv(load=1.5, horizon_steps=20, work_conserving=True, window="shortest")
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    done = False
    while not done:
        state = env.batch
        assert state is not None
        mask = env.action_masks()
        fits, first = state.fits()
        now = fits[0] & (first[0] == 0)
        assert mask[0] == (not now.any()) and (mask[1:] == now).all()
        lengths = state.slot_len[0][state.slot[0] >= 0]
        assert (np.diff(lengths) >= 0).all()
        width = state.queue.shape[1]
        head, count = int(state.queue_head[0]), int(state.backlog[0])
        queued = [int(state.queue[0, (head + k) % width]) for k in range(count)]
        if queued:
            assert lengths.max() <= state.length[0, queued].min()
        _, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        done = terminated or truncated


def test_compact_observation_is_in_the_unit_box_and_tracks_the_slots() -> None:
    env = DeepRMEnv(load=1.3, observation="compact", window="shortest")
    obs, _ = env.reset(seed=4)
    shape = env.shape
    assert obs.shape == (compact_dim(shape),) and obs.min() >= 0.0 and obs.max() <= 1.0
    assert env.batch is not None
    per_slot = obs[shape.horizon * shape.num_res : -1].reshape(shape.slots, shape.num_res + 4)
    present = env.batch.slot[0] >= 0
    assert (per_slot[:, 0] == present).all()
    assert per_slot[present, 1] == pytest.approx(env.batch.slot_len[0][present] / shape.horizon)


@pytest.mark.parametrize("observation", ["image", "compact"])
def test_deeprm_options_give_the_same_run_in_the_env_and_in_simulate(observation: str) -> None:
    """The first offered slot job, every time: the environment and the scheduler that the
    adapter builds from the same options agree on the mean slowdown of each jobset."""
    from dlsched.papers.deeprm.state import Jobset
    from dlsched.workloads.deeprm import make_deeprm

    options = {**LIBRARY_DEEPRM, "observation": observation}

    def first(obs: npt.NDArray[np.float32], mask: Mask) -> int:
        return int(np.flatnonzero(mask[1:])[0]) + 1 if mask[1:].any() else 0

    env = DeepRMEnv(load=1.3, **options)
    adapter = PolicyAdapter(first, "dlsched/DeepRM-v0", load=1.3, **options)
    for seed in (900000, 900001):
        workload = make_deeprm(seed, load=1.3, horizon_steps=50)
        env.reset(options={"jobset": Jobset.from_workload(workload, env.shape)})
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(
                first(np.zeros(1, np.float32), env.action_masks())
            )
            done = terminated or truncated
        assert env.batch is not None
        result = dlsched.simulate(workload, adapter, seed, interval_s=STEP_S)
        assert result.summary()["avg_slowdown"] == pytest.approx(env.batch.slowdowns(0).mean())


def test_bad_deeprm_options_are_one_clear_error() -> None:
    with pytest.raises(ValueError, match="window must be 'arrival' or 'shortest'"):
        DeepRMEnv(window="longest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="observation must be 'image' or 'compact'"):
        DeepRMEnv(observation="pixels")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="per must be 'job' or 'type'"):
        Dl2SlotEnv(per="server")  # type: ignore[arg-type]


def test_the_adapter_carries_the_environments_workload_settings(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Settings are given once, at the adapter (issue 34): the evaluation reads them back and a
    run with others says it is outside the setting."""
    import logging

    from dlsched import runner

    monkeypatch.setattr(runner, "_WARNED_SETTING", set())
    first = PolicyAdapter(
        lambda o, m: int(np.flatnonzero(m)[-1]), "dlsched/DeepRM-v0", load=1.3, horizon_steps=20
    )
    want = {"load": 1.3, "horizon_steps": 20, "interval_s": 1.0}
    assert (first.workload, first.workload_options) == ("deeprm", want)
    with caplog.at_level(logging.WARNING, logger="dlsched.runner"):
        dlsched.simulate(first.workload, first, seed=5, **first.workload_options)
        assert not caplog.records
        dlsched.simulate("deeprm", first, seed=5, load=0.5, horizon_steps=20)
    assert "this run has load 0.5 (trained 1.3)" in caplog.records[-1].getMessage()
    slot = PolicyAdapter(lambda o, m: np.zeros(8, np.int64), "dlsched/DL2Slot-v0", **SMALL_DL2)
    assert slot.workload == "dl2" and slot.workload_options == {"servers": 3, "num_jobs": 14}
