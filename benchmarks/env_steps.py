"""Steps a second of the registered environments under uniformly random legal actions.

    PYTHONPATH=src nice -n 15 .venv/bin/python benchmarks/env_steps.py --seconds 20

One process, one environment at a time, episodes restarted as they end; prints steps per
wall-second and per CPU-second (the environment alone, no learner). SCED² also runs batched
(`BatchedSched2Env`, ``B`` episodes of 1,000-job traces at once, NumPy; ``--sched2-envs``), the
same random legal actions, side by side with its scalar `Sched2Env` in the same run;
``--only sched2`` runs just those rows.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import gymnasium as gym
import numpy as np

import dlsched  # noqa: F401 - registers the ids

CASES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("dlsched/DL2-v0", {}),
    ("dlsched/DeepRM-v0", {"load": 1.3, "horizon_steps": 50}),
    ("dlsched/SCED2-v0", {}),
)


def steps_per_second(
    env_id: str, options: dict[str, Any], seconds: float
) -> tuple[int, float, float]:
    """(steps, steps per wall-second, steps per CPU-second) over ``seconds`` of wall time."""
    env = gym.make(env_id, **options)
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=1)
    steps = 0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    while time.perf_counter() - wall0 < seconds:
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        _, _, terminated, truncated, info = env.step(action)
        steps += 1
        if terminated or truncated:
            _, info = env.reset()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return steps, steps / wall, steps / cpu


def sched2_batched_steps(
    num_envs: int, seconds: float, backend: str = "numpy"
) -> tuple[int, float, float, int]:
    """(steps, per wall-second, per CPU-second, episodes finished) of `BatchedSched2Env`
    with ``num_envs`` episodes of 1,000-job ``sched2`` traces (load 1.8), random legal actions;
    finished episodes restart on new traces (their reset time counts)."""
    from dlsched.papers.sched2.batched_env import BatchedSched2Env

    env = BatchedSched2Env(num_envs, backend=backend, num_jobs=1000, load=1.8)
    rng = np.random.default_rng(0)
    _, masks = env.reset(list(range(1, num_envs + 1)))
    steps = episodes = 0
    next_seed = num_envs + 1
    cpu0, wall0 = time.process_time(), time.perf_counter()
    while time.perf_counter() - wall0 < seconds:
        legal = env.ops.numpy(masks)
        actions = (rng.random(legal.shape) * legal).argmax(axis=1)
        _, _, _, masks, info = env.step(actions)
        steps += num_envs
        ended = [i for i, _ in info["episodes"]]
        if ended:
            episodes += len(ended)
            _, masks = env.reset_some(ended, list(range(next_seed, next_seed + len(ended))))
            next_seed += len(ended)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return steps, steps / wall, steps / cpu, episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="wall time per environment")
    parser.add_argument("--only", choices=("all", "sched2"), default="all")
    parser.add_argument(
        "--sched2-envs", default="16,64,128", help="batch sizes of the batched SCED² rows"
    )
    args = parser.parse_args()
    for env_id, options in CASES:
        if args.only == "sched2" and "SCED2" not in env_id:
            continue
        steps, per_wall, per_cpu = steps_per_second(env_id, options, args.seconds)
        print(f"{env_id:<20} {steps:>8,} steps  {per_wall:>8,.0f} /wall-s  {per_cpu:>8,.0f} /CPU-s")
    for b in (int(x) for x in args.sched2_envs.split(",")):
        steps, per_wall, per_cpu, episodes = sched2_batched_steps(b, args.seconds)
        name = f"SCED2 batched B={b}"
        print(
            f"{name:<20} {steps:>8,} steps  {per_wall:>8,.0f} /wall-s  {per_cpu:>8,.0f} /CPU-s"
            f"  ({episodes} episodes ended)"
        )


if __name__ == "__main__":
    main()
