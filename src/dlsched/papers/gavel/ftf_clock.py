"""The per-job books of finish-time fairness (`ftf`) as arrays: what each job has left, how long
it has waited, and how long its work so far would have taken on an isolated share.

At every recompute the policy reads, for each active job, its remaining work and time since
submission, and adds to its isolated time the work it did since the last recompute over its
isolated throughput then (``(remaining before - remaining now) / iso before``). On a long queue
(Philly: 18,000-22,000 waiting jobs at a recompute) doing that job by job (a dict look-up and a
tuple per job, `PlainIsolatedClock`) took most of the policy's time; `IsolatedClock` does the
same element-wise operations on arrays (the same floats: the tests compare the two), matching
this recompute's jobs to the last one's by a table indexed by id (or by sorting the ids).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from dlsched.core import JobRun
from dlsched.papers.gavel.books import remaining_works
from dlsched.papers.gavel.lp import Array

Ids = npt.NDArray[np.int64]


class Clock(Protocol):
    def advance(self, ids: Ids, remaining: Array) -> Array:
        """Each job's isolated time (seconds) after the work done since `remember`'s jobs."""
        ...

    def remember(self, ids: Ids, remaining: Array, iso: Array) -> None:
        """Note each job's remaining work (work units) and isolated throughput (work
        units/s) for the next `advance`."""
        ...


def job_arrays(
    runs: Sequence[JobRun], now_s: float, plain: bool = False
) -> tuple[Ids, Array, Array]:
    """``(ids, remaining work, seconds since submission)`` of ``runs``, in order: from the
    sequence's own arrays where it has them (``ids``, ``submit_times``, ``remaining_works``: the
    compiled core's active jobs, `dlsched.sim.gavel_core_run`, and `books.RunRows`) unless
    ``plain``, else run by run."""
    ids = None if plain else getattr(runs, "ids", None)
    submit = None if plain else getattr(runs, "submit_times", None)
    if plain:
        remaining = np.array([r.remaining_work(now_s) for r in runs], dtype=np.float64)
    else:
        remaining = remaining_works(runs, now_s)
    if ids is None or submit is None:
        ids = np.array([r.job_id for r in runs], dtype=np.int64)
        since = np.array([now_s - r.spec.submit_time_s for r in runs], dtype=np.float64)
    else:
        since = now_s - submit
    return np.asarray(ids, dtype=np.int64), remaining, since


class PlainIsolatedClock:
    """The reference: one dict entry per job (as `ftf.GavelFtfHet` kept them until 2026-11-27)."""

    def __init__(self) -> None:
        self._isolated_time: dict[int, float] = {}
        self._previous: dict[int, tuple[float, float]] = {}  # job -> (remaining, iso rate)

    def advance(self, ids: Ids, remaining: Array) -> Array:
        for job_id, left in zip(ids.tolist(), remaining, strict=True):
            before = self._previous.get(job_id)
            spent = 0.0 if before is None else (before[0] - left) / before[1]
            self._isolated_time[job_id] = self._isolated_time.get(job_id, 0.0) + spent
        return np.array([self._isolated_time[j] for j in ids.tolist()], dtype=np.float64)

    def remember(self, ids: Ids, remaining: Array, iso: Array) -> None:
        self._previous = {
            j: (float(left), float(rate))
            for j, left, rate in zip(ids.tolist(), remaining, iso, strict=True)
        }


def _match(known: Ids, ids: Ids) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.intp]]:
    """(which of ``ids`` are in ``known``, their positions there)."""
    if not len(known):
        return np.zeros(len(ids), dtype=bool), np.zeros(0, dtype=np.intp)
    dense = _dense_match(known, ids)
    if dense is not None:
        return dense
    order = np.argsort(known, kind="stable")
    at = np.searchsorted(known[order], ids)
    at[at == len(known)] = 0
    found = order[at]
    was = known[found] == ids
    return was, found[was]


def _dense_match(known: Ids, ids: Ids) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.intp]] | None:
    """`_match` by a table indexed by id (ids from 0 to a few times their number, each once in
    ``known``: a simulation's job ids), without sorting; None where that does not hold."""
    n = len(known)
    low = min(int(known.min()), int(ids.min())) if len(ids) else int(known.min())
    top = max(int(known.max()), int(ids.max())) if len(ids) else int(known.max())
    if low < 0 or top > 8 * (n + len(ids)) + 4096:
        return None
    table = np.full(top + 1, -1, dtype=np.intp)
    table[known] = np.arange(n, dtype=np.intp)
    if not (table[known] == np.arange(n)).all():  # an id twice: the sorted match decides
        return None
    at = table[ids]
    was = at >= 0
    return was, at[was]


class IsolatedClock:
    """`PlainIsolatedClock` on arrays: the isolated time of the last `advance`'s jobs, the
    last `remember`'s jobs (ids, remaining work, isolated throughput), and a dict only for
    jobs that left (read again should one come back; none does in a simulation, where a job
    leaves when it finishes)."""

    def __init__(self) -> None:
        none: Ids = np.zeros(0, dtype=np.int64)
        self._ids, self._time = none, np.zeros(0)
        self._last_ids, self._remaining, self._iso = none, np.zeros(0), np.zeros(0)
        self._gone: dict[int, float] = {}

    def advance(self, ids: Ids, remaining: Array) -> Array:
        was, where = _match(self._ids, ids)
        if self._last_ids is self._ids:  # `remember` had the same jobs (the usual case)
            had, last = was, where
        else:
            had, last = _match(self._last_ids, ids)
        spent = np.zeros(len(ids))
        spent[had] = (self._remaining[last] - remaining[had]) / self._iso[last]
        before = np.zeros(len(ids))
        before[was] = self._time[where]
        if self._gone and not was.all():  # jobs absent from the last call but seen earlier
            for i in np.flatnonzero(~was).tolist():
                before[i] = self._gone.get(int(ids[i]), 0.0)
        isolated = before + spent
        kept = np.zeros(len(self._ids), dtype=bool)
        kept[where] = True
        for j, t in zip(self._ids[~kept].tolist(), self._time[~kept].tolist(), strict=True):
            self._gone[j] = t
        self._ids, self._time = ids, isolated.copy()
        return isolated

    def remember(self, ids: Ids, remaining: Array, iso: Array) -> None:
        self._last_ids, self._remaining, self._iso = ids, remaining.copy(), iso.copy()
