"""Bounds on the running jobs' scores of `hetero-score` on a cluster of one GPU type (issue 31).

The plain rule scores every running job exactly at every point; `dlsched.papers.hetero.walk`
needs them only where a waiting pair, another job's score or the GPUs left could put them in
another order. `RunningScores` keeps each running job's parts as NumPy arrays (changed only
where the job starts, stops or its rate changes: `JobRun.version`) and gives, at each point,
every running job's score worked out in NumPy, less and plus a margin far above the rounding
that separates it from the exact score (the plain rule's `features_from_parts` and matrix
product): ``lower <= exact <= upper``. On one type a job has one pair, where it runs, so a
job's score is ``fixed + w0 * log1p(remaining / speed) + w4 * log1p(wait)`` less the type's
mean times ``w2`` (`FEATURES`' order; ``fixed`` holds the speed terms, ``running_here``
and the size).

Only jobs that run at their full size (what `place_on_types` keeps without placing) are
bounded; the others (`RunningScores.irregular`) are scored exactly as before.
"""

from __future__ import annotations

import math
from itertools import accumulate

import numpy as np

from dlsched.core import JobRun
from dlsched.papers.hetero.features import Array
from dlsched.papers.hetero.pairs import KeptJob

SLACK = 1e-9
"""Relative margin of a bound: rounding moves the 6-term product and its inputs by ~1e-15."""
_FIELDS = ("total", "progress", "rate", "start", "speed", "submit", "fixed")
"""Per row: total work, work done at ``start``, rate (0 if not above 0) and when it runs from
(`JobRun.work_done`'s operations, so the remaining work is the exact float); the estimated
speed; the submission; `fixed_part` (+inf: a free row)."""


class Ranked:
    """One point's bounded running jobs: their scores by row (NumPy; a free row's is +inf) and
    one margin for all, ``score - margin <= exact <= score + margin``. The walk takes them all
    at once where the lowest lower bound clears every other pair (`lowest`); only otherwise are
    they put in decreasing score (`sort`), as lists for its lookups.

    Attributes:
        bounds: the kept rows (their jobs and sizes).
        score, margin: as above; ``n``: how many jobs.
        rows: once sorted, their rows in decreasing score (ties in any order: a job tied with
            another within the margins is never told apart from it by bounds).
        neg: minus their scores (increasing).
    """

    __slots__ = ("bounds", "margin", "n", "neg", "rows", "score", "summed")

    def __init__(self, bounds: RunningScores, score: Array, margin: float) -> None:
        self.bounds, self.score, self.margin = bounds, score, margin
        self.n = len(bounds.rows)
        self.rows: list[int] = []
        self.neg: list[float] = []
        self.summed: list[int] = []

    def lowest(self) -> float:
        """The lowest lower bound (free rows score +inf)."""
        return float(self.score.min()) - self.margin

    def sort(self) -> None:
        """Put the jobs in decreasing score (`rows`, `neg`), once."""
        if self.rows or not self.n:
            return
        neg = -self.score
        order = neg.argsort()[len(neg) - self.n :]  # the free rows (-inf) first
        self.rows = order.tolist()
        self.neg = neg[order].tolist()

    def needs(self) -> list[int]:
        """Once sorted: the GPUs they need, summed from the first (``[i]``: jobs 0 to i)."""
        if not self.summed:
            need = self.bounds.need
            self.summed = list(accumulate([need[i] for i in self.rows]))
        return self.summed


