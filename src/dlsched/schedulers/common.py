"""Helpers shared by heuristic schedulers (no policy logic here)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from dlsched.core import Allocation, Arch, Cluster, JobRun, JobSpec, Resources
from dlsched.core.cluster import capacity_for, tasks_that_fit

_EPS = 1e-9
_UNBOUNDED = 1 << 30


_VECTOR_SERVERS = 16
"""Above this many servers `FreeTracker` counts fits with NumPy (below, Python lists are faster)."""


class FreeTracker:
    """A scratch copy of free resources, so a scheduler can check what still fits as it decides.

    It places tasks greedily where most of them fit, which approximates the engine's placement;
    when the two disagree the engine's placement reports a `Status` and nothing over-allocates.
    Plain Python lists (clusters have tens of servers): a scheduler calls `take` once per task
    bundle, thousands of times an episode, where NumPy's per-call overhead would dominate. The
    copy is made on write, one server at a time, and fit counts start from the cluster's own
    (`Cluster.fits`), recounted only on the servers this copy changed.

    Attributes:
        free: per server, ``[gpu, cpu, mem]`` still free in this scratch copy (read-only rows).
    """

    def __init__(self, cluster: Cluster, release: Iterable[JobRun] = ()) -> None:
        self._cluster = cluster
        self.free: list[list[float]] = cluster.free_rows()
        self._touched: set[int] = set()  # servers whose row differs from the cluster's
        self._counts: dict[tuple[float, float, float], list[int]] = {}
        for run in release:
            self._give_back(run.spec, run.allocation)

    @classmethod
    def from_rows(cls, cluster: Cluster, rows: Sequence[Sequence[float]]) -> FreeTracker:
        """A scratch copy whose free resources are ``rows`` (one per server of ``cluster``, not
        changed in place by the tracker), e.g. a state saved from another tracker's `free`."""
        tracker = cls(cluster)
        tracker.free = list(rows)  # type: ignore[arg-type]
        tracker._touched = set(range(len(tracker.free)))
        return tracker

    def _give_back(self, spec: JobSpec, alloc: Allocation) -> None:
        for tasks, demand in ((alloc.workers, spec.worker_demand), (alloc.ps, spec.ps_demand)):
            need = demand.as_tuple()
            for server, n in tasks:
                self._add(server, need, n)

    def _counts_for(self, need: tuple[float, float, float]) -> list[int]:
        """Tasks of ``need`` that fit on each server (cached per task shape)."""
        counts = self._counts.get(need)
        if counts is None:
            touched = self._touched
            if len(touched) > _VECTOR_SERVERS:
                counts = capacity_for(self.free, need).tolist()
            else:
                counts = list(self._cluster.fits(need))
                free = self.free
                for server in touched:
                    counts[server] = tasks_that_fit(free[server], need)
            self._counts[need] = counts
        return counts

    def _add(self, server: int, need: tuple[float, float, float], n: int) -> None:
        """Change server ``server``'s free resources by ``n`` tasks of ``need`` (n < 0 takes)."""
        row = self.free[server]
        row = self.free[server] = [
            row[0] + need[0] * n,
            row[1] + need[1] * n,
            row[2] + need[2] * n,
        ]
        self._touched.add(server)
        for shape, counts in self._counts.items():
            counts[server] = tasks_that_fit(row, shape)

    def _place(self, n: int, need: tuple[float, float, float]) -> list[tuple[int, int]] | None:
        """Place ``n`` tasks, as many as fit on the server where most fit first (lowest id on
        ties) — `dlsched.placement.tasks.grow`'s rule with a most-room chooser and
        ``one_at_a_time=False``. Returns what went where, or None (and no change)."""
        if not (need[0] > 0 or need[1] > 0 or need[2] > 0):
            return []
        counts = self._counts_for(need)
        if sum(counts) < n:
            return None
        placed: list[tuple[int, int]] = []
        left = n
        while left > 0:
            best = max(counts)
            if best <= 0:  # float round-off only; undo and refuse
                self._unplace(placed, need)
                return None
            server = counts.index(best)
            k = min(left, best)
            self._add(server, need, -k)
            placed.append((server, k))
            left -= k
        return placed

    def _unplace(self, placed: list[tuple[int, int]], need: tuple[float, float, float]) -> None:
        for server, k in placed:
            self._add(server, need, k)

    def take(self, spec: JobSpec, num_workers: int, num_ps: int = 0) -> bool:
        """Reserve that many tasks if they all fit; leave everything unchanged otherwise."""
        worker_need = spec.worker_demand.as_tuple()
        workers = self._place(num_workers, worker_need) if num_workers else []
        if workers is None:
            return False
        if num_ps and self._place(num_ps, spec.ps_demand.as_tuple()) is None:
            self._unplace(workers, worker_need)
            return False
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
            self._add(server, (row[0], row[1], row[2]), -1)
        return True

    def fits(self, demand: Resources) -> int:
        """How many tasks of ``demand`` would fit in total, over all servers."""
        need = demand.as_tuple()
        if not any(x > 0 for x in need):
            return _UNBOUNDED
        return sum(tasks_that_fit(row, need) for row in self.free)

    def total(self) -> Resources:
        """Free resources summed over servers."""
        return Resources(*(sum(row[r] for row in self.free) for r in range(3)))


def requested(spec: JobSpec) -> tuple[int, int]:
    """The (workers, PS) the user asked for."""
    return spec.num_workers, spec.num_ps if spec.arch is Arch.PS else 0


def requested_size(run: JobRun) -> tuple[int, int]:
    """The (workers, PS) the user asked for."""
    return requested(run.spec)


class RoomCounts:
    """Each server's count of tasks of a demand in ``free`` (`tasks_that_fit`; one list a
    demand, counted when first asked), kept equal to ``free`` by `recount` after each change:
    a policy that packs or gang-fits many jobs at one point then copies or reads a list
    instead of counting every server again for each job."""

    __slots__ = ("changed", "counted", "free", "rooms")

    def __init__(
        self,
        free: list[list[float]],
        counted: Callable[[tuple[float, float, float]], list[int]] | None = None,
    ) -> None:
        """``counted``: the counts of each demand on ``free`` as it is now, where the caller
        has them kept (`Cluster.fits`, while ``free`` is the cluster's free resources): a
        demand first asked is then copied from them and the servers recounted since."""
        self.free = free
        self.rooms: dict[tuple[float, float, float], list[int]] = {}
        self.counted = counted
        self.changed: set[int] = set()
        """Servers recounted (rows replaced) since ``counted`` was right."""

    def of(self, need: tuple[float, float, float]) -> list[int]:
        """The counts for ``need`` (the caller does not change the list)."""
        room = self.rooms.get(need)
        if room is None:
            free = self.free
            if self.counted is None:
                room = [tasks_that_fit(row, need) for row in free]
            else:
                room = list(self.counted(need))
                for server in self.changed:
                    room[server] = tasks_that_fit(free[server], need)
            self.rooms[need] = room
        return room

    def recount(self, servers: Iterable[int]) -> None:
        """Count again ``servers``, whose rows of ``free`` changed (or were replaced)."""
        free, servers = self.free, tuple(servers)
        self.changed.update(servers)
        for need, room in self.rooms.items():
            for server in servers:
                room[server] = tasks_that_fit(free[server], need)
