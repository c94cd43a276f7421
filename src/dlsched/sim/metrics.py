"""Metrics: JCT statistics, slowdown, SCED²'s effectiveness and fragmentation, Jain's fairness."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

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
    but computed from per-server sums of remaining time and its square (no matrix), with NumPy
    over the running jobs: it runs at every timeline sample. The per-server sums add the jobs'
    terms in the same order as a loop would (``np.bincount`` accumulates in input order).
    """
    gpus = cluster.capacity_array[:, 0].astype(int)
    has_gpus = gpus > 0
    if not has_gpus.any():
        return 0.0
    runs = [run for run in running if run.spec.worker_demand.gpu > 0]
    num_servers = cluster.num_servers
    total: npt.NDArray[np.float64] = np.zeros(num_servers)
    squares: npt.NDArray[np.float64] = np.zeros(num_servers)
    if runs:
        state = np.array(
            [
                (
                    run.rate,
                    run.progress_s,
                    run.paused_until_s,
                    run.progress_time_s,
                    run.spec.total_work,
                    run.spec.worker_demand.gpu,
                )
                for run in runs
            ]
        )
        rate, progress, paused, since, work, per_task = state.T
        start = np.maximum(since, paused)
        moving = (rate > 0) & (now_s > start)
        done = np.where(moving, np.minimum(work, progress + rate * (now_s - start)), progress)
        safe_rate = np.where(rate > 0, rate, 1.0)
        left = np.where(rate > 0, np.minimum(np.maximum(0.0, work - done) / safe_rate, 1e9), 1e9)
        left += np.maximum(0.0, paused - now_s)
        # one entry per (job, server) pair: server, GPUs there, the job's remaining time
        pairs = [run.allocation.workers for run in runs]
        servers = np.array([server for tasks in pairs for server, _ in tasks], dtype=np.intp)
        counts = np.array([n for tasks in pairs for _, n in tasks], dtype=np.float64)
        lengths = [len(tasks) for tasks in pairs]
        pair_left = np.repeat(left, lengths)
        k = np.round(counts * np.repeat(per_task, lengths))
        weight = k * pair_left
        total = np.asarray(np.bincount(servers, weight, num_servers), dtype=np.float64)
        squares = np.asarray(
            np.bincount(servers, weight * pair_left, num_servers), dtype=np.float64
        )
    sums = total[has_gpus]
    sq = squares[has_gpus]
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
