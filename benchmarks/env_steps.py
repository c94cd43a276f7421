"""Steps a second of the registered environments under uniformly random legal actions.

    PYTHONPATH=src nice -n 15 .venv/bin/python benchmarks/env_steps.py --seconds 20

One process, one environment at a time, episodes restarted as they end; prints steps per
wall-second and per CPU-second (the environment alone, no learner). DL2 rows (issue 29): time
slots per CPU-second of the scalar `Dl2Env` (before) and of `Dl2BatchedEnv` (after), under
random legal actions, then with the paper's MLP sampling every action as a trainer collects
experience (today's `Rollout` before, `paper.Collector` after).
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


def dl2_slots_per_second(batch: int, seconds: float) -> tuple[int, int, float]:
    """DL2 time slots simulated under uniformly random legal actions: (slots, actions, CPU s).

    ``batch`` 0 runs the scalar `Dl2Env` (before issue 29); otherwise `Dl2BatchedEnv` with
    ``batch`` episodes at once (after). Default workload (13 servers, 200 jobs)."""
    from dlsched.papers.dl2.batched_env import Dl2BatchedEnv
    from dlsched.papers.dl2.env import Dl2Env

    rng = np.random.default_rng(0)
    slots = actions = 0
    if batch == 0:
        env = Dl2Env()
        _, info = env.reset(seed=1)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        while time.perf_counter() - wall0 < seconds:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            _, _, terminated, truncated, info = env.step(action)
            actions += 1
            slots += bool(info["slot_end"])
            if terminated or truncated:
                _, info = env.reset()
        return slots, actions, time.process_time() - cpu0
    benv = Dl2BatchedEnv(batch, seed=1)
    _, mask = benv.reset()
    benv.step(np.full(batch, benv.shape.void))  # compiled before the clock starts
    cpu0, wall0 = time.process_time(), time.perf_counter()
    while time.perf_counter() - wall0 < seconds:
        keys = np.where(mask, rng.random(mask.shape), -1.0)
        _, mask, _, terminated, truncated, slot_end = benv.step(keys.argmax(axis=1))
        actions += batch
        slots += int(slot_end.sum())
        if (terminated | truncated).any():
            benv.reset_done()
    return slots, actions, time.process_time() - cpu0


def dl2_rollout_slots_per_second(batch: int, seconds: float) -> tuple[int, float]:
    """DL2 slots a CPU-second with the paper's MLP (2x256) sampling every action, as a trainer
    collects experience: (slots, CPU s). ``batch`` 0: today's `algorithm.Rollout` (scalar
    `Dl2Env`, one forward pass an action); else `paper.Collector` over `Dl2BatchedEnv`."""
    import torch

    from dlsched.papers.dl2.algorithm import Learner, Rollout
    from dlsched.papers.dl2.batched_env import Dl2BatchedEnv
    from dlsched.papers.dl2.env import Dl2Env
    from dlsched.papers.dl2.paper import Collector, SlotReplay, paper_config

    torch.set_num_threads(1)
    cfg = paper_config()
    learner = Learner.create(cfg)
    slots = 0
    if batch == 0:
        rollout = Rollout(Dl2Env(), learner, seed=1)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        while time.perf_counter() - wall0 < seconds:
            rollout.run(1)
            slots += 1
        return slots, time.process_time() - cpu0
    env = Dl2BatchedEnv(batch, seed=1)
    shape = env.shape
    collector = Collector(env, learner, SlotReplay(8192, shape.obs_dim, shape.num_actions), 1)
    collector.step()  # compiled before the clock starts
    cpu0, wall0 = time.process_time(), time.perf_counter()
    while time.perf_counter() - wall0 < seconds:
        slots += collector.step()
    return slots, time.process_time() - cpu0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="wall time per environment")
    parser.add_argument(
        "--dl2-batch", type=int, default=64, help="episodes of the batched DL2 environment"
    )
    args = parser.parse_args()
    for label, batch in (
        ("DL2 scalar Dl2Env", 0),
        (f"DL2 batched B={args.dl2_batch}", args.dl2_batch),
    ):
        slots, actions, cpu = dl2_slots_per_second(batch, args.seconds)
        print(
            f"{label:<20} {slots:>8,} slots  {slots / cpu:>8,.1f} slots/CPU-s  "
            f"{actions / cpu:>9,.0f} actions/CPU-s"
        )
    for label, batch in (
        ("DL2 Rollout (MLP)", 0),
        (f"DL2 Collector B={args.dl2_batch}", args.dl2_batch),
    ):
        slots, cpu = dl2_rollout_slots_per_second(batch, args.seconds)
        print(f"{label:<20} {slots:>8,} slots  {slots / cpu:>8,.1f} slots/CPU-s  (policy acting)")
    for env_id, options in CASES:
        steps, per_wall, per_cpu = steps_per_second(env_id, options, args.seconds)
        print(f"{env_id:<20} {steps:>8,} steps  {per_wall:>8,.0f} /wall-s  {per_cpu:>8,.0f} /CPU-s")


if __name__ == "__main__":
    main()
