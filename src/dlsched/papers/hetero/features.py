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
    out = np.zeros((m, n, len(FEATURES)))
    if m == 0:
        return out
    now = view.now_s
    server_types = view.cluster.server_types
    remaining = np.array([r.remaining_work(now) for r in runs])
    positive = rates > 0.0
    safe = np.where(positive, rates, 1.0)
    best = np.maximum(rates.max(axis=1, keepdims=True), 1e-12)
    relative = np.where(positive, np.log(safe / best), 0.0)
    counted = np.maximum(positive.sum(axis=0), 1)
    advantage = np.where(positive, relative - relative.sum(axis=0) / counted, 0.0)
    out[:, :, 0] = np.where(positive, np.log1p(remaining[:, None] / safe), 0.0)
    out[:, :, 1] = relative
    out[:, :, 2] = advantage
    column = {t: k for k, t in enumerate(types)}
    for i, run in enumerate(runs):
        workers = run.allocation.workers
        if workers:
            here = server_types[workers[0][0]] if server_types else types[0]
            out[i, column[here], 3] = 1.0
    # the same math-module floats as one row at a time, written a column at once
    waited = [math.log1p(max(0.0, now - run.spec.submit_time_s)) for run in runs]
    out[:, :, 4] = np.array(waited)[:, None]
    sizes = [math.log2(max(run.spec.num_workers, 1)) for run in runs]
    out[:, :, 5] = np.array(sizes)[:, None]
    return out
