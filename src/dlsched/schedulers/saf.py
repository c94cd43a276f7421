"""SAF, Shortest Actual time job First (SCED²'s baseline) — an ORACLE.

Rule: at every scheduling point, for each pending job that fits, work out the placement it
would get now by packing (SCED² Fig. 2: the tightest server that takes all its GPUs, else the
roomiest server and repeat) and its actual execution time there — remaining work over its true
speed on that placement, from ``view.oracle_speed``, which a real scheduler cannot know (SCED²:
"we assume there is an oracle that can tell the scheduler what placement each job will be
assigned and the corresponding mini-batch time"). Start the job with the shortest actual time
on exactly that placement, then repeat with what is left until no pending job fits.
Non-preemptive, work-conserving. The placement is always packing, whatever ``--placement``
says, because it is part of what the oracle answers.

Source: Luan et al., SCED² §IV-A baselines.
"""

from __future__ import annotations

import heapq
import math
from typing import ClassVar

from dlsched.core import Allocation, ClusterView, Decision, JobRun, JobSpec, Target
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.common import RoomCounts, tasks_that_fit
from dlsched.schedulers.ordered import requested_size
from dlsched.schedulers.pending_queue import PendingQueue, Shape, shape_of
from dlsched.schedulers.registry import register


def pack_tasks(
    free: list[list[float]],
    need: tuple[float, float, float],
    count: int,
    room: list[int] | None = None,
) -> list[tuple[int, int]] | None:
    """Packing placement of ``count`` tasks (SCED² Fig. 2); takes them from ``free`` in place
    (the rows of the servers it takes from are replaced, never changed in place).

    Args:
        room: ``tasks_that_fit(free[s], need)`` for every server ``s``, if the caller has them
            (not changed); None: counted here.

    Returns:
        ``(server, tasks)`` pairs, or None (and ``free`` unchanged) if they do not fit.
    """
    if count <= 0:
        return []
    # then only the servers taken from are counted again
    room = [tasks_that_fit(row, need) for row in free] if room is None else list(room)
    changed: dict[int, list[float]] = {}  # server -> its row after the tasks placed so far
    placed: list[tuple[int, int]] = []
    left = count
    while left > 0:
        # the tightest server that takes them all (lowest index on ties), else the roomiest
        # (lowest index on ties): `index` finds the first server with that count
        tightest = min((n for n in room if n >= left), default=None)
        if tightest is not None:
            server = room.index(tightest)
        else:
            server = room.index(max(room))
            if room[server] <= 0:
                return None
        n = min(left, room[server])
        row = changed.get(server)
        if row is None:
            row = changed[server] = list(free[server])
        for r in range(3):
            row[r] -= need[r] * n
        room[server] = tasks_that_fit(row, need)
        placed.append((server, n))
        left -= n
    for server, row in changed.items():  # new rows: rows are never changed in place
        free[server] = row
    return placed


def pack_allocation(
    free: list[list[float]],
    spec: JobSpec,
    num_workers: int,
    num_ps: int,
    worker_room: list[int] | None = None,
) -> Allocation | None:
    """Packing placement of a job's workers then PS, taken from ``free``; None if no fit.
    ``worker_room``: each server's count of the job's worker tasks in ``free``, if known."""
    trial = list(free)  # `pack_tasks` replaces rows, never changes them
    workers = pack_tasks(trial, spec.worker_demand.as_tuple(), num_workers, worker_room)
    ps = pack_tasks(trial, spec.ps_demand.as_tuple(), num_ps) if workers is not None else None
    if workers is None or ps is None:
        return None
    free[:] = trial
    return Allocation.of(workers, ps)


