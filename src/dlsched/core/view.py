"""`ClusterView`: the read-only picture of the cluster a scheduler decides from."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, overload

from dlsched.core.cluster import Cluster
from dlsched.core.decision import Allocation, Status
from dlsched.core.gpu_types import TypeSpeeds
from dlsched.core.job import JobRun, JobSpec

SpeedOracle = Callable[[JobSpec, Allocation], float]


class ReadOnlyList(Sequence[JobRun]):
    """A list of jobs a scheduler can read but not change (the engine's own, not a copy).

    Indexing and slicing give what a list gives; there is no ``append``, ``sort``, ``clear`` or
    item assignment, so a scheduler cannot corrupt the engine's queue through its view.

    Args:
        items: the engine's list.
        start: the view shows ``items[start:]`` (the engine's queue may keep started jobs
            before its head for a while).
    """

    __slots__ = ("_items", "_start")

    def __init__(self, items: list[JobRun], start: int = 0) -> None:
        self._items = items
        self._start = start

    @overload
    def __getitem__(self, index: int) -> JobRun: ...
    @overload
    def __getitem__(self, index: slice) -> list[JobRun]: ...
    def __getitem__(self, index: int | slice) -> JobRun | list[JobRun]:
        start = self._start
        if not start:
            return self._items[index]
        if type(index) is int and index >= 0:
            return self._items[start + index]
        if isinstance(index, slice):
            first, stop, step = index.indices(len(self))
            if step == 1:
                return self._items[start + first : start + stop]
            return [self._items[start + i] for i in range(first, stop, step)]
        i = operator.index(index)
        if i < 0:
            i += len(self)
            if i < 0:
                raise IndexError("list index out of range")
        return self._items[start + i]

    def __len__(self) -> int:
        return len(self._items) - self._start

    def __iter__(self) -> Iterator[JobRun]:
        if not self._start:
            return iter(self._items)
        items = self._items  # islice would step over the started jobs one by one
        return map(items.__getitem__, range(self._start, len(items)))

    def __reversed__(self) -> Iterator[JobRun]:
        return islice(reversed(self._items), len(self))

    def __contains__(self, item: Any) -> bool:
        if not self._start:
            return item in self._items
        return any(x is item or x == item for x in self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReadOnlyList | list | tuple):
            return list(self) == list(other)
        return False

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ReadOnlyList({list(self)!r})"


@dataclass(frozen=True, slots=True)
class QueueChanges:
    """How the pending list changed since the previous scheduling point of the same run.

    A backend that can say it (the simulator) attaches one to each view, so that a policy
    keeping its own ordered structure of the pending jobs updates it instead of re-ranking the
    whole queue (`dlsched.schedulers.pending_queue`). A policy must check ``run`` and ``point``
    before trusting it: the changes follow from the view of point ``point - 1`` of run ``run``
    only; anything else (another run, a skipped point, no changes at all) means rebuilding
    from ``pending``.

    Attributes:
        run: identifies the run (compare with ``is``; a new object for every run).
        point: the scheduling point's number in the run (1, 2, ...).
        log: ``(job, entered)`` in the order they happened: ``entered`` True when the job
            joined the pending list (arrived or was preempted), False when it left it (started).
    """

    run: object
    point: int
    log: tuple[tuple[JobRun, bool], ...]


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What a real scheduler could observe at a scheduling point.

    Attributes:
        now_s: current time, seconds.
        cluster: capacities, free resources and allocations (read it; do not call ``allocate``).
        pending: submitted jobs holding no resources, in arrival order (includes suspended ones);
            read-only.
        running: jobs holding resources, read-only; the simulator lists them in the order they
            last started, the live runtime in arrival order (sort them, or use `jobs`, where the
            order matters).
        interval_s: time until the next periodic scheduling point (None if event-driven only).
        last_status: job id → placement outcome of the previous decision, where it failed
            (read-only).
        changes: how ``pending`` changed since the previous point, where the backend knows
            (`QueueChanges`); None otherwise.
        type_speeds: on a heterogeneous cluster, each job's *estimated* speed on each GPU type
            (`TypeSpeeds`; the servers' types are ``cluster.server_types``); None otherwise.
    """

    now_s: float
    cluster: Cluster
    pending: Sequence[JobRun]
    running: Sequence[JobRun]
    interval_s: float | None = None
    last_status: dict[int, Status] = field(default_factory=dict)
    _oracle: SpeedOracle | None = None
    changes: QueueChanges | None = None
    type_speeds: TypeSpeeds | None = None

    def jobs(self) -> list[JobRun]:
        """Every active job (running and pending), in arrival order."""
        merged = [*self.running, *self.pending]
        merged.sort(key=lambda r: (r.spec.submit_time_s, r.spec.job_id))
        return merged

    def oracle_speed(self, spec: JobSpec, alloc: Allocation) -> float:
        """ORACLE: the true, noise-free speed (work units/s) of ``spec`` under ``alloc``.

        A real scheduler cannot know this. Only schedulers labelled ``is_oracle = True`` get it;
        for the rest it raises PermissionError.
        """
        if self._oracle is None:
            raise PermissionError(
                "oracle_speed is only given to schedulers labelled is_oracle = True"
            )
        return self._oracle(spec, alloc)
