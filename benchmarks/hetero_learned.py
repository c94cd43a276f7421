"""The heterogeneity-aware learned scheduler (`hetero-score`) against Gavel's heterogeneity-aware
LAS on held-out ``gavel`` workloads, paired by seed (issue 33 item 5).

For each input rate and seed, every policy runs the same ``gavel`` workload (Gavel's one-GPU
jobs, 36 GPUs of each type, 360 s rounds). The table gives each policy's mean average JCT (all
jobs, and the middle third by arrival as ``dlsched reproduce gavel`` measures) with its 95 %
interval over seeds, and the learned policy's paired difference to each other policy (mean and
95 % interval of the per-seed difference, seeds where it is lower). Policies: the shipped
``hetero-score`` (or ``--policy PATH``), ``gavel-las-het``, ``gavel-fifo-het`` and the hand-set
rule the learned weights started beside (shortest estimated remaining time first, not learned).

Usage (from the repository root)::

    PYTHONPATH=src python benchmarks/hetero_learned.py --rates 4,8 --seeds 20001-20010 \\
        --num-jobs 200 --workers 1 --out out/hetero_learned

Writes ``runs.csv`` and ``summary.md`` into ``--out`` and prints the summary.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from dlsched.experiments.compare import mean_ci95, parse_seeds
from dlsched.papers.hetero.config import TEST_SEED0
from dlsched.papers.hetero.policy import HAND_WEIGHTS, TypeScore, load_policy
from dlsched.runner import simulate
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import make_scheduler

LEARNED = "hetero-score"
HAND = "hand-rule"
OTHERS = ("gavel-las-het", "gavel-fifo-het", HAND)
FIELDS = (
    "policy",
    "jobs_per_hour",
    "seed",
    "finished",
    "avg_jct_s",
    "window_avg_jct_s",
    "makespan_s",
    "cpu_s",
)


def _scheduler(name: str, policy: str | None) -> Scheduler:
    if name == LEARNED:
        return load_policy(policy)
    if name == HAND:
        return TypeScore(HAND_WEIGHTS)
    return make_scheduler(name)


def run_one(task: tuple[str, float, int, int, str | None, bool]) -> dict[str, Any]:
    """One (policy, rate, seed) run's row."""
    name, rate, seed, num_jobs, policy, multi_gpu = task
    start = time.process_time()
    result = simulate(
        "gavel",
        _scheduler(name, policy),
        seed,
        num_jobs=num_jobs,
        jobs_per_hour=rate,
        multi_gpu=multi_gpu,
    )
    low, high = num_jobs // 3, 2 * num_jobs // 3  # job ids are arrival order
    window = [r.jct_s for r in result.records if low <= r.job_id < high]
    summary = result.summary()
    return {
        "policy": name,
        "jobs_per_hour": rate,
        "seed": seed,
        "finished": summary["finished"],
        "avg_jct_s": summary["avg_jct_s"],
        "window_avg_jct_s": sum(window) / len(window),
        "makespan_s": summary["makespan_s"],
        "cpu_s": round(time.process_time() - start, 2),
    }


def summarise(rows: Sequence[dict[str, Any]], rates: Sequence[float]) -> list[str]:
    """The markdown lines of the summary."""
    lines = [
        "| jobs/h | policy | avg JCT, all jobs (h) | middle third (h) | "
        "hetero-score − policy, all jobs (h) | seeds lower | middle third (h) |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for rate in rates:
        at = [r for r in rows if r["jobs_per_hour"] == rate]
        by = {(r["policy"], r["seed"]): r for r in at}
        seeds = sorted({r["seed"] for r in at})
        for name in (LEARNED, *OTHERS):
            cells = []
            for metric in ("avg_jct_s", "window_avg_jct_s"):
                mean, half = mean_ci95([by[name, s][metric] / 3600 for s in seeds])
                cells.append(f"{mean:.2f} ± {half:.2f}")
            paired = ["", "", ""]
            if name != LEARNED:
                diffs = []
                for metric in ("avg_jct_s", "window_avg_jct_s"):
                    d = [(by[LEARNED, s][metric] - by[name, s][metric]) / 3600 for s in seeds]
                    mean, half = mean_ci95(d)
                    diffs.append((f"{mean:+.2f} [{mean - half:+.2f}, {mean + half:+.2f}]", d))
                lower = sum(1 for x in diffs[0][1] if x < 0)
                paired = [diffs[0][0], f"{lower}/{len(seeds)}", diffs[1][0]]
            lines.append(f"| {rate:g} | {name} | {' | '.join(cells)} | {' | '.join(paired)} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="4,8", help="input job rates, jobs/hour")
    parser.add_argument(
        "--seeds", default=f"{TEST_SEED0}-{TEST_SEED0 + 9}", help="held-out workload seeds"
    )
    parser.add_argument("--num-jobs", type=int, default=200)
    parser.add_argument("--policy", default=None, help="checkpoint folder (default: shipped)")
    parser.add_argument("--multi-gpu", action="store_true", help="jobs of 1-8 GPUs")
    parser.add_argument("--workers", type=int, default=1, help="processes")
    parser.add_argument("--out", type=Path, default=Path("out/hetero_learned"))
    args = parser.parse_args(argv)
    rates = [float(x) for x in args.rates.split(",")]
    seeds = parse_seeds(args.seeds)
    tasks = [
        (name, rate, seed, args.num_jobs, args.policy, args.multi_gpu)
        for rate in rates
        for seed in seeds
        for name in (LEARNED, *OTHERS)
    ]
    start = time.time()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with open(args.out / "runs.csv", "w", newline="") as f:  # row by row: a cut run keeps some
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        pool = ProcessPoolExecutor(args.workers) if args.workers > 1 else None
        for row in pool.map(run_one, tasks) if pool else map(run_one, tasks):
            writer.writerow(row)
            f.flush()
            rows.append(row)
        if pool:
            pool.shutdown()
    lines = summarise(rows, rates)
    lines.append("")
    lines.append(f"{len(rows)} runs, {time.time() - start:.0f} s wall, {args.workers} workers")
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
