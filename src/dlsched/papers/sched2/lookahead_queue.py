"""SCED²-L's waiting queue kept between scheduling points, walked in the rule's order without
keying or trying every waiting job (issue 31).

Why: on ``philly:6214e9`` tens of thousands of jobs wait once the cluster is overloaded, and
the rule (`dlsched.papers.sched2.lookahead`) keyed every one of them and tried them in key
order at every point with a free GPU: hundreds of jobs tried a point, nearly all of them
one-server jobs that could only use the servers reserved for the blocked job and ran too long
to backfill there.

How, without changing any decision (the walk yields the same jobs in the same order as the
rule's full ranking, minus jobs the rule would have skipped without effect):

* **Promoted jobs** (waited ``promote_after`` times their best time) have the key
  ``-1e9 + submit / 1 h``: it does not depend on the time, and its order is arrival order
  (submission time, then job id). Promotion only ever happens once (the wait only grows), so
  promoted jobs are kept by arrival position across points, one lane per *shape* (worker
  demand and workers: what decides whether and where a job fits).
* **Other jobs** (key ``base − aging · log1p(wait / 1 h)``, which moves with the time) are keyed
  afresh, with the rule's float operations, only at a point where the walk reaches a lower
  bound of their keys (the smallest base minus ``aging`` times the longest wait, less a margin
  for rounding); with the shipped parameters that is only when the promoted jobs ran out.
* **Skipping a lane's jobs**: between two starts of a point nothing the rule reads changes, so
  whether a job of some shape can start is decided by the shape, except for one per-job
  number: a one-server job that fits only on reserved servers starts only if its estimated
  time on one server is at most ``backfill · t*``. Each lane's promoted jobs sit in a min-tree
  of that number by arrival position (`MinTree`), so the walk goes straight to the next one
  that may start. A job the walk yields is checked by the rule's own code.

The walk itself is `dlsched.papers.sched2.lookahead_walk.Walk`.
"""

from __future__ import annotations

import bisect
import heapq
import math
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from dlsched.core import ClusterView, JobRun

HOUR_S = 3600.0
BIG = sys.float_info.max
"""A present job's value in a tree at most this (an infinite or NaN estimate is stored as it):
absent positions hold +inf, so a query with ``thr = BIG`` finds every present job."""

NONE, RES, ANY = 0, 1, 2
"""A lane's jobs that may start: none; those whose one-server estimate is at most ``backfill ·
t*``; any. Each set holds the one before it."""

Entry = tuple[float, float, int, JobRun]
"""(key, submission time s, job id, job): the rule's ranking tuple, smallest first."""


class MinTree:
    """Values at positions ``0 .. size-1`` (+inf where none), and the first position at or
    after ``p`` whose value is at most ``thr``, in O(log size).

    Args:
        size: number of positions (a power of two).
    """

    __slots__ = ("size", "tree")

    def __init__(self, size: int) -> None:
        self.size = size
        self.tree = [math.inf] * (2 * size)

    def set(self, pos: int, value: float) -> None:
        tree = self.tree
        i = pos + self.size
        tree[i] = value
        i >>= 1
        while i:
            a, b = tree[2 * i], tree[2 * i + 1]
            m = a if a <= b else b
            if tree[i] == m:
                break  # this node, and so every node above, is unchanged
            tree[i] = m
            i >>= 1

    def first(self, pos: int, thr: float) -> int:
        """The first position ``>= pos`` with value ``<= thr``; -1 if none. (``thr`` NaN:
        every position, present or not, is a match: callers only pass NaN where any job
        yielded is then checked in full.)"""
        size = self.size
        if pos >= size:
            return -1
        tree = self.tree
        i = pos + size
        while tree[i] > thr:
            while i & 1:  # a right child: climb to the first ancestor that is a left child
                i >>= 1
            if i == 0:
                return -1
            i += 1
        while i < size:
            i <<= 1
            if tree[i] > thr:
                i += 1
        return i - size


@dataclass(eq=False)
class Job:
    """A waiting job as the queue holds it."""

    run: JobRun
    submit: float
    job_id: int
    lane: Lane
    base: float
    """The time-free part of the key (`LookaheadScheduler._learn`)."""
    one_server_s: float
    """Estimated seconds on one server (what ``backfill · t*`` is compared with)."""
    promote_s: float
    """``promote_after · T_best``: promoted once the wait reaches it."""
    pos: int = -1
    promoted: bool = False


