"""Pending jobs kept in priority order between scheduling points, one sorted lane per task shape.

Why: on Philly's large virtual clusters thousands of jobs wait at every scheduling point, and a
priority policy that sorts the whole queue and checks every job at every point spends almost
all of a run doing so (SIF took 157 s on ``philly:6214e9``, continuous LAS more than 12 min).

How, without changing any decision:

* `PendingQueue.update` follows the engine's `QueueChanges` (the jobs that joined or left the
  pending list since the previous point) instead of re-reading ``view.pending``; where a view
  carries no usable changes (the live runtime, a skipped point, another run) it rebuilds from
  ``view.pending``, which is what the policies did at every point before.
* A job's key is computed once, when it joins the queue, so it must not change while the job
  waits (a policy whose key for a waiting job does change calls `PendingQueue.rekey`). Keys
  must be totally ordered and unique per job (end them with the job id).
* Jobs are held in one sorted lane per *shape* (task demands and counts, `Shape`), merged in
  key order by `PendingQueue.candidates`. The order-preserving loops of
  `dlsched.schedulers.ordered` only ever take resources while they walk the order, so once a
  job of some shape has not fit, no later job of that shape can: the loop marks the shape
  *dead* and the merge drops the whole lane instead of visiting its jobs one by one. A point
  then costs about the jobs started plus the number of shapes, not the length of the queue.
"""

from __future__ import annotations

import bisect
import heapq
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from dlsched.core import Allocation, ClusterView, JobRun, JobSpec
from dlsched.schedulers.common import requested, requested_size
from dlsched.schedulers.count_walk import UniformTasks
from dlsched.schedulers.walk_memo import WalkMemo

Key = tuple[Any, ...]
"""A job's priority, smallest first; totally ordered and unique per job."""

Shape = tuple[tuple[float, float, float], tuple[float, float, float], int, int]
"""(worker demand, PS demand, workers, PS): jobs of one shape take the same resources."""

KeyOf = Callable[[JobRun, float], Key]
"""A job's key at a time (seconds); for a waiting job it must not depend on the time."""

SizeOf = Callable[[JobRun], tuple[int, int]]
"""(workers, PS) a waiting job would start with."""


def shape_of(spec: JobSpec, workers: int, ps: int) -> Shape:
    """The shape of ``workers`` workers and ``ps`` PS of ``spec``."""
    return (spec.worker_demand.as_tuple(), spec.ps_demand.as_tuple(), workers, ps)


class _Lane:
    """The waiting jobs of one shape, by key."""

    __slots__ = ("keys", "runs", "shape")

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.keys: list[Key] = []
        self.runs: list[JobRun] = []


