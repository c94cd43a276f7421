"""SCED² shipped policy against the heuristics: the issue-17 targets and decision time.

Runs the shipped ``sched2`` policy (SCED²-L) and the non-oracle heuristics SIF, DSIF, SPF, LRF,
FIFO and Tiresias (plus SAF, an oracle, shown for reference and left out of the targets) on the
same traces, and prints a table of means and the verdicts:

* ``sched2`` workload (68 % one-GPU jobs, 15 × 8 GPUs, 1,000 jobs) at each ``--loads`` value on
  the held-out test seeds `dlsched.papers.sched2.train.TEST_SEEDS` (never trained on or used to
  select a policy): at load 1.8 average JCT and makespan must each be ≤ 0.95 × the best
  heuristic's and fragmentation the lowest; at other loads each must beat every heuristic;
* ``--workload philly:VC`` (with ``--servers``): each metric must beat every heuristic; the
  seeds only change the models the trace loader assigns.

Decision time: every ``decide`` call of the policy (one scheduling event) is timed with torch on
1 thread and the process pinned to one CPU core, as wall and as thread CPU time.

Usage::

    nice -n 10 .venv/bin/python benchmarks/sched2_policy.py --traces 10 --loads 1.8,1.0
    nice -n 10 .venv/bin/python benchmarks/sched2_policy.py --workload philly:7f04ca \\
        --servers 15 --seeds 1,2,3
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dlsched.api import simulate
from dlsched.core import ClusterView, Decision
from dlsched.papers.sched2.policy import DQN_POLICY_DIR
from dlsched.papers.sched2.train import TEST_SEEDS
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.registry import make_scheduler
from dlsched.workloads.registry import make_workload

HEURISTICS = ("sif", "dsif", "spf", "lrf", "fifo", "tiresias")
ORACLES = ("saf",)
METRICS = ("avg_jct_s", "makespan_s", "avg_fragmentation", "avg_effectiveness", "avg_wait_s")
TARGET_LOAD = 1.8
MARGIN = 0.95


class Timed(BaseScheduler):
    """Wraps a scheduler and records the wall and CPU time of every decide call (seconds)."""

    def __init__(self, inner: Scheduler) -> None:
        self.inner = inner
        self.name = inner.name
        self.times: list[float] = []
        self.cpu_times: list[float] = []

    def reset(self) -> None:
        reset = getattr(self.inner, "reset", None)
        if callable(reset):
            reset()

    def decide(self, view: ClusterView) -> Decision:
        t0, c0 = time.perf_counter(), time.thread_time()
        decision = self.inner.decide(view)
        self.times.append(time.perf_counter() - t0)
        self.cpu_times.append(time.thread_time() - c0)
        return decision


def run_setting(
    label: str,
    workloads: list[Any],
    policy: str,
    timed: Timed,
    with_dqn: bool,
) -> dict[str, dict[str, float]]:
    """Means of every scheduler's summary over ``workloads``; prints the table."""
    rows: dict[str, list[dict[str, float]]] = {}
    names = [*HEURISTICS, *ORACLES]
    for workload in workloads:
        timed.reset()
        s = simulate(workload, timed).summary()
        assert s["finished"] == s["jobs"], f"{policy} left jobs unfinished ({label})"
        rows.setdefault("sched2", []).append(s)
        if with_dqn:
            rows.setdefault("sched2-dqn", []).append(
                simulate(workload, f"sched2:{DQN_POLICY_DIR}").summary()
            )
        for name in names:
            rows.setdefault(name, []).append(simulate(workload, name).summary())
    means = {n: {m: float(np.mean([r[m] for r in rs])) for m in METRICS} for n, rs in rows.items()}
    print(f"\n{label}")
    print(f"{'scheduler':12s}" + "".join(f"{m:>20s}" for m in METRICS))
    for name, m in means.items():
        tag = " (oracle)" if name in ORACLES else ""
        print(f"{name + tag:12s}" + "".join(f"{m[k]:20.3f}" for k in METRICS))
    return means


def verdicts(means: dict[str, dict[str, float]], margin: float | None) -> list[str]:
    """Target lines: sched2 against the best non-oracle heuristic per metric."""
    ours = means["sched2"]
    lines = []
    for metric in ("avg_jct_s", "makespan_s", "avg_fragmentation"):
        best_name = min(HEURISTICS, key=lambda n: means[n][metric])
        best = means[best_name][metric]
        ratio = ours[metric] / best
        want = margin if margin is not None and metric != "avg_fragmentation" else None
        met = ratio <= want if want is not None else ours[metric] < best
        rule = f"<= {want:.2f}x" if want is not None else "< every heuristic"
        lines.append(
            f"{metric}: sched2 {ours[metric]:.3f} vs best heuristic {best_name} {best:.3f} "
            f"(sched2/best {ratio:.3f}; target {rule}) -> {'MET' if met else 'NOT MET'}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--traces", type=int, default=10, help="held-out sched2 test traces")
    parser.add_argument("--loads", default="1.8,1.0", help="sched2 loads, comma-separated")
    parser.add_argument("--mix", type=float, default=0.68, help="share of 1-GPU jobs")
    parser.add_argument("--workload", default="sched2", help="sched2 or philly:VC")
    parser.add_argument("--servers", type=int, default=None, help="servers (philly:VC)")
    parser.add_argument("--seeds", default="1,2,3", help="seeds of a philly:VC workload")
    parser.add_argument("--policy", default="sched2", help="scheduler spec (sched2:PATH)")
    parser.add_argument("--with-dqn", action="store_true", help="also run the issue-6 DQN")
    parser.add_argument("--json", type=Path, default=None, help="write the means here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    timed = Timed(make_scheduler(args.policy))
    results: dict[str, Any] = {}
    if args.workload == "sched2":
        seeds = TEST_SEEDS[: args.traces]
        for load in (float(x) for x in args.loads.split(",")):
            label = (
                f"sched2 workload, {args.mix:.0%} one-GPU jobs, load {load}, "
                f"test seeds {seeds[0]}-{seeds[-1]} ({len(seeds)} traces)"
            )
            workloads = [
                make_workload("sched2", seed=s, load=load, one_gpu_frac=args.mix) for s in seeds
            ]
            means = run_setting(label, workloads, args.policy, timed, args.with_dqn)
            for line in verdicts(means, MARGIN if load == TARGET_LOAD else None):
                print(line)
            results[label] = means
    else:
        seeds = [int(s) for s in args.seeds.split(",")]
        label = f"{args.workload}, servers {args.servers}, seeds {seeds}"
        workloads = [make_workload(args.workload, seed=s, servers=args.servers) for s in seeds]
        means = run_setting(label, workloads, args.policy, timed, args.with_dqn)
        for line in verdicts(means, None):
            print(line)
        results[label] = means
    for name, values in (("wall", timed.times), ("CPU", timed.cpu_times)):
        ms = np.asarray(values) * 1e3
        p50, p99 = np.percentile(ms, [50, 99])
        print(
            f"decision time per scheduling event ({name}): {ms.size} events, p50 {p50:.3f} ms, "
            f"p99 {p99:.3f} ms, max {ms.max():.3f} ms (1 thread, 1 core)"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
