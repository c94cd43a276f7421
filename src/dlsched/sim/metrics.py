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

    def sample(
        self,
        t: float,
        cluster: Cluster,
        running: Sequence[JobRun],
        pending: int,
        used: tuple[float, float],
    ) -> None:
        """Add the state at ``t``: ``running`` jobs, ``pending`` jobs, ``used`` (GPUs, CPUs)."""
        total = cluster.total
        self.add(
            t,
            gpu_util=used[0] / total.gpu if total.gpu else 0.0,
            cpu_util=used[1] / total.cpu if total.cpu else 0.0,
            fragmentation=fragmentation(cluster, running, t),
            running=len(running),
            pending=pending,
        )

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
    but computed from per-server sums of remaining time and its square (no matrix), in one pass
    over the running jobs: it runs at every timeline sample. (Plain Python: with about a hundred
    running jobs, building NumPy arrays from the jobs cost more than the loop.)
    """
    gpus = [int(row[0]) for row in cluster.capacity_rows]
    if not any(g > 0 for g in gpus):
        return 0.0
    total = [0.0] * len(gpus)
    squares = [0.0] * len(gpus)
    for run in running:
        spec = run.spec
        per_task = spec.worker_demand.gpu
        if not per_task > 0:
            continue
        rate, paused = run.rate, run.paused_until_s
        if rate > 0:  # remaining work (`JobRun.remaining_work`) over the rate, at most 1e9 s
            since, work, done = run.progress_time_s, spec.total_work, run.progress_s
            start = since if since >= paused else paused
            if now_s > start:
                x = done + rate * (now_s - start)
                done = work if work <= x else x
            left = work - done
            left = (left if left > 0.0 else 0.0) / rate
            if left > 1e9:
                left = 1e9
        else:
            left = 1e9
        if paused > now_s:
            left += paused - now_s
        for server, n in run.allocation.workers:
            weight = round(n * per_task) * left
            total[server] += weight
            squares[server] += weight * left
    values = [
        1.0 - s * s / (g * q) if q > 0 else 0.0
        for g, s, q in zip(gpus, total, squares, strict=True)
        if g > 0
    ]
    return float(np.mean(values))  # NumPy's (pairwise) sum, as before


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index ``(Σx)² / (n·Σx²)``: 1 when all equal, 1/n when one takes all."""
    x = np.asarray(values, dtype=np.float64)
    sq = float(np.dot(x, x))
    if x.size == 0 or sq <= 0:
        return 1.0
    return float(x.sum()) ** 2 / (x.size * sq)
