"""Steps a second of the registered environments under uniformly random legal actions.

    PYTHONPATH=src nice -n 15 .venv/bin/python benchmarks/env_steps.py --seconds 20

One process, one environment at a time, episodes restarted as they end; prints steps per
wall-second and per CPU-second (the environment alone, no learner). SCED² also runs batched
(`BatchedSched2Env`, ``B`` episodes of 1,000-job traces at once, NumPy; ``--sched2-envs``), the
same random legal actions, side by side with its scalar `Sched2Env` in the same run;
``--only sched2`` runs just those rows. DL2 rows (issue 29; ``--only dl2``): time slots per
CPU-second of the scalar `Dl2Env` (before) and of `Dl2BatchedEnv` (after), under random legal
actions, then with the paper's MLP sampling every action as a trainer collects experience
(the scalar `Rollout` before issue 29; `paper.Collector` after, beside the collector as it was
before 2026-11-27, ``benchmarks/dl2_collector_before.py``; ``--dl2-rounds`` interleaves
them and prints each one's ratio to the scalar). DeepRM rows (issue 29; ``--only deeprm``):
the scalar ``DeepRM-v0`` (before) and `BatchedDeepRMEnv` (after, ``--deeprm-batch`` episodes a
call) with image and with index observations, on NumPy and, when a GPU is visible, on CUDA.
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


def dl2_rollout_slots_per_second(
    batch: int, seconds: float, collector: str = "now"
) -> tuple[int, float]:
    """DL2 slots a CPU-second with the paper's MLP (2x256) sampling every action, as a trainer
    collects experience: (slots, CPU s). ``batch`` 0: the scalar `algorithm.Rollout` (scalar
    `Dl2Env`, one forward pass an action: before issue 29); else over `Dl2BatchedEnv`,
    ``collector`` ``"now"``: `paper.Collector`; ``"stacking"``: the collector as it was before
    2026-11-27 (`dl2_collector_before.StackingCollector`: `torch.multinomial`, rows staged as
    tuples and stacked at each slot's end)."""
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
    replay = SlotReplay(8192, shape.obs_dim, shape.num_actions)
    if collector == "stacking":
        from dl2_collector_before import StackingCollector

        run: Any = StackingCollector(env, learner, replay, 1)
    else:
        run = Collector(env, learner, replay, 1)
    run.step()  # compiled before the clock starts
    cpu0, wall0 = time.process_time(), time.perf_counter()
    while time.perf_counter() - wall0 < seconds:
        slots += run.step()
    return slots, time.process_time() - cpu0


def dl2_rows(envs: int, seconds: float, rounds: int = 1) -> None:
    """Print the DL2 rows, before and after, side by side; the collectors' rows ``rounds``
    times, interleaved (scalar, before, now), then each one's totals and its ratio to the
    scalar `Rollout`."""
    for label, batch in (
        ("DL2 scalar Dl2Env", 0),
        (f"DL2 batched B={envs}", envs),
    ):
        slots, actions, cpu = dl2_slots_per_second(batch, seconds)
        print(
            f"{label:<28} {slots:>8,} slots  {slots / cpu:>8,.1f} slots/CPU-s  "
            f"{actions / cpu:>9,.0f} actions/CPU-s"
        )
    cases = (
        ("DL2 Rollout (MLP)", 0, "now"),
        (f"DL2 Collector before B={envs}", envs, "stacking"),
        (f"DL2 Collector B={envs}", envs, "now"),
    )
    totals = {label: [0, 0.0] for label, _, _ in cases}
    for _ in range(rounds):
        for label, batch, collector in cases:
            slots, cpu = dl2_rollout_slots_per_second(batch, seconds, collector)
            totals[label][0] += slots
            totals[label][1] += cpu
            print(f"{label:<28} {slots:>8,} slots  {slots / cpu:>8,.1f} slots/CPU-s  (policy)")
    base_slots, base_cpu = totals[cases[0][0]]
    for label, (slots, cpu) in totals.items():
        rate = slots / cpu
        print(
            f"total {label:<22} {int(slots):>8,} slots {cpu:>7.1f} CPU-s {rate:>8,.1f} slots/CPU-s"
            f"  {rate / (base_slots / base_cpu):5.2f}x the scalar Rollout"
        )


def deeprm_batched_steps(
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


def deeprm_rows(batch_size: int, seconds: float) -> None:
    """DeepRM before/after (issue 29): the scalar ``DeepRM-v0`` and `BatchedDeepRMEnv` with
    ``batch_size`` episodes a call, image observations (as ``DeepRM-v0`` gives) and the index
    observations the trainer reads, on NumPy and, when a GPU is visible, on CUDA."""
    import torch

    steps, per_wall, per_cpu = steps_per_second(
        "dlsched/DeepRM-v0", {"load": 1.3, "horizon_steps": 50}, seconds
    )
    _row("DeepRM scalar DeepRM-v0", steps, per_wall, per_cpu)
    for device in ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]:
        for observation in ("image", "index"):
            steps, per_wall, per_cpu = deeprm_batched_steps(
                batch_size, device, observation, seconds
            )
            _row(f"DeepRM batched {device} B={batch_size} {observation}", steps, per_wall, per_cpu)


def _row(label: str, steps: int, per_wall: float, per_cpu: float) -> None:
    print(f"{label:<36} {steps:>10,} steps {per_wall:>10,.0f} /wall-s {per_cpu:>10,.0f} /CPU-s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="wall time per environment")
    parser.add_argument("--only", choices=("all", "sched2", "dl2", "deeprm"), default="all")
    parser.add_argument(
        "--deeprm-batch", type=int, default=2000, help="episodes of the batched DeepRM rows"
    )
    parser.add_argument(
        "--dl2-batch", type=int, default=64, help="episodes of the batched DL2 environment"
    )
    parser.add_argument(
        "--dl2-rounds", type=int, default=1, help="interleaved rounds of the DL2 collector rows"
    )
    parser.add_argument(
        "--sched2-envs", default="16,64,128", help="batch sizes of the batched SCED² rows"
    )
    args = parser.parse_args()
    if args.only in ("all", "deeprm"):
        deeprm_rows(args.deeprm_batch, args.seconds)
    if args.only == "deeprm":
        return
    if args.only in ("all", "dl2"):
        dl2_rows(args.dl2_batch, args.seconds, args.dl2_rounds)
    if args.only == "dl2":
        return
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
