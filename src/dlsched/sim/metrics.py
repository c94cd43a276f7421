"""Metrics: JCT statistics, slowdown, SCED²'s effectiveness and fragmentation, Jain's fairness."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from dlsched.core import Cluster, JobRun


@dataclass
class Timeline:
    """Cluster state sampled at scheduling points (columns of equal length)."""

    times: list[float] = field(default_factory=list)
    gpu_util: list[float] = field(default_factory=list)
    cpu_util: list[float] = field(default_factory=list)
    fragmentation: list[float] = field(default_factory=list)
    running: list[int] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)

    def add(
        self,
        t: float,
        *,
        gpu_util: float,
        cpu_util: float,
        fragmentation: float,
        running: int,
        pending: int,
    ) -> None:
        self.times.append(t)
        self.gpu_util.append(gpu_util)
        self.cpu_util.append(cpu_util)
        self.fragmentation.append(fragmentation)
        self.running.append(running)
        self.pending.append(pending)

    def time_average(self, column: Sequence[float], end_s: float) -> float:
        """Time-weighted mean of a column, each sample holding until the next (or ``end_s``)."""
        if not self.times:
            return 0.0
        t = np.asarray([*self.times, max(end_s, self.times[-1])])
        dt = np.diff(t)
        if dt.sum() <= 0:
            return float(np.mean(column))
        return float(np.dot(np.asarray(column), dt) / dt.sum())


def server_fragmentation(remaining_s: Sequence[float] | np.ndarray) -> float:
    """SCED² Eq. 1 for one server: ``1 − (Σx)² / (n·Σx²)`` over its GPUs' remaining times.

    Free GPUs count as 0. An idle server (all zeros) has fragmentation 0.
    """
    x = np.asarray(remaining_s, dtype=np.float64)
    sq = float(np.dot(x, x))
    if x.size == 0 or sq <= 0:
        return 0.0
    return 1.0 - float(x.sum()) ** 2 / (x.size * sq)


def gpu_remaining_matrix(cluster: Cluster, running: Iterable[JobRun], now_s: float) -> np.ndarray:
    """``(N, M)`` remaining time (s) of the job on each GPU; 0 for free GPUs (SCED²'s state).

    M is the largest GPU count of a server; servers with fewer GPUs are padded with zeros. A
    job's remaining time is its remaining work over its current rate (inf-safe: capped at 1e9 s).
    """
    gpus = cluster.capacity_array[:, 0].astype(int)
    width = int(gpus.max()) if gpus.size else 0
    matrix = np.zeros((cluster.num_servers, max(width, 0)), dtype=np.float64)
    filled = np.zeros(cluster.num_servers, dtype=int)
    for run in running:
        per_task = run.spec.worker_demand.gpu
        if per_task <= 0:
            continue
        remaining = run.remaining_work(now_s)
        left = min(remaining / run.rate, 1e9) if run.rate > 0 else 1e9
        left += max(0.0, run.paused_until_s - now_s)
        for server, n in run.allocation.workers:
            k = round(n * per_task)
            matrix[server, filled[server] : filled[server] + k] = left
            filled[server] += k
    return matrix


def fragmentation(cluster: Cluster, running: Iterable[JobRun], now_s: float) -> float:
    """Average SCED² fragmentation (Eq. 1) over servers with GPUs; 0 for CPU-only clusters.

    Equal to `server_fragmentation` of each server's row of `gpu_remaining_matrix`, averaged,
    but computed from per-server sums of remaining time and its square (no matrix): it runs at
    every timeline sample, over every running job, so `JobRun.remaining_work` is inlined here.
    """
    gpus = cluster.capacity_array[:, 0].astype(int)
    has_gpus = gpus > 0
    if not has_gpus.any():
        return 0.0
    total = [0.0] * cluster.num_servers
    squares = [0.0] * cluster.num_servers
    for run in running:
        per_task = run.spec.worker_demand.gpu
        if per_task <= 0:
            continue
        rate = run.rate
        if rate > 0:
            work = run.spec.total_work
            start = max(run.progress_time_s, run.paused_until_s)
            done = (
                run.progress_s
                if now_s <= start
                else min(work, run.progress_s + rate * (now_s - start))
            )
            left = min(max(0.0, work - done) / rate, 1e9)
        else:
            left = 1e9
        paused = run.paused_until_s - now_s
        if paused > 0.0:
            left += paused
        whole = per_task == 1.0  # one GPU a task: k = n without rounding
        for server, n in run.allocation.workers:
            k = n if whole else round(n * per_task)
            total[server] += k * left
            squares[server] += k * left * left
    sums = np.asarray(total)[has_gpus]
    sq = np.asarray(squares)[has_gpus]
    busy = sq > 0
    values = np.zeros(len(sums))
    values[busy] = 1.0 - sums[busy] ** 2 / (gpus[has_gpus][busy] * sq[busy])
    return float(values.mean())


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index ``(Σx)² / (n·Σx²)``: 1 when all equal, 1/n when one takes all."""
    x = np.asarray(values, dtype=np.float64)
    sq = float(np.dot(x, x))
    if x.size == 0 or sq <= 0:
        return 1.0
    return float(x.sum()) ** 2 / (x.size * sq)
