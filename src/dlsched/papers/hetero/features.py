"""What the ``hetero-score`` policy sees of each (job, GPU type) pair: `FEATURES`.

Every feature comes from what a real scheduler could know at a scheduling point: the job's
remaining work (steps: Gavel's jobs declare how many they run, and its FTF and makespan policies
read them), its *estimated* speed on each type (`ClusterView.type_speeds`, the profiled
throughput matrix; never true speeds, which only oracles reach), where it runs now and when it
was submitted. Nothing here reads ``JobRun.rate`` (the speed measured while it runs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from dlsched.core import ClusterView, JobRun

Array = NDArray[np.float64]

FEATURES = (
    "log_remaining_s",
    "log_relative_speed",
    "advantage",
    "running_here",
    "log_wait_s",
    "log_gpus",
)
"""Per (job, type): log(1 + estimated seconds to finish on the type: remaining steps / estimated
steps per second); log(estimated speed on the type / on the job's fastest type) (0 on its best
type); that log relative speed minus its mean over the active jobs (how much less this job loses
on the type than the others, Gavel's premise); 1 if the job runs on the type now; log(1 + seconds
since submission); log2 of its GPUs."""


def gpu_types(view: ClusterView) -> tuple[str, ...]:
    """The cluster's GPU types in spec order (``("gpu",)`` for a cluster of one unnamed type)."""
    return view.cluster.gpu_types or ("gpu",)


def estimated_rates(view: ClusterView, runs: Sequence[JobRun], types: Sequence[str]) -> Array:
    """``(jobs, types)`` estimated speeds, work units/s (all 1.0 without per-type estimates)."""
    estimates = view.type_speeds
    if estimates is None:
        return np.ones((len(runs), len(types)))
    return np.array([[estimates.of(r.spec).get(t, 0.0) for t in types] for r in runs], float)


def pair_features(
    view: ClusterView, runs: Sequence[JobRun], types: Sequence[str], rates: Array
) -> Array:
    """``(jobs, types, len(FEATURES))`` features of every pair (see `FEATURES`); rows of a
    type a job cannot run on (estimated speed 0) are 0."""
    m, n = rates.shape
    if m == 0:
        return np.zeros((m, n, len(FEATURES)))
    positive = rates > 0.0
    relative = relative_speeds(rates, positive)
    counted = np.maximum(positive.sum(axis=0), 1)
    return features_given_mean(view, runs, types, rates, relative.sum(axis=0) / counted)


def relative_speeds(rates: Array, positive: NDArray[np.bool_]) -> Array:
    """``(jobs, types)`` log(estimated speed / the job's best estimated speed), 0 where the
    speed is 0 (``positive`` is ``rates > 0``); each row depends on its job alone."""
    safe = np.where(positive, rates, 1.0)
    best = np.maximum(rates.max(axis=1, keepdims=True), 1e-12)
    return np.where(positive, np.log(safe / best), 0.0)


def features_given_mean(
    view: ClusterView, runs: Sequence[JobRun], types: Sequence[str], rates: Array, mean: Array
) -> Array:
    """`pair_features` of ``runs`` with ``mean`` (per type: the sum of `relative_speeds` over
    every active job, over the number of them with a speed there, at least 1) given: the
    same floats for any subset of the active jobs (every other feature is the job's own)."""
    m, n = rates.shape
    if m == 0:
        return np.zeros((m, n, len(FEATURES)))
    now = view.now_s
    server_types = view.cluster.server_types
    column = {t: k for k, t in enumerate(types)}
    here = []
    for i, run in enumerate(runs):
        workers = run.allocation.workers
        if workers:
            here.append((i, column[server_types[workers[0][0]] if server_types else types[0]]))
    return features_from_parts(
        rates,
        mean,
        np.array([r.remaining_work(now) for r in runs]),
        here,
        [math.log1p(max(0.0, now - run.spec.submit_time_s)) for run in runs],
        [math.log2(max(run.spec.num_workers, 1)) for run in runs],
    )


def features_from_parts(
    rates: Array,
    mean: Array,
    remaining: Array,
    here: Sequence[tuple[int, int]],
    waited: Sequence[float],
    sizes: Sequence[float],
) -> Array:
    """`features_given_mean` from each job's parts: its remaining work, (job, type) where it
    runs, log(1 + its wait) and log2 of its size (math-module floats, as there)."""
    m, n = rates.shape
    out = np.zeros((m, n, len(FEATURES)))
    positive = rates > 0.0
    safe = np.where(positive, rates, 1.0)
    relative = relative_speeds(rates, positive)
    advantage = np.where(positive, relative - mean, 0.0)
    out[:, :, 0] = np.where(positive, np.log1p(remaining[:, None] / safe), 0.0)
    out[:, :, 1] = relative
    out[:, :, 2] = advantage
    for i, k in here:
        out[i, k, 3] = 1.0
    # the same math-module floats as one row at a time, written a column at once
    out[:, :, 4] = np.array(waited)[:, None]
    out[:, :, 5] = np.array(sizes)[:, None]
    return out
