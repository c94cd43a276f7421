"""DL2's policy (issue 4): validation JCT against the heuristics, and decision time per slot.

Run::

    nice .venv/bin/python benchmarks/dl2_policy.py                      # shipped policy
    nice .venv/bin/python benchmarks/dl2_policy.py --policy runs/x      # another checkpoint
    nice .venv/bin/python benchmarks/dl2_policy.py --servers 500 --seeds 101-103

Prints, side by side in one run on the same traces (seeds never used for training):

* average JCT of ``drf``, ``optimus``, ``efficient-srtf`` and ``dl2`` on the ``dl2`` workload
  (13 servers by default) and DL2's ratio to each;
* the wall time of one whole DL2 decision (every inference of one time slot), p50 and p99, on
  one core (torch and the process pinned to one CPU), over the slots of a heavily loaded trace
  in which all J = 40 rows are filled.
"""

from __future__ import annotations

import os

# Pin to one core before NumPy loads OpenBLAS, so it starts one thread: started after, its idle
# threads spin on the same core and make every decision ~4x slower on a pinned process.
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import argparse
import platform
import time

import numpy as np
import torch

from dlsched.api import simulate
from dlsched.core import ClusterView, Decision
from dlsched.experiments.compare import parse_seeds
from dlsched.papers.dl2.scheduler import SHIPPED, load_dl2
from dlsched.schedulers.base import Scheduler, WrappingScheduler
from dlsched.schedulers.registry import make_scheduler

BASELINES = ("drf", "optimus", "efficient-srtf")


def compare(policy: str, seeds: list[int], servers: int | None) -> dict[str, float]:
    """Mean average JCT (s) per scheduler over ``seeds``."""
    means: dict[str, float] = {}
    for name in (*BASELINES, "dl2"):
        jcts = []
        for seed in seeds:
            scheduler = load_dl2(policy) if name == "dl2" else make_scheduler(name)
            result = simulate("dl2", scheduler, seed=seed, servers=servers)
            jcts.append(float(result.summary()["avg_jct_s"]))
        means[name] = float(np.mean(jcts))
        print(f"  {name:15s} avg JCT {means[name]:9.0f} s   per seed: {[round(j) for j in jcts]}")
    return means


class _Timed(WrappingScheduler):
    """Times the inner scheduler's decisions on views with at least ``min_jobs`` active jobs."""

    def __init__(self, inner: Scheduler, min_jobs: int) -> None:
        super().__init__(inner)
        self.min_jobs = min_jobs
        self.times_s: list[float] = []
        self.clock = time.perf_counter

    def decide(self, view: ClusterView) -> Decision:
        t0 = self.clock()
        decision = self.inner.decide(view)
        dt = self.clock() - t0
        if len(view.jobs()) >= self.min_jobs:
            self.times_s.append(dt)
        return decision


def decision_times(
    policy: str, seeds: list[int], load: float, cpu_clock: bool = False
) -> np.ndarray:
    """Seconds per whole-slot decision with all 40 rows filled (heavily loaded 13 servers).

    ``cpu_clock``: time with the thread's CPU clock instead of the wall clock (on a shared
    machine other processes' time then does not count).
    """
    times: list[float] = []
    for seed in seeds:
        timed = _Timed(load_dl2(policy), min_jobs=40)
        if cpu_clock:
            timed.clock = time.thread_time
        simulate("dl2", timed, seed=seed, load=load)
        times += timed.times_s
    return np.asarray(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default=str(SHIPPED), help="checkpoint directory")
    parser.add_argument("--seeds", default="101-110", help="validation seeds")
    parser.add_argument("--servers", type=int, default=None, help="cluster size (default 13)")
    parser.add_argument("--timing-seeds", default="101-102", help="traces for decision time")
    parser.add_argument("--timing-load", type=float, default=3.0, help="load for decision time")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument(
        "--cpu-clock", action="store_true", help="time decisions by thread CPU time, not wall"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, pinned to one; torch 1 thread")
    seeds = parse_seeds(args.seeds)
    print(f"dl2 workload, servers={args.servers or 13}, seeds {args.seeds}, policy {args.policy}")
    means = compare(args.policy, seeds, args.servers)
    for name in BASELINES:
        print(f"  dl2 / {name:15s} = {means['dl2'] / means[name]:.3f}")
    if not args.skip_timing:
        times = decision_times(
            args.policy, parse_seeds(args.timing_seeds), args.timing_load, args.cpu_clock
        )
        p50, p99 = np.percentile(times, [50, 99]) * 1e3
        print(
            f"decision time per slot, 40 jobs, 1 core: p50 {p50:.2f} ms, p99 {p99:.2f} ms "
            f"over {len(times)} slots (load {args.timing_load}, "
            f"{'thread CPU' if args.cpu_clock else 'wall'} clock)"
        )


if __name__ == "__main__":
    main()
