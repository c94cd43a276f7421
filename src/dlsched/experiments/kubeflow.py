"""Kubeflow dynamic vs static scheduler on three workload mixes (seed 003's three experiments).

Seed 003 compares its dynamic scheduler (priority queue, gang scheduling, scale-down to admit
higher-priority jobs, scale-up into free resources) with Kubeflow's tf-operator in three
experiments whose specifications were lost with its images. The ``kubeflow`` workload's three
mixes stand in for them (its docstring gives every choice): ``uniform``,
``high-priority-burst`` and ``large-jobs``. For each mix and seed, ``kubeflow-dynamic`` and
``kubeflow-static`` run the same jobs (gang placement, event-driven), and the experiment writes:

* ``runs.csv`` — one row per (mix, scheduler, seed): average JCT, average JCT of the
  highest-utility jobs (utility 3), makespan, CPU utilisation, average wait, rescales;
* ``summary.csv`` and ``README.md`` — means with 95 % confidence half-widths over seeds, and
  dynamic's change relative to static;
* ``kubeflow.png`` — average JCT, makespan and CPU utilisation per mix, both schedulers.

Sizes: the reduced default is `REDUCED` (60 jobs per run, seeds 1–3); ``full=True`` is `FULL`
(the workload's default 100 jobs, seeds 1–10). Load is the workload's default (0.9).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.csv_rows import write_csv
from dlsched.experiments.compare import mean_ci95
from dlsched.experiments.plots import plt
from dlsched.runner import simulate
from dlsched.workloads.registry import make_workload

log = logging.getLogger(__name__)

MIXES = ("uniform", "high-priority-burst", "large-jobs")
SCHEDULERS = ("kubeflow-dynamic", "kubeflow-static")
METRICS = (
    "avg_jct_s",
    "high_priority_jct_s",
    "makespan_s",
    "cpu_util",
    "avg_wait_s",
    "rescales",
)
"""Columns of ``runs.csv``; times in seconds, utilisation a fraction of the cluster's CPUs."""
TOP_PRIORITY = 3.0


@dataclass(frozen=True)
class Size:
    """How big a run is.

    Attributes:
        num_jobs: jobs per run.
        seeds: workload seeds.
    """

    num_jobs: int
    seeds: tuple[int, ...]


REDUCED = Size(num_jobs=60, seeds=(1, 2, 3))
FULL = Size(num_jobs=100, seeds=tuple(range(1, 11)))


def run_one(mix: str, scheduler: str, seed: int, num_jobs: int) -> dict[str, Any]:
    """One run's metrics (see `METRICS`)."""
    workload = make_workload("kubeflow", seed=seed, num_jobs=num_jobs, mix=mix)
    result = simulate(workload, scheduler, seed)
    summary = result.summary()
    result.workload = f"kubeflow {mix}"  # the mixes apart in reproduce --report (one name)
    priority = {job.job_id: job.priority for job in workload.jobs}
    top = [r.jct_s for r in result.records if priority[r.job_id] >= TOP_PRIORITY]
    return {
        "mix": mix,
        "scheduler": scheduler,
        "seed": seed,
        "jobs": summary["jobs"],
        "finished": summary["finished"],
        "avg_jct_s": summary["avg_jct_s"],
        "high_priority_jct_s": float(np.mean(top)) if top else float("nan"),
        "makespan_s": summary["makespan_s"],
        "cpu_util": summary["cpu_util"],
        "avg_wait_s": summary["avg_wait_s"],
        "rescales": sum(r.rescales for r in result.records),
    }


def run(out_dir: Path, *, full: bool = False, size: Size | None = None) -> list[Path]:
    """Run the experiment and write its files into ``out_dir``.

    Args:
        out_dir: output folder (created).
        full: the larger size (`FULL`) instead of the reduced default (`REDUCED`).
        size: explicit size (tests); overrides ``full``.

    Returns:
        The paths written.
    """
    size = size or (FULL if full else REDUCED)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = [
        run_one(mix, name, seed, size.num_jobs)
        for mix in MIXES
        for name in SCHEDULERS
        for seed in size.seeds
    ]
    summary = []
    for mix in MIXES:
        for name in SCHEDULERS:
            rows = [r for r in runs if r["mix"] == mix and r["scheduler"] == name]
            entry: dict[str, Any] = {"mix": mix, "scheduler": name, "runs": len(rows)}
            for metric in METRICS:
                mean, half = mean_ci95([float(r[metric]) for r in rows])
                entry[metric] = mean
                entry[f"{metric}_ci95"] = half
            entry["unfinished"] = sum(r["jobs"] - r["finished"] for r in rows)
            summary.append(entry)
            log.info("kubeflow %s %s: avg JCT %.0f s", mix, name, entry["avg_jct_s"])
    paths = [
        write_csv(out_dir / "runs.csv", runs),
        write_csv(out_dir / "summary.csv", summary),
        _plot(out_dir / "kubeflow.png", summary),
        _write_markdown(out_dir / "README.md", summary, size, full),
    ]
    return paths


