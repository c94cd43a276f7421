"""Pollux §5.3 in dlsched: average JCT on the artifact's 8 workloads and versus relative load.

Policies (label, scheduler, how the workload's jobs are managed):

* Pollux — ``pollux`` on Pollux-managed jobs (batch size per allocation);
* Optimus+Oracle+TunedJobs — ``optimus-oracle-allreduce`` on jobs with the trace's tuned batch;
* Tiresias+TunedJobs — ``tiresias:57600`` (the artifact's one queue threshold, 16 GPU-hours) on
  jobs with the trace's tuned batch and GPUs;
* generic heuristics on the tuned jobs: FIFO, SRTF, LAS, DRF, efficient-SRTF (each job at its
  tuned GPU count, or elastic for DRF).

Published (artifact README, workload 6): Pollux 2,446 s, Optimus+Oracle+TunedJobs 5,302 s,
Tiresias+TunedJobs 3,470 s. Outputs: ``pollux_jct.csv`` (one row per workload × policy),
``pollux_load.csv`` and ``pollux_load.png`` (average JCT vs relative job load, the load variants
drawn by `dlsched.workloads.pollux` with seed 0), ``pollux.md``.

Reduced size (``full=False``): all 8 workloads for the three paper policies, workload 6 only for
the generic heuristics, and the load figure on workload 6. ``full=True``: every policy on every
workload, and the load figure averaged over the 8 workloads.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from dlsched.csv_rows import write_csv
from dlsched.runner import simulate
from dlsched.workloads.pollux import make_pollux

log = logging.getLogger(__name__)

PAPER = (
    ("Pollux", "pollux", "adaptive"),
    ("Optimus+Oracle+TunedJobs", "optimus-oracle-allreduce", "tuned-batch"),
    ("Tiresias+TunedJobs", "tiresias:57600", "tuned"),
)
GENERIC = (
    ("FIFO", "fifo", "tuned"),
    ("SRTF", "srtf", "tuned"),
    ("LAS", "las", "tuned"),
    ("DRF", "drf", "tuned"),
    ("efficient-SRTF", "efficient-srtf", "tuned"),
)
PUBLISHED_WL6_S = {
    "Pollux": 2446.0,
    "Optimus+Oracle+TunedJobs": 5302.0,
    "Tiresias+TunedJobs": 3470.0,
}
LOADS = (0.5, 1.0, 1.5, 2.0)


def run_one(label: str, scheduler: str, jobs: str, workload: int, load: float) -> dict[str, Any]:
    """Average JCT (s) of one policy on one workload at one relative load (seed 0)."""
    w = make_pollux(number=workload, jobs=jobs, load=load, seed=0)
    result = simulate(w, scheduler)  # the workload's rescale cost: a 30 s restart
    jct = result.column("jct_s")
    return {
        "workload": workload,
        "load": load,
        "policy": label,
        "scheduler": scheduler,
        "jobs": jobs,
        "num_jobs": len(w.jobs),
        "avg_jct_s": float(np.mean(jct)),
        "p99_jct_s": float(np.percentile(jct, 99)),
        "makespan_s": result.summary()["makespan_s"],  # first submission to last completion
        "wall_s": float(result.wall_s),
    }


def run(out_dir: Path, *, full: bool = False) -> list[Path]:
    """Write the JCT table, the load figure and the report into ``out_dir``."""
    rows: list[dict[str, Any]] = []
    for workload in range(1, 9):
        policies = PAPER + GENERIC if (full or workload == 6) else PAPER
        for label, scheduler, jobs in policies:
            rows.append(run_one(label, scheduler, jobs, workload, 1.0))
            log.info("workload %d %s: %.0f s", workload, label, rows[-1]["avg_jct_s"])
    load_rows: list[dict[str, Any]] = []
    for load in LOADS:
        for workload in range(1, 9) if full else (6,):
            for label, scheduler, jobs in PAPER:
                if load == 1.0:
                    hit = next(
                        r for r in rows if r["workload"] == workload and r["policy"] == label
                    )
                    load_rows.append(hit)
                else:
                    load_rows.append(run_one(label, scheduler, jobs, workload, load))
    paths = [
        write_csv(out_dir / "pollux_jct.csv", rows),
        write_csv(out_dir / "pollux_load.csv", load_rows),
        _plot_load(out_dir / "pollux_load.png", load_rows),
    ]
    paths.append(_write_markdown(out_dir / "pollux.md", rows, load_rows, full))
    return paths


def _mean_by(rows: list[dict[str, Any]], label: str, load: float) -> float:
    values = [r["avg_jct_s"] for r in rows if r["policy"] == label and r["load"] == load]
    return float(np.mean(values)) if values else float("nan")


def _plot_load(path: Path, rows: list[dict[str, Any]]) -> Path:
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for label, _, _ in PAPER:
        ax.plot(LOADS, [_mean_by(rows, label, x) / 3600 for x in LOADS], marker="o", label=label)
    ax.set_xlabel("relative job load")
    ax.set_ylabel("average JCT (h)")
    ax.set_title("Pollux §5.3: average JCT vs job load")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _write_markdown(
    path: Path, rows: list[dict[str, Any]], load_rows: list[dict[str, Any]], full: bool
) -> Path:
    labels = [label for label, _, _ in PAPER + GENERIC]
    lines = [
        "# Pollux (OSDI'21) §5.3 in dlsched",
        "",
        "Size: "
        + (
            "full (every policy on every workload)."
            if full
            else "reduced — generic heuristics on workload 6 only, load figure on "
            "workload 6 only (`full=True` for everything)."
        ),
        "",
        "## Average JCT (s) per workload",
        "",
        "| workload | " + " | ".join(labels) + " |",
        "|---" * (len(labels) + 1) + "|",
    ]
    ordered = 0
    for workload in range(1, 9):
        by = {r["policy"]: r["avg_jct_s"] for r in rows if r["workload"] == workload}
        cells = [f"{by[label]:,.0f}" if label in by else "–" for label in labels]
        lines.append(f"| {workload} | " + " | ".join(cells) + " |")
        p, o, t = (by[label] for label, _, _ in PAPER)
        ordered += p < t < o
    lines += ["", "## Workload 6 against the published figures", ""]
    lines += ["| policy | dlsched (s) | published (s) | difference |", "|---|---|---|---|"]
    for label, published in PUBLISHED_WL6_S.items():
        ours = next(r["avg_jct_s"] for r in rows if r["workload"] == 6 and r["policy"] == label)
        lines.append(
            f"| {label} | {ours:,.0f} | {published:,.0f} | {100 * (ours / published - 1):+.1f} % |"
        )
    lines += [
        "",
        f"Published ordering (Pollux < Tiresias+TunedJobs < Optimus+Oracle+TunedJobs) holds on "
        f"{ordered} of 8 workloads.",
        "",
        "## Average JCT (s) vs relative job load",
        "",
        "| load | " + " | ".join(label for label, _, _ in PAPER) + " |",
        "|---" * (len(PAPER) + 1) + "|",
    ]
    for load in LOADS:
        cells = [f"{_mean_by(load_rows, label, load):,.0f}" for label, _, _ in PAPER]
        lines.append(f"| {load} | " + " | ".join(cells) + " |")
    lines += ["", "![load](pollux_load.png)", ""]
    path.write_text("\n".join(lines))
    return path