class RunningScores:
    """The running jobs' score parts, one row per bounded job (a free row is reused).

    Args:
        weights: the policy's six weights.
    """

    def __init__(self, weights: list[float]) -> None:
        self.w = weights
        self.rows: dict[int, int] = {}  # job id -> its row
        self.jobs: list[KeptJob | None] = []
        self.free: list[int] = []
        self.synced: dict[int, int] = {}  # job id -> the version its parts were read at
        self.irregular: dict[int, KeptJob] = {}
        """Running jobs not at their full size, by job id: scored exactly."""
        self.arrays: dict[str, Array] = {f: np.zeros(0) for f in _FIELDS}
        self.need: list[int] = []  # per row: the GPUs its job needs
        self.total_need = 0  # summed over the bounded jobs
        # over every row read so far: the largest sum of the sizes of its fixed terms, the
        # largest log(1 + remaining seconds), the first submission (for the margin)
        self.mag = 0.0
        self.longest = 0.0
        self.first = math.inf

    def sync(self, running: list[JobRun], jobs: dict[int, KeptJob]) -> None:
        """Follow the running jobs to this point (``jobs``: the kept state, by job id): a job
        whose version changed since (it started, stopped or changed speed) is read again."""
        synced = self.synced
        changed: list[JobRun] = []
        now: dict[int, int] = {}
        for run in running:
            job_id, version = run.job_id, run.version
            now[job_id] = version
            if synced.get(job_id) != version:
                changed.append(run)
        if not changed and len(now) == len(synced):
            return  # the same jobs at the same versions
        if len(now) - len(changed) != len(synced):  # some job left the running set
            for job_id in synced.keys() - now.keys():
                self.irregular.pop(job_id, None)
                if job_id in self.rows:
                    self._drop(job_id)
        self.synced = now
        for run in changed:
            self._read(run, jobs[run.job_id])

    def _read(self, run: JobRun, job: KeptJob) -> None:
        job.run = run
        alloc = run.allocation
        if alloc.num_workers != job.need or alloc.ps or not job.kinds:
            self.irregular[run.job_id] = job
            if run.job_id in self.rows:
                self._drop(run.job_id)
            return
        self.irregular.pop(run.job_id, None)
        row = self.rows.get(run.job_id)
        if row is None:
            if not self.free:
                self._grow()
            row = self.rows[run.job_id] = self.free.pop()
        else:
            self.total_need -= self.need[row]
        self.jobs[row] = job
        a = self.arrays
        a["total"][row] = job.total
        a["progress"][row] = run.progress_s
        a["rate"][row] = run.rate if run.rate > 0.0 else 0.0
        a["speed"][row] = job.rates[0]
        a["start"][row] = max(run.progress_time_s, run.paused_until_s)
        a["submit"][row] = job.submit
        if job.parts is None:
            fixed, mag = fixed_part(self.w, job)
            job.parts = (fixed, mag, math.log1p(job.total / job.rates[0]))
        fixed, mag, longest = job.parts
        a["fixed"][row] = fixed
        if mag > self.mag:  # `max`
            self.mag = mag
        if longest > self.longest:
            self.longest = longest
        if job.submit < self.first:
            self.first = job.submit
        self.need[row] = job.need
        self.total_need += job.need

    def _drop(self, job_id: int) -> None:
        row = self.rows.pop(job_id)
        self.jobs[row] = None
        self.arrays["fixed"][row] = np.inf  # a free row scores +inf (`Ranked`)
        self.total_need -= self.need[row]
        self.free.append(row)

    def _grow(self) -> None:
        old = len(self.need)
        new = max(64, 2 * old)
        for name, array in self.arrays.items():
            # a free row: score +inf, from finite parts (a submission at 0 is never after now)
            grown = np.full(new, np.inf if name == "fixed" else 1.0 if name == "speed" else 0.0)
            grown[:old] = array
            self.arrays[name] = grown
        self.need.extend([0] * (new - old))
        self.jobs.extend([None] * (new - old))
        self.free.extend(range(new - 1, old - 1, -1))

    def ranked(self, now_s: float, offset: float) -> Ranked:
        """The bounded jobs' scores at ``now_s`` (``offset``: the type's ``-w2 * mean``)."""
        a = self.arrays
        w = self.w
        total = a["total"]
        # `JobRun.remaining_work`'s floats: ``min(total, done)`` then ``max(0, total - it)`` is
        # ``max(0, total - done)``; a running job was submitted by now
        done = a["progress"] + a["rate"] * np.maximum(now_s - a["start"], 0.0)
        left = np.log1p(np.maximum(total - done, 0.0) / a["speed"])
        score = a["fixed"] + w[0] * left + w[4] * np.log1p(now_s - a["submit"])
        if offset:
            score += offset
        big = self.mag + abs(w[0]) * self.longest + abs(w[4]) * math.log1p(now_s - self.first)
        return Ranked(self, score, SLACK * (big + abs(offset)) + 1e-300)


def fixed_part(w: list[float], job: KeptJob) -> tuple[float, float]:
    """A running job's score terms that stay while it runs on its one type (its relative
    speed twice, ``running_here``, its size), and the sum of their sizes."""
    rel = float(job.relative[0])
    terms = (w[1] * rel, w[2] * rel, w[3], w[5] * job.size)
    return math.fsum(terms), sum(abs(x) for x in terms)
