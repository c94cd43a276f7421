"""Steps a second of the registered environments under uniformly random legal actions.

    PYTHONPATH=src nice -n 15 .venv/bin/python benchmarks/env_steps.py --seconds 20

One process, one environment at a time, episodes restarted as they end; prints steps per
wall-second and per CPU-second (the environment alone, no learner).
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="wall time per environment")
    args = parser.parse_args()
    for env_id, options in CASES:
        steps, per_wall, per_cpu = steps_per_second(env_id, options, args.seconds)
        print(f"{env_id:<20} {steps:>8,} steps  {per_wall:>8,.0f} /wall-s  {per_cpu:>8,.0f} /CPU-s")


if __name__ == "__main__":
    main()
