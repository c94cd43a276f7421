"""Every registered environment refuses an invalid action with a ValueError naming it and the
valid range, as Gymnasium's spaces do, instead of coercing it (issue 35: ``int(1.7)`` is 1,
``True`` is 1, DL2Slot flattened (1, J)-shaped levels, ``inf`` raised OverflowError, DeepRM
stepped after its episode ended)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import dlsched  # noqa: F401 - registers the ids
from dlsched.papers.dl2.state import Dl2Shape
from dlsched.rl.registration import env_entries

SMALL: dict[str, dict[str, Any]] = {
    "dlsched/DL2-v0": {"shape": Dl2Shape(J=4), "servers": 3, "num_jobs": 12},
    "dlsched/DL2Slot-v0": {"shape": Dl2Shape(J=4), "servers": 3, "num_jobs": 12, "per": "job"},
    "dlsched/DeepRM-v0": {"load": 1.3, "horizon_steps": 20},
    "dlsched/SCED2-v0": {"num_jobs": 30, "load": 1.5},
}

DISCRETE_BAD: list[Any] = [
    1.7,
    1.0,
    np.float32(0.5),
    np.float64(1.0),
    True,
    np.bool_(False),
    "1",
    b"1",
    float("inf"),
    float("nan"),
    -1,
    10**6,
    np.int64(-1),
    np.array([0]),
    np.array([[1]]),
    np.array(1.0),
    None,
    [0],
    (0,),
]
"""Not an action of ``Discrete(n)``: floats (integral ones too), bools, text, infinities,
out of range, arrays of another shape, None, sequences."""


def test_every_registered_id_is_covered() -> None:
    ids = {entry.id for entry in env_entries()}
    assert set(SMALL) == ids, "add the new environment's small settings to SMALL"


def _make(env_id: str) -> Any:
    env = gym.make(env_id, **SMALL[env_id]).unwrapped
    env.reset(seed=3)
    return env


@pytest.mark.parametrize("env_id", sorted(k for k in SMALL if "Slot" not in k))
@pytest.mark.parametrize("action", DISCRETE_BAD, ids=repr)
def test_discrete_envs_refuse_invalid_actions(env_id: str, action: Any) -> None:
    env = _make(env_id)
    n = env.action_space.n
    with pytest.raises(ValueError, match=rf"step: action .* is not an integer in 0\.\.{n - 1}"):
        env.step(action)


@pytest.mark.parametrize("env_id", sorted(k for k in SMALL if "Slot" not in k))
def test_discrete_envs_take_ints_numpy_ints_and_0d_arrays(env_id: str) -> None:
    for action in (0, np.int64(0), np.int32(0), np.array(0, dtype=np.int16)):
        env = _make(env_id)
        env.step(action)  # the void/idle action 0 or the first slot: legal or masked to void


def _levels_bad(j: int) -> list[Any]:
    return [
        np.zeros((1, j), dtype=np.int64),  # the (1, J) shape that used to be flattened
        np.zeros(j + 1, dtype=np.int64),
        np.zeros(j - 1, dtype=np.int64),
        np.zeros(j, dtype=np.float32),
        np.full(j, 0.5),
        np.full(j, np.inf),
        np.zeros(j, dtype=bool),
        np.full(j, 99, dtype=np.int64),
        np.full(j, -1, dtype=np.int64),
        ["0"] * j,
        [0.0] * j,
        0,
        1.5,
        "0",
        None,
    ]


@pytest.mark.parametrize("index", range(15))
def test_slot_env_refuses_invalid_levels(index: int) -> None:
    env = _make("dlsched/DL2Slot-v0")
    action = _levels_bad(4)[index]
    with pytest.raises(ValueError, match=r"is not an integer array of shape \(4,\) with values"):
        env.step(action)


def test_slot_env_takes_int_arrays_and_lists() -> None:
    for action in (np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int8), [0, 0, 0, 0]):
        _make("dlsched/DL2Slot-v0").step(action)


@pytest.mark.parametrize("env_id", sorted(SMALL))
def test_step_after_the_episode_ended_is_refused(env_id: str) -> None:
    env = _make(env_id)
    rng = np.random.default_rng(5)
    mask = env.action_masks()
    done, steps = False, 0
    while not done:
        if isinstance(env.action_space, gym.spaces.MultiDiscrete):
            action = np.zeros(len(env.action_space.nvec), dtype=np.int64)
        else:
            action = int(rng.choice(np.flatnonzero(mask)))
        _, _, terminated, truncated, info = env.step(action)
        mask = info["action_mask"]
        done = terminated or truncated
        steps += 1
        assert steps < 100_000
    with pytest.raises(ValueError, match=r"episode has ended .*call reset\(\)"):
        env.step(action)
    env.reset(seed=4)
    env.step(action if not np.isscalar(action) else int(np.flatnonzero(env.action_masks())[0]))
