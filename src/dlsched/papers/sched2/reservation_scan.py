"""SCED²-L's reservation scan without walking every old job (issue 31).

The rule (`dlsched.papers.sched2.lookahead`, 3) reserves for the longest-waiting job past
``reserve_after_h`` that cannot start now: its packing on the free servers fails, or it is
held for locality. On a busy Philly cluster hundreds of old jobs can start (and wait only for
the reserved servers), and the plain scan checked each of them at every point.

Why the index is exact: during the scan the free servers do not change, so whether a job's
packing fails, and over how many servers it packs (``k``), depends only on its shape (lane).
A job that packs is held iff ``est(k) > (1 + slow_tol) · T_best`` (the job and ``k`` only)
and ``now − submit < patience · T_best`` (true only up to some time: the wait only grows, so
a job found not patient is dropped for good). Old jobs (``not now − submit < limit``) are a
prefix of arrival order. So the first blocked job is the earliest, over lanes, of: the lane's
first job if its packing fails, else the lane's first job that is held for that lane's ``k``
(kept per lane and ``k`` in arrival order, built when first asked for). Lanes are looked at
in the order of their first job, and stop once past the best found, so no lane is packed that
the plain scan would not have packed.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

from dlsched.core import Allocation, JobRun
from dlsched.papers.sched2.lookahead_queue import Job, Lane, RankedQueue

Held = tuple[float, int, Job]
"""(submission time s, job id, job): arrival order."""


@dataclass(eq=False)
class _LaneIndex:
    fed: int = 0
    """How many of the lane's ``joined`` jobs are in ``arrivals``."""
    arrivals: list[Held] = field(default_factory=list)
    held: dict[int, tuple[list[Held], list[int]]] = field(default_factory=dict)
    """Per ``k``: the jobs slow on ``k`` servers and patient when fed, and how many of
    ``joined`` were fed."""


class ReservationScan:
    """The first blocked old job of the queue, as the plain scan finds it (module docstring).

    Args:
        slow: whether a job is slower than ``(1 + slow_tol) · T_best`` on ``k`` servers
            (the rule's float test).
        patience_s: a job's ``patience · T_best`` (s); it may be held while its wait is below.
    """

    def __init__(
        self, slow: Callable[[JobRun, int], bool], patience_s: Callable[[JobRun], float]
    ) -> None:
        self.slow = slow
        self.patience_s = patience_s
        self._rebuilds = -1
        self._queue: RankedQueue | None = None
        self._lanes: dict[Lane, _LaneIndex] = {}

    def first_blocked(
        self,
        queue: RankedQueue,
        now: float,
        limit_s: float,
        pack: Callable[[Job], Allocation | None],
    ) -> Job | None:
        """The earliest-arrival job with ``not now − submit < limit_s`` that cannot start
        now; ``pack(job)``: the packing of the job's lane (its first job is passed)."""
        if queue is not self._queue or queue.rebuilds != self._rebuilds:
            self._queue, self._rebuilds, self._lanes = queue, queue.rebuilds, {}
        firsts: list[tuple[float, int, Job, _LaneIndex]] = []
        for lane in queue.lanes.values():
            index = self._lanes.get(lane)
            if index is None:
                index = self._lanes[lane] = _LaneIndex()
            heap = index.arrivals
            joined = lane.joined
            while index.fed < len(joined):
                job = joined[index.fed]
                index.fed += 1
                if job.pos >= 0:
                    heapq.heappush(heap, (job.submit, job.job_id, job))
            while heap and heap[0][2].pos < 0:
                heapq.heappop(heap)
            if heap and not now - heap[0][0] < limit_s:
                firsts.append((heap[0][0], heap[0][1], heap[0][2], index))
        firsts.sort(key=lambda f: (f[0], f[1]))
        best: Held | None = None
        for submit, job_id, job, index in firsts:
            if best is not None and (submit, job_id) > (best[0], best[1]):
                break
            alloc = pack(job)
            if alloc is None:
                best = (submit, job_id, job)
                continue
            top = self._held(job.lane, index, alloc.num_servers, now)
            old = top is not None and not now - top[0] < limit_s
            if old and (best is None or (top[0], top[1]) < (best[0], best[1])):  # type: ignore[index]
                best = top
        return None if best is None else best[2]

    def _held(self, lane: Lane, index: _LaneIndex, k: int, now: float) -> Held | None:
        """The lane's first waiting job held on ``k`` servers at ``now``; None if none."""
        kept = index.held.get(k)
        if kept is None:
            kept = index.held[k] = ([], [0])
        heap, fed = kept
        joined = lane.joined
        slow, patience_s = self.slow, self.patience_s
        while fed[0] < len(joined):
            job = joined[fed[0]]
            fed[0] += 1
            if job.pos >= 0 and now - job.submit < patience_s(job.run) and slow(job.run, k):
                heapq.heappush(heap, (job.submit, job.job_id, job))
        while heap:
            job = heap[0][2]
            if job.pos >= 0 and now - job.submit < patience_s(job.run):
                return heap[0]
            heapq.heappop(heap)  # gone, or waited past its patience: never held again
        return None
