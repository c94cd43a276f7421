"""`PolicyAdapter` / `from_sb3`: library policies as schedulers, seeing what the env showed."""

from __future__ import annotations

import importlib.util
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import pytest

import dlsched
from dlsched.papers.dl2.state import Dl2Shape
from dlsched.rl.adapter import PolicyAdapter, from_sb3
from dlsched.workloads.registry import make_workload
from tests.schedulers.helpers import checked_run

Mask = npt.NDArray[np.bool_]

CASES: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    # (env id, env options, workload, workload options)
    ("dlsched/DL2-v0", {"shape": Dl2Shape(J=4)}, "dl2", {"servers": 3, "num_jobs": 12}),
    ("dlsched/DeepRM-v0", {}, "deeprm", {"load": 1.3, "horizon_steps": 20}),
    ("dlsched/SCED2-v0", {"num_jobs": 30}, "sched2", {"num_jobs": 30, "load": 1.5}),
]


def random_legal(seed: int) -> Any:
    rng = np.random.default_rng(seed)
    return lambda obs, mask: int(rng.choice(np.flatnonzero(mask)))


@pytest.mark.parametrize(("env_id", "env_options", "workload", "options"), CASES)
def test_trivial_policy_finishes_every_job_without_over_allocation(
    env_id: str, env_options: dict[str, Any], workload: str, options: dict[str, Any]
) -> None:
    seen: list[tuple[int, int]] = []

    def policy(obs: npt.NDArray[np.float32], mask: Mask) -> int:
        seen.append((obs.size, mask.size))
        return int(np.flatnonzero(mask)[-1])

    env = gym.make(env_id, **env_options)
    scheduler = PolicyAdapter(policy, env_id, **env_options)
    jobs = make_workload(workload, seed=3, **options)
    result, finished = checked_run(jobs, scheduler, seed=3)
    assert sorted(finished) == sorted(j.job_id for j in jobs.jobs)
    assert result.summary()["finished"] == len(jobs.jobs)
    assert scheduler.preemptive is env.unwrapped.preemptive  # type: ignore[attr-defined]
    assert set(seen) == {(env.observation_space.shape[0], env.action_space.n)}  # type: ignore[attr-defined]


@pytest.mark.parametrize("env_id", ["dlsched/DL2-v0", "dlsched/SCED2-v0"])
def test_adapter_in_simulate_replays_the_environment_episode(env_id: str) -> None:
    """The same deterministic policy gives the same run in the env and in `dlsched.simulate`."""
    _, env_options, workload, options = next(c for c in CASES if c[0] == env_id)
    env = gym.make(env_id, reward="jct", **{**env_options, **options})
    _, info = env.reset(seed=0, options={"trace_seed": 5})
    total = 0.0
    done = False
    while not done:
        action = int(np.flatnonzero(info["action_mask"])[-1])
        _, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        done = terminated or truncated
    adapter = PolicyAdapter(lambda o, m: int(np.flatnonzero(m)[-1]), env_id, **env_options)
    result = dlsched.simulate(make_workload(workload, seed=5, **options), adapter, seed=5)
    jct = result.column("jct_s")
    assert result.summary()["finished"] == len(jct) > 0
    assert total == pytest.approx(-jct.sum() / 3600.0, rel=1e-9)


def test_random_policy_in_compare_style_runs() -> None:
    scheduler = PolicyAdapter(random_legal(0), "dlsched/DeepRM-v0", name="random-ppo")
    result = dlsched.simulate("deeprm", scheduler, seed=2, load=1.3, horizon_steps=20)
    assert result.scheduler == "random-ppo"
    assert result.summary()["finished"] == result.summary()["jobs"]


def test_illegal_action_is_one_clear_error() -> None:
    scheduler = PolicyAdapter(lambda obs, mask: 99, "dlsched/DL2-v0")
    with pytest.raises(ValueError, match=r"policy: the policy chose action 99; legal now: \["):
        dlsched.simulate("dl2", scheduler, seed=1, servers=3, num_jobs=5)


def test_an_env_that_is_not_dlsched_is_refused() -> None:
    with pytest.raises(ValueError, match="'CartPole-v1' is not a dlsched environment"):
        PolicyAdapter(lambda obs, mask: 0, "CartPole-v1")


class _FakeMaskable:
    """SB3's predict signature with masks (sb3-contrib): records what it was given."""

    def __init__(self) -> None:
        self.calls = 0

    def predict(
        self,
        obs: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = False,
        action_masks: Mask | None = None,
    ) -> tuple[npt.NDArray[np.int64], None]:
        assert deterministic and action_masks is not None
        self.calls += 1
        return np.array(np.flatnonzero(action_masks)[0]), None


def test_from_sb3_passes_masks_to_a_maskable_model() -> None:
    model = _FakeMaskable()
    scheduler = from_sb3(model, "dlsched/SCED2-v0", num_jobs=30)
    assert scheduler.name == "_fakemaskable"
    result = dlsched.simulate("sched2", scheduler, seed=4, num_jobs=30)
    assert model.calls > 0 and result.summary()["finished"] == 30


@pytest.mark.skipif(importlib.util.find_spec("sb3_contrib") is None, reason="sb3-contrib missing")
def test_from_sb3_with_an_untrained_maskable_ppo() -> None:
    from sb3_contrib import MaskablePPO

    env = gym.make("dlsched/DeepRM-v0", load=1.3, horizon_steps=20)
    model = MaskablePPO("MlpPolicy", env, seed=0, device="cpu")
    scheduler = from_sb3(model, "dlsched/DeepRM-v0")
    result = dlsched.simulate("deeprm", scheduler, seed=6, load=1.3, horizon_steps=20)
    assert result.scheduler == "maskableppo"
    assert result.summary()["finished"] == result.summary()["jobs"]
