"""``dlsched reproduce gavel``: average JCT against input job rate, heterogeneity-agnostic vs
-aware policies, shaped like Gavel's evaluation (OSDI 2020, Fig. 8/9: LAS and its ``_perf``
variant on a 36:36:36 K80/P100/V100 cluster, continuous Poisson arrivals).

For each input rate (jobs per hour), seed and policy the ``gavel`` workload runs to completion;
the average JCT is taken over the middle third of the jobs by arrival (a window, as Gavel
measures jobs 4,000-5,000 of a continuous stream: the first jobs find an empty cluster and the
last ones a draining one). The experiment writes

* ``runs.csv`` — one row per (policy, rate, seed): average JCT of the window and of every job,
  makespan, jobs finished;
* ``summary.csv`` and ``README.md`` — mean and 95 % CI half-width over seeds per (policy, rate),
  and the aware policy's JCT relative to the agnostic one's;
* ``gavel.png`` — average JCT (hours) against input job rate, one line per policy.

Differences from Gavel's figure, said in the README it writes: runs are far shorter than Gavel's
(`REDUCED`: 500 jobs, window of 166, 3 rates, 2 seeds; `FULL`: 1,500 jobs, 7 rates, 3 seeds),
so the window is closer to a transient than to Gavel's steady state, and the rates where JCT
grows are higher than Gavel's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.csv_rows import write_csv
from dlsched.experiments.compare import mean_ci95
from dlsched.experiments.plots import plt
from dlsched.runner import simulate

log = logging.getLogger(__name__)

POLICIES = ("gavel-las", "gavel-las-het", "gavel-fifo", "gavel-fifo-het")
"""Agnostic and aware pairs (LAS, FIFO)."""


@dataclass(frozen=True)
class Size:
    """How big the experiment is.

    Attributes:
        num_jobs: jobs per run.
        rates: input job rates, jobs per hour.
        seeds: workload seeds.
    """

    num_jobs: int
    rates: tuple[float, ...]
    seeds: tuple[int, ...]


REDUCED = Size(num_jobs=500, rates=(4.0, 8.0, 12.0), seeds=(1, 2))
FULL = Size(num_jobs=1500, rates=(2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0), seeds=(1, 2, 3))


def run_one(policy: str, rate: float, seed: int, num_jobs: int) -> dict[str, Any]:
    """One run's row of ``runs.csv``."""
    result = simulate("gavel", policy, seed, num_jobs=num_jobs, jobs_per_hour=rate)
    summary = result.summary()
    low, high = num_jobs // 3, 2 * num_jobs // 3  # job ids are arrival order
    window = [r.jct_s for r in result.records if low <= r.job_id < high]
    return {
        "policy": policy,
        "jobs_per_hour": rate,
        "seed": seed,
        "jobs": summary["jobs"],
        "finished": summary["finished"],
        "avg_jct_s": sum(window) / len(window) if window else float("nan"),
        "avg_jct_all_s": summary["avg_jct_s"],
        "makespan_s": summary["makespan_s"],
    }


def run(out_dir: Path, *, full: bool = False, size: Size | None = None) -> list[Path]:
    """Run the experiment and write its files into ``out_dir``; the paths written."""
    size = size or (FULL if full else REDUCED)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = [
        run_one(policy, rate, seed, size.num_jobs)
        for policy in POLICIES
        for rate in size.rates
        for seed in size.seeds
    ]
    summary = []
    for policy in POLICIES:
        for rate in size.rates:
            rows = [r for r in runs if r["policy"] == policy and r["jobs_per_hour"] == rate]
            entry: dict[str, Any] = {"policy": policy, "jobs_per_hour": rate, "runs": len(rows)}
            for metric in ("avg_jct_s", "makespan_s"):
                mean, half = mean_ci95([float(r[metric]) for r in rows])
                entry[metric] = mean
                entry[f"{metric}_ci95"] = half
            summary.append(entry)
            log.info("gavel %s at %g jobs/h: avg JCT %.0f s", policy, rate, entry["avg_jct_s"])
    return [
        write_csv(out_dir / "runs.csv", runs),
        write_csv(out_dir / "summary.csv", summary),
        _plot(out_dir / "gavel.png", summary, size),
        _write_markdown(out_dir / "README.md", summary, size, full),
    ]


def _plot(path: Path, summary: list[dict[str, Any]], size: Size) -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    for policy in POLICIES:
        rows = [r for r in summary if r["policy"] == policy]
        ax.errorbar(
            [r["jobs_per_hour"] for r in rows],
            [r["avg_jct_s"] / 3600 for r in rows],
            yerr=[r["avg_jct_s_ci95"] / 3600 for r in rows],
            marker="o",
            capsize=3,
            linestyle="--" if policy.endswith("-het") else "-",
            label=policy,
        )
    ax.set_xlabel("input job rate (jobs/hour)")
    ax.set_ylabel("average JCT (hours)")
    ax.set_title(f"Gavel's jobs, 36 K80 + 36 P100 + 36 V100, {size.num_jobs} jobs a run")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _write_markdown(path: Path, summary: list[dict[str, Any]], size: Size, full: bool) -> Path:
    lines = [
        "# Average JCT vs input job rate, agnostic vs aware (`dlsched reproduce gavel`)",
        "",
        "Full size."
        if full
        else "**Reduced size** (the default; `--full` is 1,500 jobs, 7 rates, 3 seeds).",
        "",
        f"Workload `gavel`: {size.num_jobs} one-GPU jobs a run, Poisson arrivals, Gavel's job"
        " types and durations, 36 GPUs of each type, 360 s rounds; seeds"
        f" {', '.join(map(str, size.seeds))}. Average JCT over the middle third of the jobs by"
        " arrival (Gavel measures jobs 4,000-5,000 of a continuous stream, in steady state; these"
        " runs are far shorter): the shape, not Gavel's numbers, is the target.",
        "",
        "| policy | jobs/h | avg JCT of the window (h) | makespan (h) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for r in summary:
        lines.append(
            f"| {r['policy']} | {r['jobs_per_hour']:g} | {r['avg_jct_s'] / 3600:.2f} ± "
            f"{r['avg_jct_s_ci95'] / 3600:.2f} | {r['makespan_s'] / 3600:.1f} |"
        )
    lines += ["", "Aware relative to agnostic (average JCT):", ""]
    for agnostic in ("gavel-las", "gavel-fifo"):
        for rate in size.rates:
            a = next(r for r in summary if r["policy"] == agnostic and r["jobs_per_hour"] == rate)
            h = next(
                r
                for r in summary
                if r["policy"] == f"{agnostic}-het" and r["jobs_per_hour"] == rate
            )
            ratio = h["avg_jct_s"] / a["avg_jct_s"] if a["avg_jct_s"] else float("nan")
            lines.append(f"- {agnostic}-het / {agnostic} at {rate:g} jobs/h: {ratio:.2f}×")
    path.write_text("\n".join(lines) + "\n")
    return path