class PendingQueue:
    """The pending jobs in key order, kept up to date from the view's `QueueChanges`.

    Args:
        key: a job's priority (smallest first) at a time; for a waiting job it must be the same
            whatever the time.
        size: (workers, PS) a waiting job starts with; it decides the job's shape.
        flag: jobs to count in `flagged` (e.g. those whose key is not fixed while they wait,
            for which the policy must fall back to sorting the queue itself).
        running_keys: every running job's key at a time at once, the same as ``key`` job by
            job (for a policy that keys hundreds of running jobs at every point).
    """

    def __init__(
        self,
        key: KeyOf,
        size: SizeOf,
        flag: Callable[[JobRun], bool] | None = None,
        running_keys: Callable[[Sequence[JobRun], float], list[Key]] | None = None,
    ) -> None:
        self.key = key
        self.running_keys = running_keys
        self.size = size
        self.flag = flag
        self.clear()

    def clear(self) -> None:
        """Forget every job (a new run)."""
        self._lanes: dict[Shape, _Lane] = {}
        self._where: dict[int, tuple[_Lane, Key]] = {}
        self._run: object = None
        self._point = -1
        self.flagged = 0
        """How many jobs in the queue ``flag`` picks out."""
        self.rebuilds = 0
        """How many times the queue was rebuilt from ``view.pending`` (for tests)."""
        self.applied: tuple[tuple[JobRun, bool], ...] | None = None
        """What the last `update` did: the changes it applied in order (``(job, entered)``),
        or None where it rebuilt the queue (a policy's own structures must start afresh)."""
        self.memo = WalkMemo()
        """The last choosing walk of `dlsched.schedulers.ordered.run_in_order` over `rank`."""
        self.uniform = UniformTasks()
        """Whether every shape this queue made (waiting and running jobs) has one worker
        demand and no PS: then the choosing walk counts tasks (`dlsched.schedulers.count_walk`)."""
        self.counted: tuple[object, int, list[tuple[float, ...]], int] | None = None
        """(cluster, its version, start rows, tasks of `uniform`'s demand free there) of the
        last counted walk (`dlsched.schedulers.ordered`; one demand a run)."""
        self._held: dict[int, tuple[Allocation, Shape]] = {}
        # job id -> (spec, its shape at the requested size): a preempted job re-enters the
        # queue many times (under LAS, tens of times a job), its shape the same each time
        self._requested: dict[int, tuple[JobSpec, Shape]] = {}
        self._shapes: dict[Shape, Shape] = {}

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, run: JobRun) -> bool:
        found = self._where.get(run.job_id)
        return found is not None and found[0].runs[self._index(found)] is run

    def update(self, view: ClusterView) -> PendingQueue:
        """Bring the queue to ``view.pending`` (from its changes where they follow on from the
        last update, else afresh) and return it."""
        changes = view.changes
        now = view.now_s
        self.applied = ()
        if changes is None or changes.run is not self._run or changes.point < self._point:
            self._rebuild(view.pending, now)
        elif changes.point == self._point + 1:
            for run, entered in changes.log:
                if entered:
                    self.add(run, now)
                else:
                    self.remove(run)
            self.applied = changes.log
        elif changes.point != self._point:  # a point was skipped: its changes are lost
            self._rebuild(view.pending, now)
        if changes is None:
            self._run, self._point = None, -1
        else:
            self._run, self._point = changes.run, changes.point
        return self

    def _rebuild(self, pending: Iterable[JobRun], now_s: float) -> None:
        self.applied = None
        self._lanes = {}
        self._where = {}
        self.flagged = 0
        self.rebuilds += 1
        for run in pending:
            self.add(run, now_s)

    def add(self, run: JobRun, now_s: float) -> None:
        """Put a waiting job in the queue, keyed at ``now_s``."""
        spec = run.spec
        if self.size is requested_size:
            known = self._requested.get(spec.job_id)
            if known is None or known[0] is not spec:
                shape = shape_of(spec, *requested(spec))
                shape = self._shapes.setdefault(shape, shape)  # one object per shape: memory
                known = self._requested[spec.job_id] = (spec, shape)
                self.uniform.note(shape)
            shape = known[1]
        else:
            shape = shape_of(spec, *self.size(run))
            self.uniform.note(shape)
        lane = self._lanes.get(shape)
        if lane is None:
            lane = self._lanes[shape] = _Lane(shape)
        key = self.key(run, now_s)
        keys = lane.keys
        if not keys or keys[-1] < key:
            keys.append(key)  # in key order, the usual case for arrivals
            lane.runs.append(run)
        else:
            i = bisect.bisect_left(keys, key)
            keys.insert(i, key)
            lane.runs.insert(i, run)
        self._where[spec.job_id] = (lane, key)
        if self.flag is not None and self.flag(run):
            self.flagged += 1

    def remove(self, run: JobRun) -> None:
        """Take a job out of the queue (it started)."""
        found = self._where.pop(run.job_id)
        i = self._index(found)
        lane = found[0]
        del lane.keys[i]
        del lane.runs[i]
        if self.flag is not None and self.flag(run):
            self.flagged -= 1

    def rekey(self, run: JobRun, now_s: float) -> None:
        """The job's key changed while it waited: place it again."""
        self.remove(run)
        self.add(run, now_s)

    @staticmethod
    def _index(found: tuple[_Lane, Key]) -> int:
        lane, key = found
        return bisect.bisect_left(lane.keys, key)

    def __iter__(self) -> Iterator[JobRun]:
        """Every waiting job in key order."""
        return (run for run, _ in self.candidates(set()))

    def lanes(self) -> list[tuple[Shape, list[Key], list[JobRun]]]:
        """Each shape's waiting jobs with their keys, in key order (read-only lists)."""
        return [(lane.shape, lane.keys, lane.runs) for lane in self._lanes.values() if lane.keys]

    def by_shape(self) -> list[tuple[Shape, list[JobRun]]]:
        """The waiting jobs grouped by shape (each group in key order; read-only lists)."""
        return [(lane.shape, lane.runs) for lane in self._lanes.values() if lane.runs]

    def candidates(
        self, dead: set[Shape], running: Sequence[tuple[Key, JobRun, Shape]] = ()
    ) -> Iterator[tuple[JobRun, Shape]]:
        """The waiting jobs and ``running`` (sorted by key) merged in key order, with their
        shapes; a shape the caller adds to ``dead`` while iterating is skipped from then on
        (whole lanes of waiting jobs at once, running jobs one by one)."""
        lanes = [lane for lane in self._lanes.values() if lane.keys and lane.shape not in dead]
        heap: list[tuple[Key, int]] = [(lane.keys[0], i) for i, lane in enumerate(lanes)]
        positions = [0] * len(lanes)
        n_lanes = len(lanes)
        if running:
            heap.append((running[0][0], n_lanes))
            positions.append(0)
        heapq.heapify(heap)
        while heap:
            i = heap[0][1]
            pos = positions[i]
            if i == n_lanes:  # the running jobs
                _, run, shape = running[pos]
                if shape not in dead:
                    yield run, shape
                pos += 1
                if pos == len(running):
                    heapq.heappop(heap)
                else:
                    positions[i] = pos
                    heapq.heapreplace(heap, (running[pos][0], i))
                continue
            lane = lanes[i]
            shape = lane.shape
            if shape in dead:
                heapq.heappop(heap)
                continue
            yield lane.runs[pos], shape
            pos += 1
            if pos == len(lane.keys) or shape in dead:
                heapq.heappop(heap)
            else:
                positions[i] = pos
                heapq.heapreplace(heap, (lane.keys[pos], i))

    def rank(self, view: ClusterView) -> Ranking:
        """Every active job in key order: the queue (`update` it first) merged with the
        running jobs, keyed now (their keys may change while they run) and sorted here."""
        now = view.now_s
        key = self.key
        held = self._held
        running = []
        runs = view.running
        if self.running_keys is not None:
            keys = self.running_keys(runs, now)
        else:
            keys = [key(run, now) for run in runs]
        for run_key, run in zip(keys, runs, strict=True):
            known = held.get(run.job_id)
            if known is None or known[0] is not run.allocation:
                running.append((run_key, run, self.held_shape(run)))
            else:
                running.append((run_key, run, known[1]))
        if len(held) > 2 * len(running) + 64:
            self.forget_held(runs)
        running.sort(key=_FIRST)
        return Ranking(self, running)

    def held_shape(self, run: JobRun) -> Shape:
        """The shape of what a running job holds: one object per holding, so that the walk
        memo compares it by identity (for a policy that ranks its running jobs itself)."""
        alloc = run.allocation
        known = self._held.get(run.job_id)
        if known is None or known[0] is not alloc:
            known = self._held[run.job_id] = (
                alloc,
                shape_of(run.spec, alloc.num_workers, alloc.num_ps),
            )
            self.uniform.note(known[1])
        return known[1]

    def forget_held(self, running: Iterable[JobRun]) -> None:
        """Forget the held shapes of the jobs not in ``running`` (no longer running)."""
        ids = {run.job_id for run in running}
        self._held = {job: v for job, v in self._held.items() if job in ids}


_FIRST = operator.itemgetter(0)
"""An item's key (sorting by it calls no Python function per item)."""


class Ranking:
    """Every active job in key order: a `PendingQueue` and the running jobs, sorted by key.

    Attributes:
        queue: the waiting jobs.
        running: ``(key, job, shape)`` of each running job (shape of what it holds), by key.
    """

    __slots__ = ("queue", "running")

    def __init__(self, queue: PendingQueue, running: list[tuple[Key, JobRun, Shape]]) -> None:
        self.queue = queue
        self.running = running

    def candidates(self, dead: set[Shape]) -> Iterator[tuple[JobRun, Shape]]:
        """As `PendingQueue.candidates`, running jobs included."""
        return self.queue.candidates(dead, self.running)

    def __iter__(self) -> Iterator[JobRun]:
        """Every active job in key order."""
        return (run for run, _ in self.candidates(set()))