@dataclass(eq=False)
class Lane:
    """The waiting jobs of one shape (worker demand, workers)."""

    need: tuple[float, float, float]
    workers: int
    spec: object
    """One job spec of the shape (what `pack_allocation` reads of it: the shape alone)."""
    tree: MinTree
    promoted: int = 0
    status_at: int = -1
    status: int = ANY
    head_at: int = -1
    head_cond: int = ANY
    joined: list[Job] = field(default_factory=list)
    """Every job that joined the lane, in joining order (`reservation_scan` follows it)."""
    waiting: dict[int, Job] = field(default_factory=dict)
    """The lane's jobs not promoted, by job id (`Walk` keys a lane's jobs only as it may
    take them)."""
    by_time: list[tuple[float, int, Job]] = field(default_factory=list)
    """The same jobs as ``(one-server estimate s, job id, job)``, sorted (a NaN estimate as
    -inf: such a job counts as short at any ``backfill · t*``): the jobs short enough to
    backfill are a prefix (`Walk._key_lane`), found without looking at the long ones."""

    def wait(self, job: Job) -> None:
        """``job`` joins the lane's jobs not promoted."""
        self.waiting[job.job_id] = job
        bisect.insort(self.by_time, (_by_time(job), job.job_id, job))  # ids differ: no job compared

    def unwait(self, job: Job) -> None:
        """``job`` leaves the lane's jobs not promoted (it started or was promoted)."""
        del self.waiting[job.job_id]
        by_time = self.by_time
        del by_time[bisect.bisect_left(by_time, (_by_time(job), job.job_id))]

    def short_count(self, backfill_s: float) -> int:
        """How many jobs lead ``by_time`` with ``not one_server_s > backfill_s`` (those short
        enough to backfill; every job where ``backfill_s`` is NaN, as the comparison says)."""
        return bisect.bisect_right(self.by_time, (backfill_s, math.inf))


def _by_time(job: Job) -> float:
    """The job's one-server estimate as `Lane.by_time` sorts it (NaN as -inf)."""
    t = job.one_server_s
    return t if t == t else -math.inf


