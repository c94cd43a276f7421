"""Each job shape's packing placement at one scheduling point of SCED²-L, packed once between
two starts (issue 31).

Why: the reservation scan, the walk's lane status and `LookaheadScheduler._startable` each
packed the job they looked at (SCED² Fig. 2, `pack_allocation`); on all of Philly ~77 % of
those packings repeated one already made for the same shape on the same free resources.

Why it is exact: `pack_allocation(free, spec, workers, 0, room)` reads of the job only its
worker demand and ``workers`` (with no parameter servers it does not read ``ps_demand``), and
of the cluster only ``free`` and ``room``, which change only when a job starts; the caller
calls `Packings.changed` then. The placement is a frozen `Allocation`, so handing the same
object to several jobs of one shape changes nothing.
"""

from __future__ import annotations

from dlsched.core import Allocation, JobSpec
from dlsched.schedulers.common import RoomCounts, tasks_that_fit
from dlsched.schedulers.saf import pack_allocation


class Packings:
    """Packing placements on ``rooms.free`` by shape (worker demand, workers), made when first
    asked and forgotten at `changed`.

    Args:
        rooms: the free (gpu, cpu, mem) rows and their room counts, kept equal to them by the
            caller (`RoomCounts.recount`).
    """

    __slots__ = ("_by_shape", "_outside", "_reserved", "rooms")

    def __init__(self, rooms: RoomCounts) -> None:
        self.rooms = rooms
        self._by_shape: dict[tuple[tuple[float, float, float], int], Allocation | None] = {}
        self._outside: dict[tuple[tuple[float, float, float], int], Allocation | None] = {}
        self._reserved: set[int] | None = None

    def of(self, spec: JobSpec, workers: int | None = None) -> Allocation | None:
        """``pack_allocation(list(free), spec, workers, 0, room)``: the job's packing placement
        with ``workers`` workers (default ``spec.num_workers``), or None if it does not fit."""
        need = spec.worker_demand.as_tuple()
        g = spec.num_workers if workers is None else workers
        shape = (need, g)
        by_shape = self._by_shape
        if shape in by_shape:
            return by_shape[shape]
        rooms = self.rooms
        alloc = by_shape[shape] = pack_allocation(list(rooms.free), spec, g, 0, rooms.of(need))
        return alloc

    def outside(self, spec: JobSpec, reserved: set[int]) -> Allocation | None:
        """The job's packing placement on the free resources with the ``reserved`` servers'
        rows zeroed (`LookaheadScheduler._around`'s ``pack_allocation(others, spec, workers,
        0)``), or None if it does not fit there. Counted from the room counts: a zeroed row's
        count is `tasks_that_fit` of a zero row, the other servers' are ``rooms``'."""
        if reserved is not self._reserved:
            self._reserved = reserved
            self._outside.clear()
        need = spec.worker_demand.as_tuple()
        shape = (need, spec.num_workers)
        outside = self._outside
        if shape in outside:
            return outside[shape]
        rows = [_ZERO if s in reserved else row for s, row in enumerate(self.rooms.free)]
        room = list(self.rooms.of(need))
        zero = tasks_that_fit(_ZERO, need)
        for server in reserved:
            room[server] = zero
        alloc = outside[shape] = pack_allocation(rows, spec, spec.num_workers, 0, room)
        return alloc

    def changed(self) -> None:
        """A job started: the free resources changed."""
        self._by_shape.clear()
        self._outside.clear()


_ZERO = [0.0, 0.0, 0.0]
"""A reserved server's row in `Packings.outside` (`pack_tasks` replaces rows, never changes
them, so one list serves every such row)."""
