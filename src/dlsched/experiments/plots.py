"""Matplotlib figures for runs and comparisons (Agg backend: files only, no screen)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter

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
    lines, labels = ax_time.get_legend_handles_labels()
    queue_lines, queue_labels = ax_queue.get_legend_handles_labels()  # the pending line too
    ax_time.legend(lines + queue_lines, labels + queue_labels, loc="upper left", fontsize=8)
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
    results: Sequence[Result] = (),
) -> Path:
    """Bar chart of one metric's mean per scheduler with 95 % confidence intervals; with
    ``results``, beside it each scheduler's JCT CDF (every finished job of every seed). ``log``:
    logarithmic value axes (policies an order of magnitude apart both stay readable)."""
    width = max(4.0, 1.1 * len(rows) + 2)
    fig, axes = plt.subplots(1, 2 if results else 1, figsize=(width + (5 if results else 0), 4))
    ax = axes[0] if results else axes
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
        _plain_ticks(ax.yaxis)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    if results:
        _jct_cdfs(axes[1], names, results, log)
    return _save(fig, path)


def _jct_cdfs(ax: plt.Axes, names: Sequence[str], results: Sequence[Result], log: bool) -> None:
    """One JCT CDF per scheduler, its finished jobs of every seed pooled."""
    for name in names:
        parts = [r.column("jct_s") for r in results if r.scheduler == name]
        jct_h = np.sort(np.concatenate(parts)) / 3600.0 if parts else np.array([])
        if jct_h.size:
            ax.plot(jct_h, np.arange(1, jct_h.size + 1) / jct_h.size, label=name)
    ax.set_xlabel("JCT (h)" + (", log scale" if log else ""))
    ax.set_ylabel("fraction of finished jobs")
    ax.set_title("JCT CDF (every seed's finished jobs)", fontsize=11)
    if log:
        ax.set_xscale("log")
        _plain_ticks(ax.xaxis)
    ax.legend(fontsize=8)


def _plain_ticks(axis: Any) -> None:
    """A log axis's ticks as plain numbers (2, 5, 10, 20), not powers (2×10⁰)."""
    plain = FuncFormatter(lambda value, _: f"{value:g}")
    axis.set_major_formatter(plain)
    axis.set_minor_formatter(plain)
