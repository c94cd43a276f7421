"""Helpers shared by heuristic schedulers (no policy logic here)."""

from __future__ import annotations

import math

from dlsched.core import Allocation, Arch, Cluster, JobRun, JobSpec, Resources

_EPS = 1e-9
_UNBOUNDED = 1 << 30


def _fits(free: list[float], need: tuple[float, float, float]) -> int:
    """How many tasks of ``need`` fit in ``free`` (as `dlsched.placement.base.capacity_for`)."""
    best = _UNBOUNDED
    for r in range(3):
        want = need[r]
        if want > 0:
            n = math.floor((free[r] + _EPS) / want)
            if n < best:
                best = n
    return best if best > 0 else 0


class FreeTracker:
    """A scratch copy of free resources, so a scheduler can check what still fits as it decides.

    It places tasks greedily where most of them fit, which approximates the engine's placement;
    when the two disagree the engine's placement reports a `Status` and nothing over-allocates.
    Plain Python lists (clusters have tens of servers): a scheduler calls `take` once per task
    bundle, thousands of times an episode, where NumPy's per-call overhead would dominate.

    Attributes:
        free: per server, ``[gpu, cpu, mem]`` still free in this scratch copy.
    """

    def __init__(self, cluster: Cluster, release: list[JobRun] | None = None) -> None:
        self.free: list[list[float]] = cluster.free_array.tolist()
        for run in release or ():
            self._give_back(run.spec, run.allocation)

    def _give_back(self, spec: JobSpec, alloc: Allocation) -> None:
        for tasks, demand in ((alloc.workers, spec.worker_demand), (alloc.ps, spec.ps_demand)):
            need = demand.as_tuple()
            for server, n in tasks:
                row = self.free[server]
                for r in range(3):
                    row[r] += need[r] * n

    def take(self, spec: JobSpec, num_workers: int, num_ps: int = 0) -> bool:
        """Reserve that many tasks if they all fit; leave everything unchanged otherwise."""
        trial = [row[:] for row in self.free]
        for n, demand in ((num_workers, spec.worker_demand), (num_ps, spec.ps_demand)):
            if n and not _grow(trial, n, demand.as_tuple()):
                return False
        self.free = trial
        return True

    def take_exact(self, spec: JobSpec, alloc: Allocation) -> bool:
        """Reserve ``alloc``'s tasks on exactly its servers if they fit there; else no change."""
        need: dict[int, list[float]] = {}
        for tasks, demand in ((alloc.workers, spec.worker_demand), (alloc.ps, spec.ps_demand)):
            vec = demand.as_tuple()
            for server, n in tasks:
                row = need.setdefault(server, [0.0, 0.0, 0.0])
                for r in range(3):
                    row[r] += vec[r] * n
        for server, row in need.items():
            have = self.free[server]
            if any(row[r] > have[r] + _EPS for r in range(3)):
                return False
        for server, row in need.items():
            have = self.free[server]
            for r in range(3):
                have[r] -= row[r]
        return True

    def fits(self, demand: Resources) -> int:
        """How many tasks of ``demand`` would fit in total, over all servers."""
        need = demand.as_tuple()
        if not any(x > 0 for x in need):
            return _UNBOUNDED
        return sum(_fits(row, need) for row in self.free)

    def total(self) -> Resources:
        """Free resources summed over servers."""
        return Resources(*(sum(row[r] for row in self.free) for r in range(3)))


def _grow(free: list[list[float]], add: int, need: tuple[float, float, float]) -> bool:
    """Place ``add`` tasks, as many as fit on the server where most fit first (lowest id on ties).

    The same rule as `dlsched.placement.tasks.grow` with a most-room chooser and
    ``one_at_a_time=False``; changes ``free`` in place and returns False if they do not fit.
    Only the server just used changes, so only its count is recomputed.
    """
    counts = [_fits(row, need) for row in free]
    left = add
    while left > 0:
        best = max(counts)
        if best <= 0:
            return False
        server = counts.index(best)
        n = min(left, best)
        row = free[server]
        for r in range(3):
            row[r] -= need[r] * n
        counts[server] = _fits(row, need)
        left -= n
    return True


def requested(spec: JobSpec) -> tuple[int, int]:
    """The (workers, PS) the user asked for."""
    return spec.num_workers, spec.num_ps if spec.arch is Arch.PS else 0
