"""One point's walk of `hetero-score`'s fast path: the best pair that fits, again and again
(`dlsched.papers.hetero.ranked` says why that is the plain rule's order).

Three kinds of pairs take part: pairs scored exactly this point (a heap, the plain rule's
floats and ties), waiting pairs (heaps per (type, size) of upper bounds, opened when they may
come next) and, on a cluster of one GPU type, the running jobs, bounded from below and above
(`dlsched.papers.hetero.running`) in decreasing lower bound. A run of running jobs from the
front of that order whose lower bounds all exceed every other pair's upper bound (waiting,
exact, and the running jobs after them), and that fit together in the GPUs left, are the next
pairs of the plain rule's order in some order, and all of them are taken: the walk takes them
at once, without scoring them. A running job is scored exactly only where no such run exists
(its bounds overlap another pair's, or it no longer fits). The jobs taken so are listed last in
the answer: each runs at its full size on its one type, so `place_on_types` and `ChangesOnly`
leave it where it is, wherever it is listed.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence
from typing import Protocol

from dlsched.core import ClusterView, JobRun
from dlsched.papers.hetero.features import FEATURES, Array
from dlsched.papers.hetero.pairs import Entry, KeptJob
from dlsched.papers.hetero.running import SLACK, Ranked, RunningScores

WAIT = FEATURES.index("log_wait_s")

Pair = tuple[float, float, int, int, int, KeptJob]
"""A scored pair: (minus its exact score, submission, job id, type, GPUs it needs, job)."""


class Kept(Protocol):
    """What the walk reads of the kept state (`dlsched.papers.hetero.ranked.RankedPairs`)."""

    w: list[float]
    types: tuple[str, ...]
    first_submit: float
    jobs: dict[int, KeptJob]
    running: list[JobRun]
    bounds: RunningScores | None
    heaps: dict[tuple[int, int], list[Entry]]
    exact_scored: int

    def _exact(
        self, view: ClusterView, jobs: Sequence[KeptJob], mean: Array
    ) -> list[list[float]]: ...


class Walk:
    """One point's walk (see the module)."""

    def __init__(self, state: Kept, view: ClusterView, left: list[int], mean: Array) -> None:
        """``left``: GPUs per type; ``mean``: per type, the advantage's mean (`features`)."""
        self.state, self.view, self.left, self.mean = state, view, left, mean
        self.now = view.now_s
        w = state.w
        waits = math.log1p(max(0.0, self.now - state.first_submit))
        room = SLACK * (1.0 + abs(w[WAIT]) * waits)
        # what every bound of a type gains from the type's mean now, plus the margin of the
        # terms that vary (the wait, the mean)
        means = self.mean.tolist()
        self.pad = [room + SLACK * abs(w[2] * m) for m in means]
        self.shift = [-w[2] * m + pad for m, pad in zip(means, self.pad, strict=True)]
        self.scored: dict[int, list[float]] = {}  # job id -> exact scores this point
        self.best: list[Pair] = []
        self.taken: set[int] = set()
        self.held: list[tuple[list[Entry], Entry]] = []  # popped entries, pushed back at the end
        self.bounded: Ranked | None = None
        self.head = 0  # bounded jobs before it (in `Ranked.rows`) are taken or scored
        self.before = 0  # the GPUs those need
        self.stayers: list[int] = []  # rows of the bounded jobs taken unscored
        self.all_stay = False  # every bounded job taken unscored, at once (none sorted)
        self.opened: list[KeptJob] = []  # bounded jobs scored exactly

    def run(self) -> list[tuple[JobRun, str]]:
        """The plain `choose`'s pairs in its order, less the running jobs taken unscored
        (`stayer_runs`)."""
        state, left, best, taken = self.state, self.left, self.best, self.taken
        means = self.mean.tolist()
        if state.bounds is None:
            running = [state.jobs[run.job_id] for run in state.running]
            for job, run in zip(running, state.running, strict=True):
                job.run = run
        else:
            state.bounds.sync(state.running, state.jobs)
            running = list(state.bounds.irregular.values())
            if state.bounds.rows:
                self.bounded = state.bounds.ranked(self.now, -state.w[2] * means[0])
        self._add_scored(running)
        heapq.heapify(best)
        room = sum(left)
        chosen: list[tuple[JobRun, str]] = []
        ceiling = self._ceiling()  # bounds every waiting pair that fits
        types = state.types
        bounded = self.bounded
        while room > 0:
            while best and (best[0][2] in taken or best[0][4] > left[best[0][3]]):
                heapq.heappop(best)
            floor = -best[0][0] if best else -math.inf
            # bounded jobs left (their bounds are finite): `_top` > -inf, worked out only
            # where its value is needed
            rest = bounded is not None and self.head < bounded.n
            if not (floor > ceiling and (not rest or floor > self._top())):
                if floor == ceiling == -math.inf and not rest:
                    break  # no pair fits
                if rest:
                    gpus = self._take_run(max(floor, ceiling))
                    if gpus:
                        left[0] -= gpus
                        room -= gpus
                        ceiling = self._ceiling()
                        continue
                    if self._top() >= ceiling:
                        self._open_running()
                        continue
                # a waiting pair may come next
                if state.bounds is not None:
                    found = self._next_waiting(floor, self._top())
                    if found is not None:
                        job, k = found
                        left[k] -= job.need
                        room -= job.need
                        taken.add(job.key[1])
                        chosen.append((job.run, types[k]))
                elif best:
                    self._open_above(floor)
                else:
                    self._open_one()
                ceiling = self._ceiling()
                continue
            pair = heapq.heappop(best)
            need, k = pair[4], pair[3]
            left[k] -= need
            room -= need
            taken.add(pair[2])
            chosen.append((pair[5].run, types[k]))
        for heap, entry in self.held:
            heapq.heappush(heap, entry)
        return chosen

    def stayer_count(self) -> int:
        """How many running jobs were taken unscored (each stays where it runs)."""
        if self.all_stay:
            assert self.bounded is not None
            return self.bounded.n
        return len(self.stayers)

    def left_out(self) -> list[JobRun] | None:
        """The running jobs not chosen (each is suspended), in no particular order; None
        where the running jobs are not bounded (all of them are in the pairs chosen)."""
        bounds = self.state.bounds
        if bounds is None:
            return None
        taken = self.taken
        out = [job.run for job in bounds.irregular.values() if job.key[1] not in taken]
        out += [job.run for job in self.opened if job.key[1] not in taken]
        bounded = self.bounded
        if bounded is not None and self.head < bounded.n:  # never reached: not chosen
            jobs = bounds.jobs
            rows = bounded.rows[self.head :] if bounded.rows else bounds.rows.values()
            out += [jobs[r].run for r in rows]  # type: ignore[union-attr]
        return out

    def stayer_runs(self) -> list[JobRun]:
        """The running jobs taken unscored: the plain rule's other pairs, on the one type."""
        bounds = self.state.bounds
        if bounds is None:
            return []
        rows = bounds.rows.values() if self.all_stay else self.stayers
        jobs = bounds.jobs
        return [jobs[r].run for r in rows]  # type: ignore[union-attr]

    def _top(self) -> float:
        """The highest upper bound of a bounded job not yet taken or scored (-inf if none)."""
        bounded, head = self.bounded, self.head
        if bounded is None or head >= bounded.n:
            return -math.inf
        bounded.sort()
        return -bounded.neg[head] + bounded.margin

    def _take_run(self, above: float) -> int:
        """Take the longest run of bounded jobs from the front that come before every other
        pair (lower bounds over ``above`` and over the upper bounds of the jobs after them)
        and fit together; the GPUs they take (0: none)."""
        bounded, head = self.bounded, self.head
        assert bounded is not None
        if not bounded.rows:  # none taken yet, not sorted: all at once if all clear
            gpus = bounded.bounds.total_need
            if bounded.lowest() > above and gpus <= self.left[0]:
                self.all_stay = True
                self.head = bounded.n
                self.before += gpus
                return gpus
            bounded.sort()
        neg, margin, before = bounded.neg, bounded.margin, self.before
        # the lower bounds (-neg - margin) fall and the sums of needs grow along the order:
        # both conditions hold on a prefix (all of them fit where what is left does)
        last = bisect.bisect_left(neg, -above - margin, head) - 1
        if bounded.bounds.total_need - before > self.left[0]:
            fits = bisect.bisect_right(bounded.needs(), before + self.left[0], head)
            last = min(last, fits - 1)
        # the last of them whose lower bound exceeds the upper bounds of the jobs after it
        gap = 2.0 * margin
        end = bounded.n - 1
        while last >= head and last < end and not neg[last + 1] - neg[last] > gap:
            last -= 1
        if last < head:
            return 0
        taken = bounded.rows[head : last + 1]
        self.stayers.extend(taken)
        self.head = last + 1
        need = bounded.bounds.need
        gpus = sum([need[r] for r in taken])
        self.before += gpus
        return gpus

    def _open_running(self) -> None:
        """Score exactly the bounded jobs that may come first among them (upper bound at
        least the highest lower bound: a prefix, the bounds falling along the order)."""
        bounded, head = self.bounded, self.head
        assert bounded is not None
        neg = bounded.neg
        end = bisect.bisect_right(neg, neg[head] + 2.0 * bounded.margin, head)
        self.head = end
        opened = bounded.rows[head:end]
        need, jobs = bounded.bounds.need, bounded.bounds.jobs
        self.before += sum([need[r] for r in opened])
        scored: list[KeptJob] = [jobs[r] for r in opened]  # type: ignore[misc]
        self.opened += scored
        self._add_scored(scored, push=True)

    def _ceiling(self) -> float:
        """The highest bound of a waiting pair that fits (-inf if none): a stale value stays
        an upper bound, since the GPUs left only shrink and entries are only bounded lower."""
        top = -math.inf
        left, shift = self.left, self.shift
        for (k, need), heap in self.state.heaps.items():  # `_heaps` inlined: called often
            if heap and need <= left[k]:
                bound = shift[k] - heap[0][0]
                if bound > top:  # `max(top, bound)`
                    top = bound
        return top

    def _add_scored(self, jobs: list[KeptJob], push: bool = False) -> None:
        if not jobs:
            return
        rows = self.state._exact(self.view, jobs, self.mean)
        best = self.best
        for job, row in zip(jobs, rows, strict=True):
            self.scored[job.key[1]] = row
            for k in job.kinds:
                pair = (-row[k], job.submit, job.key[1], k, job.need, job)
                if push:
                    heapq.heappush(best, pair)
                else:
                    best.append(pair)

    def _heaps(self) -> list[tuple[list[Entry], float, int]]:
        """The non-empty heaps of sizes that fit, with their type's shift and the type."""
        left, shift = self.left, self.shift
        return [
            (heap, shift[k], k)
            for (k, need), heap in self.state.heaps.items()
            if heap and need <= left[k]
        ]

    def _pop(self, heap: list[Entry], k: int) -> tuple[Entry | None, bool]:
        """Pop ``heap``'s top: (it bounded again now, False) for a waiting job not scored
        yet, else (None, whether its job's pair, scored already, went on the exact heap)."""
        entry = heapq.heappop(heap)
        job = entry[4]
        if not (job.waiting and job.stamp == entry[3]):
            return None, False  # stale: the job left the queue or joined it again since
        if job.key[1] in self.scored or job.key[1] in self.taken:
            self.held.append((heap, entry))
            return None, self._push_scored(job, k)
        w = self.state.w
        bound = job.static[k] + w[WAIT] * math.log1p(max(0.0, self.now - job.submit))
        return (-(bound + SLACK * job.mag[k]), job.submit, entry[2], entry[3], job), False

    def _open_above(self, floor: float) -> None:
        """Score exactly every waiting pair that fits and may score at least ``floor``."""
        batch: list[KeptJob] = []
        pairs: list[tuple[KeptJob, int]] = []
        for heap, shift, k in self._heaps():
            while heap and shift - heap[0][0] >= floor:
                entry, _ = self._pop(heap, k)
                if entry is None:
                    continue
                if shift - entry[0] < floor:
                    heapq.heappush(heap, entry)
                    continue
                self.held.append((heap, entry))
                job = entry[4]
                if not any(j is job for j in batch):
                    batch.append(job)
                pairs.append((job, k))
        self._score_waiting(batch, pairs)

    def _open_one(self) -> None:
        """With no exact pair that fits: score the waiting pair of the highest bound that stays
        highest once bounded again (nothing if no waiting pair fits)."""
        heaps = self._heaps()  # pops and pushes below change the heaps' tops, not which fit
        while True:
            heaps = [h for h in heaps if h[0]]
            if not heaps:
                return
            heap, shift, k = max(heaps, key=lambda h: h[1] - h[0][0][0])
            entry, pushed = self._pop(heap, k)
            if pushed:
                return
            if entry is None:
                continue
            rest = [s - h[0][0] for h, s, _ in heaps if h]
            if rest and shift - entry[0] < max(rest):
                heapq.heappush(heap, entry)
                continue
            self.held.append((heap, entry))
            self._score_waiting([entry[4]], [(entry[4], k)])
            return

    def _next_waiting(self, floor: float, top: float) -> tuple[KeptJob, int] | None:
        """On one GPU type: the waiting pair of the highest bound, bounded again now (and the
        pairs whose bounds reach its own), is returned unscored where its lower bound clears
        every other pair's upper bound (``floor``: the best exact pair; ``top``: the bounded
        running jobs): it comes next. Else it is scored exactly (on the exact heap), or left
        where it cannot come before those two; None then."""
        heaps = self._heaps()  # pops and pushes below change the heaps' tops, not which fit
        fresh: set[int] = set()  # jobs bounded again here: their bounds are their scores'
        held: tuple[Entry, list[Entry], float, int] | None = None  # the highest so far
        while True:
            rest, at = -math.inf, None
            for h in heaps:  # an emptied heap may have the entry held pushed back
                if h[0] and h[1] - h[0][0][0] > rest:
                    rest, at = h[1] - h[0][0][0], h
            if held is None or rest > held[2] - held[0][0]:
                if held is not None:
                    heapq.heappush(held[1], held[0])
                if at is None:
                    return None
                entry, pushed = self._pop(at[0], at[2])
                if pushed:
                    return None
                if entry is not None:
                    fresh.add(entry[2])
                    held = (entry, at[0], at[1], at[2])
                else:
                    held = None
                continue
            entry, heap, shift, k = held
            upper = shift - entry[0]
            if not upper >= max(floor, top):
                heapq.heappush(heap, entry)  # it does not come next
                return None
            job = entry[4]
            if upper - 2.0 * (SLACK * job.mag[k] + self.pad[k]) > max(rest, floor, top):
                self.held.append((heap, entry))
                return job, k
            if at is not None and at[0][0][2] not in fresh:
                stale, pushed = self._pop(at[0], at[2])  # its bound may fall below
                if pushed:
                    heapq.heappush(heap, entry)
                    return None
                if stale is not None:
                    fresh.add(stale[2])
                    heapq.heappush(at[0], stale)
                continue
            self.held.append((heap, entry))
            self._score_waiting([job], [(job, k)])
            return None

    def _push_scored(self, job: KeptJob, k: int) -> bool:
        """Put ``job``'s pair on type ``k`` (scored already) on the exact heap unless taken."""
        if job.key[1] in self.taken:
            return False
        row = self.scored[job.key[1]]
        heapq.heappush(self.best, (-row[k], job.submit, job.key[1], k, job.need, job))
        return True

    def _score_waiting(self, batch: list[KeptJob], pairs: list[tuple[KeptJob, int]]) -> None:
        if not batch:
            return
        self.state.exact_scored += len(batch)
        rows = self.state._exact(self.view, batch, self.mean)
        for job, row in zip(batch, rows, strict=True):
            self.scored[job.key[1]] = row
        for job, k in pairs:
            self._push_scored(job, k)
