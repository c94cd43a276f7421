"""Run several schedulers over several seeds of one workload, and summarise with confidence."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from dlsched.runner import kept_runs, simulate
from dlsched.schedulers.base import Scheduler
from dlsched.sim import Result

log = logging.getLogger(__name__)

METRICS = (
    "avg_jct_s",
    "jct_over_bound",
    "p95_jct_s",
    "makespan_s",
    "avg_slowdown",
    "avg_wait_s",
    "gpu_util",
)
"""Compared metrics; ``jct_over_bound`` is average JCT ÷ the no-wait lower bound (≥ 1 without
interference noise): how far a scheduler is from the physical limit."""
QUEUEING_AND_FAIRNESS = (
    "avg_queued_s",
    "avg_ftf_rho",
    "max_ftf_rho",
    "user_fairness",
    "worst_user_slowdown",
)
"""The second table of ``dlsched compare``: ``avg_wait_s`` counts only the wait before a
job's first start, ``avg_queued_s`` every period it held nothing (after preemptions too);
finish-time fairness (mean, worst) and per-user fairness (`dlsched.sim.fairness`)."""


def parse_seeds(text: str, option: str = "--seeds") -> list[int]:
    """``"1-10"``, ``"1,3,5"``, ``"7"`` or a mix (``"1-3,8"``) → list of seeds.

    Raises:
        ValueError: naming ``option`` and the part that is not a seed or range, a negative seed,
            or a seed given twice (it would count twice in the means and intervals).
    """
    from dlsched.cli_args import parse_seed_list

    return parse_seed_list(text, option)  # bounded: seeds <= 2**32 - 1, at most 10,000


def run_grid(
    workload: str,
    schedulers: Sequence[str | Scheduler],
    seeds: Iterable[int],
    *,
    workers: int = 1,
    start_method: str | None = None,
    dask: str | None = None,
    on_run: Callable[[Result], None] | None = None,
    **options: Any,
) -> list[Result]:
    """Simulate every (scheduler, seed) pair; the same seed gives every scheduler the same jobs.

    Args:
        workload: a registered workload name.
        schedulers: scheduler names, or `Scheduler` objects (which run in this process only).
        seeds: the seeds, each run under every scheduler.
        workers: local processes running the runs (`experiments.parallel`); 1 runs them here.
            The results are the same, and in the same order (seed by seed, schedulers in the
            given order), whatever the number. A scheduler object forces 1, with a warning.
        start_method: the worker processes' start method (``"spawn"``, ``"fork"``,
            ``"forkserver"``); default the platform's.
        dask: run on a Dask distributed cluster instead (`experiments.dask_sweep`): its
            scheduler's address, or ``"local"`` for one started on this machine for the sweep.
            Same results, same order. Needs the ``dask`` extra.
        on_run: called with each result as it is ready (completion order with workers > 1).
        **options: `dlsched.simulate` options (``servers``, ``load``, generator options, …).

    Returns:
        The results, each labelled by its scheduler spec (``Result.scheduler`` is
        ``deeprm:1.3`` for that spec, so two specs of one policy stay apart).

    Raises:
        ValueError: for ``workers`` < 1, or both ``workers`` > 1 and ``dask``.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if workers > 1 and dask is not None:
        raise ValueError("give workers or dask, not both")
    seed_list = list(seeds)
    pairs = [(seed, scheduler) for seed in seed_list for scheduler in schedulers]
    names = [s for s in schedulers if isinstance(s, str)]
    if (workers > 1 or dask is not None) and len(names) < len(schedulers):
        first = next(s for s in schedulers if not isinstance(s, str))
        log.warning(
            "scheduler object %r cannot be rebuilt in a worker process: running %d runs here, "
            "on 1 worker instead of %s (give scheduler names to run in parallel)",
            first.name,
            len(pairs),
            workers if dask is None else f"the Dask cluster {dask}",
        )
        workers, dask = 1, None
    if dask is not None or workers > 1:
        from dlsched.experiments.parallel import RunTask, run_in_processes

        kept = kept_runs()
        if kept is not None:  # a report was asked (`keeping_runs`): the runs bring their logs
            options = {**options, "record_events": True}
        tasks = [RunTask(workload, name, seed, options) for seed in seed_list for name in names]
        if dask is not None:
            from dlsched.experiments.dask_sweep import run_on_dask

            results = run_on_dask(tasks, dask, on_run=on_run)
        else:
            results = run_in_processes(tasks, workers, start_method=start_method, on_run=on_run)
        if kept is not None:
            kept.extend(results)
        return results
    from dlsched.experiments.parallel import labelled

    results = []
    for seed, scheduler in pairs:
        result = labelled(simulate(workload, scheduler, seed, **options), scheduler)
        results.append(result)
        if on_run is not None:
            on_run(result)
    return results


@dataclass(frozen=True)
class Summary:
    """Mean and 95 % confidence half-width of each metric for one scheduler."""

    scheduler: str
    runs: int
    mean: dict[str, float]
    ci95: dict[str, float]
    unfinished: int


def mean_ci95(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its Student-t 95 % confidence interval (0 for one value)."""
    x = np.asarray([v for v in values if not math.isnan(v)], dtype=np.float64)
    if x.size == 0:
        return float("nan"), float("nan")
    if x.size == 1:
        return float(x[0]), 0.0
    half = float(stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return float(x.mean()), half


def summarise(results: Sequence[Result], metrics: Sequence[str] = METRICS) -> list[Summary]:
    """One `Summary` per scheduler, in first-seen order."""
    by_scheduler: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        by_scheduler.setdefault(result.scheduler, []).append(result.summary())
    rows = []
    for name, runs in by_scheduler.items():
        mean, ci = {}, {}
        for metric in metrics:
            mean[metric], ci[metric] = mean_ci95([float(r[metric]) for r in runs])
        unfinished = sum(r["jobs"] - r["finished"] for r in runs)
        rows.append(Summary(name, len(runs), mean, ci, unfinished))
    return rows