@dataclass
class RankedQueue:
    """The waiting jobs of one run, kept from the views' `QueueChanges` (module docstring).

    Args:
        learn: a job's (time-free key part, best profiled time s, one-server estimate s).
        promote_after: the rule's ``promote_after``.
        aging: the rule's ``aging``.
    """

    learn: Callable[[JobRun], tuple[float, float, float]]
    promote_after: float
    aging: float
    jobs: dict[int, Job] = field(default_factory=dict)
    rebuilds: int = 0
    """How many times the queue was rebuilt from ``view.pending`` (for tests)."""
    keyings: int = 0
    """How many times a walk keyed the jobs not promoted (for tests)."""
    late_keyings: int = 0
    """How many times a walk keyed more of a lane's jobs after a start (for tests)."""

    def __post_init__(self) -> None:
        self.finite = math.isfinite(self.promote_after) and math.isfinite(self.aging)
        self._run: object = None
        self._point = -1
        self._clear(1024)

    def _clear(self, size: int) -> None:
        self.jobs = {}
        self.lanes: dict[tuple[tuple[float, float, float], int], Lane] = {}
        self.size = size
        self.at: list[Job | None] = [None] * size
        self.present = MinTree(size)  # 0.0 where a job waits: arrival order
        self.next_pos = 0
        self.last: tuple[float, int] = (-math.inf, -1)
        self.unpromoted: dict[int, Job] = {}
        self._due: list[tuple[float, int, Job]] = []  # (promotion time s, seq, job)
        self._near: list[Job] = []  # due, not yet promoted by the exact test
        self._by_base: list[tuple[float, int, Job]] = []
        self._by_submit: list[tuple[float, int, Job]] = []
        self._seq = 0
        self.version = 0
        self.nan_joined = 0
        """Jobs that joined with a NaN key part or submission time (`Walk._key_unpromoted`)."""

    # -- following the pending list ------------------------------------------------------

    def update(self, view: ClusterView) -> RankedQueue:
        """Bring the queue to ``view.pending``: from its changes where they follow on from the
        last update, else afresh."""
        changes = view.changes
        if changes is None or changes.run is not self._run or changes.point != self._point + 1:
            self._rebuild(view.pending)
        else:
            for run, entered in changes.log:
                if entered:
                    self.add(run)
                else:
                    self.remove(run)
        if changes is None:
            self._run, self._point = None, -1
        else:
            self._run, self._point = changes.run, changes.point
        return self

    def _rebuild(self, pending: Sequence[JobRun]) -> None:
        self.rebuilds += 1
        self._clear(max(1024, 1 << (2 * len(pending)).bit_length()))
        for run in sorted(pending, key=lambda r: (r.spec.submit_time_s, r.spec.job_id)):
            self.add(run)

    def add(self, run: JobRun) -> None:
        """A job joined the pending list."""
        spec = run.spec
        base, best_s, one_server_s = self.learn(run)
        shape = (spec.worker_demand.as_tuple(), spec.num_workers)
        lane = self.lanes.get(shape)
        if lane is None:
            lane = self.lanes[shape] = Lane(shape[0], shape[1], spec, MinTree(self.size))
        job = Job(run, spec.submit_time_s, spec.job_id, lane, base, one_server_s, 0.0)
        job.promote_s = self.promote_after * best_s
        if base != base or job.submit != job.submit:
            self.nan_joined += 1
        lane.joined.append(job)
        self.jobs[job.job_id] = job
        order = (job.submit, job.job_id)
        if order > self.last and self.next_pos < self.size:
            self._place(job, self.next_pos)
            self.last = order
            self.next_pos += 1
        else:  # out of arrival order, or out of positions: number every job again
            self._renumber()
        self._unpromote(job)

    def _place(self, job: Job, pos: int) -> None:
        job.pos = pos
        self.at[pos] = job
        self.present.set(pos, 0.0)

    def _unpromote(self, job: Job) -> None:
        self.unpromoted[job.job_id] = job
        job.lane.wait(job)
        self._seq += 1
        heapq.heappush(self._by_base, (job.base, self._seq, job))
        heapq.heappush(self._by_submit, (job.submit, self._seq, job))
        when = job.submit + job.promote_s
        heapq.heappush(self._due, (when if when == when else math.inf, self._seq, job))

    def _renumber(self) -> None:
        jobs = sorted(self.jobs.values(), key=lambda j: (j.submit, j.job_id))
        size = max(1024, 1 << (2 * len(jobs)).bit_length())
        self.size, self.at, self.present = size, [None] * size, MinTree(size)
        for lane in self.lanes.values():
            lane.tree = MinTree(size)
        for pos, job in enumerate(jobs):
            self._place(job, pos)
            if job.promoted:
                job.lane.tree.set(pos, _stored(job.one_server_s))
        self.next_pos = len(jobs)
        self.last = (jobs[-1].submit, jobs[-1].job_id) if jobs else (-math.inf, -1)

    def remove(self, run: JobRun) -> None:
        """A job left the pending list (it started)."""
        job = self.jobs.pop(run.job_id)
        self.at[job.pos] = None
        self.present.set(job.pos, math.inf)
        if job.promoted:
            job.lane.tree.set(job.pos, math.inf)
            job.lane.promoted -= 1
        else:
            del self.unpromoted[job.job_id]
            job.lane.unwait(job)
        job.pos = -1

    # -- promotion ------------------------------------------------------------------------

    def promote(self, now: float) -> None:
        """Move every job promoted at ``now`` (the rule's exact test) to its lane's tree."""
        if not self.finite:
            return  # no lanes: every job is keyed at every point, as the rule did
        due, near = self._due, self._near
        while due:
            when, _, job = due[0]
            slack = 1e-7 * (abs(when) + abs(job.submit) + abs(now)) + 1e-12
            if when > now + slack:
                break  # not promoted: its wait is below promote_s by more than rounding
            heapq.heappop(due)
            if job.pos >= 0 and not job.promoted:
                near.append(job)
        kept = []
        for job in near:
            if job.pos < 0 or job.promoted:
                continue
            if max(0.0, now - job.submit) / HOUR_S * HOUR_S >= job.promote_s:
                job.promoted = True
                del self.unpromoted[job.job_id]
                job.lane.unwait(job)
                job.lane.promoted += 1
                job.lane.tree.set(job.pos, _stored(job.one_server_s))
            else:
                kept.append(job)
        self._near = kept

    def unpromoted_bound(self, now: float) -> float:
        """A number below the key of every job not promoted (margin for rounding)."""
        by_base, by_submit = self._by_base, self._by_submit
        while by_base and not _waits_unpromoted(by_base[0][2]):
            heapq.heappop(by_base)
        while by_submit and not _waits_unpromoted(by_submit[0][2]):
            heapq.heappop(by_submit)
        if not by_base:
            return math.inf
        base, oldest = by_base[0][0], by_submit[0][0]
        aged = self.aging * math.log1p(max(0.0, now - oldest) / HOUR_S)
        return base - aged - 1e-9 * (1.0 + abs(base) + abs(aged))

    def arrival(self) -> Iterator[Job]:
        """The waiting jobs in arrival order (submission time, then job id)."""
        pos = self.present.first(0, 0.0)
        while pos >= 0:
            job = self.at[pos]
            assert job is not None
            yield job
            pos = self.present.first(pos + 1, 0.0)


def _stored(value: float) -> float:
    """A present job's tree value (`BIG`)."""
    return value if value <= BIG else BIG


def _waits_unpromoted(job: Job) -> bool:
    return job.pos >= 0 and not job.promoted
