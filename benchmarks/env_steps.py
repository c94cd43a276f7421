"""Steps a second of the registered environments under uniformly random legal actions.

    PYTHONPATH=src nice -n 15 .venv/bin/python benchmarks/env_steps.py --seconds 20
    PYTHONPATH=src .venv/bin/python benchmarks/env_steps.py --only deeprm --batch 2000

One process, one environment at a time, episodes restarted as they end; prints steps per
wall-second and per CPU-second (the environment alone, no learner). A step is one action of one
episode. DeepRM is measured before and after issue 29 side by side: the scalar
``DeepRM-v0`` (before: one episode a call) and `BatchedDeepRMEnv` (after: ``--batch`` episodes
a call), with the image observation (as ``DeepRM-v0`` gives) and with the index observation the
trainer reads (`DeepRMBatch.index`), on NumPy and, when a GPU is visible, on CUDA.
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


def batched_steps_per_second(
    batch_size: int, device: str, observation: str, seconds: float
) -> tuple[int, float, float]:
    """Like `steps_per_second` for ``batch_size`` DeepRM episodes stepped at once (load 1.3);
    a new batch starts when every episode has ended."""
    import torch

    from dlsched.papers.deeprm.batched_env import BatchedDeepRMEnv

    env = BatchedDeepRMEnv(batch_size, 1.3, device=device)  # type: ignore[arg-type]
    seed = 1
    env.reset(seed=seed)
    gen = torch.Generator(device=env.device).manual_seed(0)
    steps = 0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    while time.perf_counter() - wall0 < seconds:
        batch = env.batch
        assert batch is not None
        mask = torch.as_tensor(batch.action_masks(), device=env.device).float()
        actions = torch.multinomial(mask, 1, generator=gen)[:, 0]
        active = int(torch.as_tensor(batch.active).sum())
        if observation == "image":
            env.step(actions if env.backend == "torch" else actions.cpu().numpy())
        else:
            batch.step(actions if env.backend == "torch" else actions.cpu().numpy())
            batch.index()
        steps += active
        if not bool(torch.as_tensor(batch.active).any()):
            seed += batch_size
            env.reset(seed=seed)
    if device == "cuda":
        torch.cuda.synchronize()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return steps, steps / wall, steps / cpu


def _row(label: str, steps: int, per_wall: float, per_cpu: float) -> None:
    print(f"{label:<36} {steps:>10,} steps {per_wall:>10,.0f} /wall-s {per_cpu:>10,.0f} /CPU-s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="wall time per environment")
    parser.add_argument("--only", default="", help="only ids containing this (e.g. deeprm)")
    parser.add_argument("--batch", type=int, default=2000, help="episodes per batched call")
    args = parser.parse_args()
    for env_id, options in CASES:
        if args.only.lower() not in env_id.lower():
            continue
        steps, per_wall, per_cpu = steps_per_second(env_id, options, args.seconds)
        print(
            f"{env_id:<36} {steps:>10,} steps {per_wall:>10,.0f} /wall-s {per_cpu:>10,.0f} /CPU-s"
        )
    if args.only.lower() not in "dlsched/deeprm-v0":
        return
    import torch

    devices = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    for device in devices:
        for observation in ("image", "index"):
            label = f"DeepRM batched {device} B={args.batch} {observation}"
            steps, per_wall, per_cpu = batched_steps_per_second(
                args.batch, device, observation, args.seconds
            )
            _row(label, steps, per_wall, per_cpu)


if __name__ == "__main__":
    main()