def _plot(path: Path, summary: list[dict[str, Any]]) -> Path:
    panels = (("avg_jct_s", "average JCT (min)", 60.0), ("makespan_s", "makespan (h)", 3600.0))
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    x = np.arange(len(MIXES))
    width = 0.38
    for ax, (metric, label, scale) in zip(
        axes, (*panels, ("cpu_util", "CPU utilisation", 1.0)), strict=True
    ):
        for k, name in enumerate(SCHEDULERS):
            rows = [
                next(r for r in summary if r["mix"] == m and r["scheduler"] == name) for m in MIXES
            ]
            ax.bar(
                x + (k - 0.5) * width,
                [r[metric] / scale for r in rows],
                width,
                yerr=[r[f"{metric}_ci95"] / scale for r in rows],
                capsize=3,
                label=name.removeprefix("kubeflow-"),
            )
        ax.set_xticks(x, MIXES, fontsize=8)
        ax.set_xlabel("job mix")
        ax.set_ylabel(label)
    axes[0].legend()
    fig.suptitle("Kubeflow: dynamic vs static (mean, 95 % CI over seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _change(dynamic: float, static: float) -> str:
    if not np.isfinite(dynamic) or not np.isfinite(static) or static == 0:
        return "n/a"
    return f"{100.0 * (dynamic - static) / static:+.1f} %"


def _write_markdown(path: Path, summary: list[dict[str, Any]], size: Size, full: bool) -> Path:
    seeds = ", ".join(str(s) for s in size.seeds)
    lines = [
        "# Kubeflow dynamic vs static (`dlsched reproduce kubeflow`)",
        "",
        (
            "Full size."
            if full
            else "**Reduced size** (the default; `--full` runs 100 jobs × seeds 1–10)."
        ),
        "",
        f"Workload `kubeflow` ({size.num_jobs} jobs per run, 4 nodes of 16 cores / 64 GB,"
        f" load 0.9), gang placement, seeds {seeds}. Mean ± 95 % CI half-width over seeds;"
        " utility-3 JCT is the average over the highest-priority jobs.",
        "",
        "| mix | scheduler | avg JCT (min) | utility-3 JCT (min) | makespan (h) | CPU util |"
        " avg wait (min) | rescales | unfinished |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in summary:
        lines.append(
            f"| {r['mix']} | {r['scheduler']} | {r['avg_jct_s'] / 60:.1f} ± "
            f"{r['avg_jct_s_ci95'] / 60:.1f} | {r['high_priority_jct_s'] / 60:.1f} | "
            f"{r['makespan_s'] / 3600:.2f} | {r['cpu_util']:.3f} | {r['avg_wait_s'] / 60:.1f} | "
            f"{r['rescales']:.1f} | {r['unfinished']} |"
        )
    lines += [
        "",
        "Dynamic relative to static:",
        "",
        "| mix | avg JCT | utility-3 JCT | makespan | CPU util |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for mix in MIXES:
        dyn = next(r for r in summary if r["mix"] == mix and r["scheduler"] == SCHEDULERS[0])
        sta = next(r for r in summary if r["mix"] == mix and r["scheduler"] == SCHEDULERS[1])
        cells = [
            _change(dyn[m], sta[m])
            for m in ("avg_jct_s", "high_priority_jct_s", "makespan_s", "cpu_util")
        ]
        lines.append(f"| {mix} | " + " | ".join(cells) + " |")
    lines += ["", "Files: `runs.csv` (every run), `summary.csv`, `kubeflow.png`.", ""]
    path.write_text("\n".join(lines))
    return path
