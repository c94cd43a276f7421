"""The walk over SCED²-L's waiting queue at one scheduling point: the jobs in the rule's order,
minus jobs the rule would have passed without effect (`dlsched.papers.sched2.lookahead_queue`'s
docstring says why each skip is exact).

The promoted jobs come from the lanes' min-trees (`Lane.tree`), by arrival position; the jobs not
promoted are keyed with the rule's float operations only when the walk reaches a lower bound of
their keys, then taken in key order from a sorted list (or, where a key may be NaN, a heap: the
rule's own order), each passed for good if its lane's status says it cannot start.
"""

from __future__ import annotations

import heapq
import math

from dlsched.core import Allocation, JobSpec
from dlsched.papers.sched2.lookahead_queue import (
    ANY,
    BIG,
    HOUR_S,
    NONE,
    RES,
    Entry,
    Job,
    Lane,
    RankedQueue,
)
from dlsched.papers.sched2.packings import Packings
from dlsched.schedulers.common import RoomCounts
from dlsched.schedulers.saf import pack_allocation


class Walk:
    """The waiting jobs of one point in the rule's order, minus jobs that cannot start.

    Args:
        queue: the queue, updated and promoted at this point.
        entries: the rule's ranking tuples of the jobs not promoted, or None: built here when
            the walk reaches them.
        now: the time, s.
        rooms: free (gpu, cpu, mem) per server (`RoomCounts.free`, changed in place as jobs
            start) and its room counts, recounted by the caller after each start.
        reserved: servers reserved at this point.
        backfill_s: ``backfill · t*``.
        gpu_room: the rule's bound on GPUs a packing can take now.
        packs: the point's packings of ``rooms`` (`Packings`), forgotten by the caller at
            each start; None: packed here.
    """

    def __init__(
        self,
        queue: RankedQueue,
        entries: list[Entry] | None,
        now: float,
        rooms: RoomCounts,
        reserved: set[int],
        backfill_s: float,
        gpu_room: float,
        packs: Packings | None = None,
    ) -> None:
        self.q = queue
        self.packs = packs
        self.now = now
        self.rooms = rooms
        self.free = rooms.free
        self.reserved = reserved
        self.backfill_s = backfill_s
        self.gpu_room = gpu_room
        self.others: list[Entry] | None = entries
        self.sorted_from = -1
        """Where ``others`` is a sorted list, the index of its next entry; -1: a heap."""
        self.keyed: dict[Lane, int] = {}
        """In the sorted list, per lane, which of its jobs are keyed: those a lane of that
        status may start (`NONE`: none, `RES`: the short ones, `ANY`: all)."""
        self.last: Entry | None = None  # the last entry yielded
        if entries is not None:
            heapq.heapify(entries)
        self.bound = queue.unpromoted_bound(now) if queue.unpromoted else math.inf
        queue.version += 1
        self.version = queue.version
        self.pcur = -1  # the last promoted job's position yielded
        self.heads: list[tuple[int, int, Lane]] = []
        self.parked: list[tuple[int, Lane]] = []  # lanes with no head now (`_head`)
        for i, lane in enumerate(queue.lanes.values()):
            if lane.promoted:
                lane.head_at, lane.head_cond = -1, ANY
                self.heads.append((0, i, lane))
        heapq.heapify(self.heads)

    def started(self, gpu_room: float) -> None:
        """A job started: the free resources (and ``gpu_room``) changed."""
        self.gpu_room = gpu_room
        self.q.version += 1
        self.version = self.q.version
        for i, lane in self.parked:
            lane.head_at, lane.head_cond = -1, NONE
            heapq.heappush(self.heads, (self.pcur + 1, i, lane))
        self.parked = []
        if self.sorted_from >= 0:
            # a lane may now start jobs it could not: its jobs after the one started join
            new: list[Entry] = []
            for lane, keyed in self.keyed.items():
                if keyed != ANY:
                    self._key_lane(lane, new)
            if new:
                self.q.late_keyings += 1
                new.extend(self.others[self.sorted_from :])  # type: ignore[index]
                new.sort()
                self.others, self.sorted_from = new, 0

    def _status(self, lane: Lane) -> int:
        if lane.status_at == self.version:
            return lane.status
        lane.status_at = self.version
        g = lane.workers
        need = lane.need
        if g <= 0 or not self.free:
            status = ANY
        elif need[0] > 0 and g * need[0] > self.gpu_room:
            status = NONE
        else:
            rooms = self.rooms.of(need)
            if max(rooms) >= g:  # the packing takes one server
                reserved = self.reserved
                status = RES
                for s, room in enumerate(rooms):
                    if room >= g and s not in reserved:
                        status = ANY
                        break
            elif self._packing(lane, rooms) is None:
                status = NONE
            else:
                status = ANY  # several servers: each job is checked
        lane.status = status
        return status

    def _packing(self, lane: Lane, rooms: list[int]) -> Allocation | None:
        """The lane's packing placement on the free resources now (None: it does not fit)."""
        spec: JobSpec = lane.spec  # type: ignore[assignment]
        if self.packs is not None:
            return self.packs.of(spec, lane.workers)
        return pack_allocation(list(self.free), spec, lane.workers, 0, rooms)

    def _head(self) -> tuple[int, Lane] | None:
        """The first promoted job (position, lane) that may start, lanes brought up to date."""
        heads = self.heads
        while heads:
            pos, i, lane = heads[0]
            if lane.head_at == self.version:
                return pos, lane
            cond = self._status(lane)
            # a stricter (or the same) condition: nothing between the last yielded position
            # and the old head meets it; a looser one: look from the last yielded position
            start = pos if cond <= lane.head_cond else self.pcur + 1
            lane.head_at, lane.head_cond = self.version, cond
            nxt = lane.tree.first(start, BIG if cond == ANY else self.backfill_s) if cond else -1
            if nxt >= 0:
                heapq.heapreplace(heads, (nxt, i, lane))
                continue
            heapq.heappop(heads)
            if cond != ANY and not need_gpus(lane) > self.gpu_room:
                # a later start may loosen its condition (a one-server shape that must
                # then span servers is checked job by job): looked at again after it
                self.parked.append((i, lane))
        return None

    def next(self) -> Entry | None:
        """The next job in the rule's order that may start; None when none is left."""
        q = self.q
        head = self._head()
        promoted: Entry | None = None
        if head is not None:
            job = q.at[head[0]]
            assert job is not None
            promoted = (-1e9 + job.submit / HOUR_S, job.submit, job.job_id, job.run)
        if self.others is None and q.unpromoted and (promoted is None or self.bound <= promoted[0]):
            self._key_unpromoted()
        if self.others:
            entry = self._next_other(promoted)
            if entry is not None:
                self.last = entry
                return entry
        if head is None or promoted is None:
            return None
        pos, lane = head
        self.pcur = pos
        nxt = lane.tree.first(pos + 1, BIG if lane.head_cond == ANY else self.backfill_s)
        if nxt < 0:
            heapq.heappop(self.heads)
        else:
            heapq.heapreplace(self.heads, (nxt, self.heads[0][1], lane))
        self.last = promoted
        return promoted

    def _next_other(self, promoted: Entry | None) -> Entry | None:
        """The next job not promoted that comes before ``promoted`` (None: any) and may start;
        those before it that may not are passed for good, as the rule passed them. Nothing
        starts meanwhile, so the promoted head and every lane's status stay as they are."""
        others = self.others
        assert others is not None
        jobs = self.q.jobs
        if self.sorted_from < 0:  # a heap (keys that may be NaN: the rule's heap order)
            while others and (promoted is None or others[0] < promoted):
                entry = heapq.heappop(others)
                job = jobs.get(entry[2])
                if job is None or self._may_start(job):
                    return entry
            return None
        i, n = self.sorted_from, len(others)
        version, backfill_s = self.version, self.backfill_s
        while i < n:
            entry = others[i]
            if promoted is not None and not entry < promoted:
                break
            i += 1
            job = jobs.get(entry[2])
            if job is None:
                self.sorted_from = i
                return entry
            lane = job.lane
            status = lane.status if lane.status_at == version else self._status(lane)
            if status == ANY or (status == RES and not job.one_server_s > backfill_s):
                self.sorted_from = i
                return entry
        self.sorted_from = i
        return None

    def _may_start(self, job: Job) -> bool:
        status = self._status(job.lane)
        if status == ANY:
            return True
        return status == RES and not (job.one_server_s > self.backfill_s)

    def _key_unpromoted(self) -> None:
        """The rule's ranking tuples of the jobs not promoted, with its float operations, in
        the order the rule's heap gives them: sorted, where no key or submission time is NaN
        (distinct job ids then make the order total), else a heap of them all. In the sorted
        list only the jobs their lane's status may start now (`_key_lane`)."""
        self.q.keyings += 1
        if self.q.nan_joined:
            now, aging, log1p = self.now, self.q.aging, math.log1p
            entries = [
                (
                    job.base - aging * log1p(max(0.0, now - job.submit) / HOUR_S),
                    job.submit,
                    j,
                    job.run,
                )
                for j, job in self.q.unpromoted.items()
            ]
            heapq.heapify(entries)
        else:
            entries = []
            for lane in self.q.lanes.values():
                if lane.waiting:
                    self.keyed[lane] = NONE
                    self._key_lane(lane, entries)
            entries.sort()
            self.sorted_from = 0
        self.others = entries

    def _key_lane(self, lane: Lane, entries: list[Entry]) -> None:
        """Add to ``entries`` the lane's jobs not keyed yet that its status may now start
        (`_next_other` passes the others for good while the status lasts; a start may loosen
        it, and then only the jobs after the one started are left to walk: `last`)."""
        keyed = self.keyed[lane]
        status = self._status(lane)
        if status <= keyed:
            return
        self.keyed[lane] = status
        now, aging, log1p, last, hour_s = self.now, self.q.aging, math.log1p, self.last, HOUR_S
        by_time = lane.by_time
        # the short jobs lead ``by_time``: NONE → RES adds them, NONE → ANY every job,
        # RES → ANY the long ones
        cut = lane.short_count(self.backfill_s)
        lo = 0 if keyed == NONE else cut
        hi = cut if status == RES else len(by_time)
        # the rule's key, ``base - aging * log1p(max(0.0, now - submit) / 1 h)``, with the
        # ``max`` as the comparison that picks the same operand (NaN too: 0.0)
        append = entries.append
        for _, j, job in by_time[lo:hi]:
            submit = job.submit
            wait = now - submit
            entry = (
                job.base - aging * log1p((wait if wait > 0.0 else 0.0) / hour_s),
                submit,
                j,
                job.run,
            )
            if last is None or last < entry:
                append(entry)


def need_gpus(lane: Lane) -> float:
    """GPUs the lane's jobs take (the rule's ``workers · per-worker GPUs``; 0 without GPUs)."""
    return lane.workers * lane.need[0] if lane.need[0] > 0 else 0.0