class Saf(BaseScheduler):
    """ORACLE: shortest actual execution time (true speed on its packing placement) first."""

    name = "saf"
    preemptive: ClassVar[bool] = False
    is_oracle: ClassVar[bool] = True

    def __init__(self) -> None:
        # waiting jobs grouped by shape between points (jobs of one shape get one packing)
        self.queue = PendingQueue(arrival_key, requested_size)
        # per shape, its jobs ranked for each of its last packings (most recent last)
        self._ranked: dict[Shape, dict[Allocation, _Ranked]] = {}

    def reset(self) -> None:
        self.queue.clear()
        self._ranked = {}

    def decide(self, view: ClusterView) -> Decision:
        """Pick, again and again, the fitting job with the shortest actual time (module
        docstring), with the same picks as trying every waiting job at every pick:

        * jobs of one shape get the same packing from the same free resources, so each shape
          is packed once a pick, and a shape that does not fit is dropped for the rest of the
          point (as each of its jobs was);
        * a waiting job's actual time on a given placement does not change while it waits (its
          remaining work is fixed; the oracle's true speed is a function of the job and the
          placement), so each shape's jobs stay ranked for each of its last `KEPT_PACKINGS`
          packings, across points, updated from the queue's changes; they are ranked afresh
          only for a packing not among those.
        """
        queue = self.queue.update(view)
        now = view.now_s
        self._follow(queue.applied, view, now)
        decision = Decision()
        free = view.cluster.free_array.tolist()
        lanes = dict(queue.by_shape())
        groups = list(lanes)
        picked: set[int] = set()  # stay ranked: a job whose start fails waits on
        rooms = RoomCounts(free)
        touched: dict[int, _Ranked] = {}  # the rankings `top` was asked at this point
        while groups:
            best: tuple[_Key, JobRun, Allocation, Shape] | None = None
            fitting = []
            for shape in groups:
                runs = lanes[shape]
                spec = runs[0].spec
                alloc = pack_allocation(
                    list(free), spec, shape[2], shape[3], rooms.of(spec.worker_demand.as_tuple())
                )
                if alloc is None:
                    continue
                rankings = self._ranked.setdefault(shape, {})
                kept = rankings.pop(alloc, None)
                if kept is None:
                    kept = _Ranked(alloc, runs, view, now)
                    if len(rankings) >= KEPT_PACKINGS:
                        del rankings[next(iter(rankings))]  # the least recently used
                rankings[alloc] = kept
                touched[id(kept)] = kept
                top = kept.top(picked)
                if top is None:
                    continue  # every job of the shape was picked at this point
                fitting.append(shape)
                if best is None or top[0] < best[0]:
                    best = (top[0], top[1], alloc, shape)
            if best is None:
                break
            _, run, alloc, shape = best
            picked.add(run.job_id)
            need = run.spec.worker_demand.as_tuple()
            pack_allocation(free, run.spec, alloc.num_workers, alloc.num_ps, rooms.of(need))
            rooms.recount({s for s, _ in alloc.workers} | {s for s, _ in alloc.ps})
            decision.targets[run.job_id] = Target(alloc.num_workers, alloc.num_ps, alloc)
            groups = fitting
        for kept in touched.values():
            kept.restore()
        return decision

    def _follow(
        self, applied: tuple[tuple[JobRun, bool], ...] | None, view: ClusterView, now: float
    ) -> None:
        """Bring the rankings to the queue: jobs that joined are ranked in their shape, those
        that left are forgotten; all are dropped where the queue was rebuilt."""
        if applied is None:
            self._ranked = {}
            return
        for run, entered in applied:
            shape = shape_of(run.spec, *requested_size(run))
            for kept in self._ranked.get(shape, {}).values():
                if entered:
                    kept.push(run, view, now)
                else:
                    kept.drop(run.job_id)

    @staticmethod
    def _key(run: JobRun, alloc: Allocation, view: ClusterView, now: float) -> _Key:
        """Actual time on ``alloc`` (true speed), then arrival."""
        speed = view.oracle_speed(run.spec, alloc)
        actual = run.remaining_work(now) / speed if speed > 0 else math.inf
        return (actual, run.spec.submit_time_s, run.job_id)


_Key = tuple[float, float, int]

KEPT_PACKINGS = 16
"""Packings per shape whose rankings are kept (a shape's packing depends on which servers
are busy, so a few recur: a one-GPU job's is one of the servers)."""


class _Ranked:
    """One shape's waiting jobs by their actual time on one packing (a heap, with the jobs
    that left forgotten lazily)."""

    __slots__ = ("alloc", "aside", "heap", "keys")

    def __init__(
        self, alloc: Allocation, runs: list[JobRun], view: ClusterView, now: float
    ) -> None:
        self.alloc = alloc
        self.heap = [(Saf._key(run, alloc, view, now), run) for run in runs]
        heapq.heapify(self.heap)
        self.keys = {run.job_id: key for key, run in self.heap}
        self.aside: list[tuple[_Key, JobRun]] = []  # picked at this point

    def push(self, run: JobRun, view: ClusterView, now: float) -> None:
        key = Saf._key(run, self.alloc, view, now)
        if self.keys.get(run.job_id) != key:  # (the same entry is in the heap already)
            self.keys[run.job_id] = key
            heapq.heappush(self.heap, (key, run))

    def drop(self, job_id: int) -> None:
        self.keys.pop(job_id, None)

    def top(self, picked: set[int]) -> tuple[_Key, JobRun] | None:
        """The waiting job with the shortest actual time not ``picked``, or None."""
        heap, keys = self.heap, self.keys
        while heap:
            key, run = heap[0]
            if keys.get(run.job_id) != key:
                heapq.heappop(heap)  # left the queue, or ranked again since
            elif run.job_id in picked:
                self.aside.append(heapq.heappop(heap))
            else:
                return heap[0]
        return None

    def restore(self) -> None:
        """Put back the jobs picked at this point (those that started leave at the next)."""
        for entry in self.aside:
            heapq.heappush(self.heap, entry)
        self.aside = []


def arrival_key(run: JobRun, _now_s: float) -> tuple[float, int]:
    """Arrival order (the groups' order does not matter: keys end with the job id)."""
    return (run.spec.submit_time_s, run.job_id)


@register(
    "saf",
    setting="fixed-GPU (sched2, philly, trace)",
    source="SCED² §IV-A",
    description="(oracle) shortest actual time on the packing placement it would get",
)
def _make(_arg: str | None) -> Scheduler:
    return Saf()
