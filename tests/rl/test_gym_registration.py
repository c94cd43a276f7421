"""The registered Gymnasium ids: conformance and rewards whose plain sum is the metric."""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dlsched  # noqa: F401 - registers the ids
from dlsched.papers.dl2.state import Dl2Shape

SMALL: dict[str, dict[str, Any]] = {
    "dlsched/DL2-v0": {"shape": Dl2Shape(J=4), "servers": 3, "num_jobs": 12},
    "dlsched/DeepRM-v0": {"load": 1.3, "horizon_steps": 20},
    "dlsched/SCED2-v0": {"num_jobs": 30, "load": 1.5},
}


def _episode(env: gym.Env[Any, Any], seed: int) -> tuple[list[float], dict[str, Any]]:
    """One episode of uniformly random legal actions; the rewards and the last info."""
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    rewards: list[float] = []
    done = False
    while not done:
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        _, reward, terminated, truncated, info = env.step(action)
        rewards.append(float(reward))
        done = terminated or truncated
    assert terminated, "the episode was truncated"
    return rewards, info


@pytest.mark.parametrize("env_id", sorted(SMALL))
def test_registered_id_passes_gymnasium_check_env(env_id: str) -> None:
    env = gym.make(env_id, **SMALL[env_id])
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert obs.ndim == 1 and env.observation_space.contains(obs)


@pytest.mark.skipif(
    importlib.util.find_spec("stable_baselines3") is None, reason="stable-baselines3 missing"
)
@pytest.mark.parametrize("env_id", sorted(SMALL))
def test_registered_id_passes_sb3_check_env(env_id: str) -> None:
    """SB3's checker accepts the ids without its "unconventional shape" warning."""
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb3_check_env(gym.make(env_id, **SMALL[env_id]).unwrapped, warn=True)
    assert not [str(w.message) for w in caught if "unconventional" in str(w.message)]


@pytest.mark.parametrize("env_id", ["dlsched/DL2-v0", "dlsched/SCED2-v0"])
def test_jct_reward_sums_to_minus_total_jct_in_hours(env_id: str) -> None:
    env = gym.make(env_id, **SMALL[env_id])
    rewards, _ = _episode(env, seed=4)
    jct = env.unwrapped.driver.result().column("jct_s")  # type: ignore[attr-defined]
    assert len(jct) == len(env.unwrapped.workload.jobs)  # type: ignore[attr-defined]
    assert sum(rewards) == pytest.approx(-jct.sum() / 3600.0, rel=1e-9)
    assert sum(1 for r in rewards if r != 0.0) > 1  # paid as time advances, not at the end


def test_deeprm_slowdown_reward_sums_to_minus_total_slowdown() -> None:
    env = gym.make("dlsched/DeepRM-v0", **SMALL["dlsched/DeepRM-v0"])
    rewards, info = _episode(env, seed=2)
    assert info["dropped"] == 0
    slowdowns = env.unwrapped.batch.slowdowns(0)  # type: ignore[attr-defined]
    assert sum(rewards) == pytest.approx(-slowdowns.sum(), rel=1e-9)


def test_paper_reward_stays_selectable_and_differs() -> None:
    env = gym.make("dlsched/DL2-v0", reward="paper", **SMALL["dlsched/DL2-v0"])
    rewards, _ = _episode(env, seed=4)
    assert sum(rewards) == pytest.approx(12.0)  # every job yields 1 in total (DL2 §4.1)


def test_bad_reward_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="reward must be 'paper' or 'jct', got 'fast'"):
        gym.make("dlsched/DL2-v0", reward="fast")


def test_stalling_never_pays_under_the_jct_reward() -> None:
    """A policy that only adds parameter servers never trains a job: the run stalls, the
    episode terminates, and every job is charged up to the slot limit."""
    env = gym.make("dlsched/DL2-v0", max_slots=1500, **SMALL["dlsched/DL2-v0"])
    _, info = env.reset(seed=0)
    rewards = []
    done = False
    while not done:
        mask = info["action_mask"]
        legal = np.flatnonzero(mask)
        add_ps = [a for a in legal if a % 3 == 1 and a < 12]
        action = add_ps[0] if add_ps else (12 if mask[12] else legal[0])
        _, reward, terminated, truncated, info = env.step(action)
        rewards.append(float(reward))
        done = terminated or truncated
    dl2 = env.unwrapped
    assert dl2.stalled and terminated and not truncated  # type: ignore[attr-defined]
    assert dl2.slots < 1500  # type: ignore[attr-defined]
    end_s = 1500 * dl2.driver.sim.now_s / dl2.slots  # type: ignore[attr-defined]
    submits = [job.submit_time_s for job in dl2.workload.jobs]  # type: ignore[attr-defined]
    assert sum(rewards) == pytest.approx(-sum(end_s - s for s in submits) / 3600.0, rel=1e-9)
