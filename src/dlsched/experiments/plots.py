"""Matplotlib figures for runs and comparisons (Agg backend: files only, no screen)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from dlsched.experiments.compare import Summary
from dlsched.sim import Result


def _save(fig: plt.Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_run(result: Result, path: str | Path) -> Path:
    """Utilisation and queue over time, and the JCT distribution, of one run."""
    fig, (ax_time, ax_cdf) = plt.subplots(1, 2, figsize=(11, 4))
    hours = np.asarray(result.timeline.times) / 3600.0
    ax_time.plot(hours, result.timeline.gpu_util, label="GPU utilisation")
    ax_time.plot(hours, result.timeline.fragmentation, label="fragmentation (SCED² Eq. 1)")
    ax_time.set_xlabel("time (h)")
    ax_time.set_ylabel("fraction of the cluster's GPUs")
    ax_time.set_ylim(0, 1.05)
    ax_queue = ax_time.twinx()
    ax_queue.plot(hours, result.timeline.pending, color="grey", alpha=0.5, label="pending jobs")
    ax_queue.set_ylabel("pending jobs")
    ax_time.legend(loc="upper left", fontsize=8)
    ax_time.set_title(f"{result.workload} · {result.scheduler} · seed {result.seed}")
    jct_h = np.sort(result.column("jct_s")) / 3600.0
    if jct_h.size:
        ax_cdf.plot(jct_h, np.arange(1, jct_h.size + 1) / jct_h.size)
    ax_cdf.set_xlabel("JCT (h)")
    ax_cdf.set_ylabel("fraction of jobs")
    ax_cdf.set_title("JCT CDF")
    return _save(fig, path)


_LABELS = {
    "avg_jct_s": "average JCT",
    "p95_jct_s": "p95 JCT",
    "makespan_s": "makespan",
    "avg_wait_s": "average wait",
    "avg_slowdown": "average slowdown",
    "gpu_util": "GPU utilisation",
}


def plot_comparison(
    rows: Sequence[Summary],
    path: str | Path,
    metric: str = "avg_jct_s",
    title: str = "",
    log: bool = False,
) -> Path:
    """Bar chart of one metric's mean per scheduler with 95 % confidence intervals; ``log``: a
    logarithmic value axis (policies an order of magnitude apart both stay readable)."""
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(rows) + 2), 4))
    names = [r.scheduler for r in rows]
    scale = 3600.0 if metric.endswith("_s") else 1.0
    means = [r.mean[metric] / scale for r in rows]
    errors = [r.ci95[metric] / scale for r in rows]
    ax.bar(names, means, yerr=errors, capsize=4, color="tab:blue")
    label = _LABELS.get(metric, metric)
    ax.set_ylabel(f"{label} (h)" if scale != 1.0 else label)
    ax.set_title(f"{title + ': ' if title else ''}{label}\n(mean and 95 % CI)", fontsize=11)
    if log:
        ax.set_yscale("log")
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    return _save(fig, path)
