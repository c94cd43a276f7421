"""The books of Gavel's round mechanism kept as arrays (the fast path of `GavelRounds`).

The mechanism's plain path (`dlsched.papers.gavel.rounds`) rebuilds at every scheduling point
what it needs from every active job: the active set (two sets of ids), the jobs in arrival
order (`ClusterView.jobs`, a sort through a Python key), the priority table (three dict
look-ups per job) and the whole priority order of every type. On a large virtual cluster
scheduled at every event (Philly: thousands of waiting jobs, a point per arrival and
completion) that is several Python operations per active job per point. Here:

* each active job has a slot in arrays (``x``, time run, deficit, estimated rates, scale,
  arrival keys); slots of departed jobs are dropped in batches;
* the active set is kept from the view's `QueueChanges` (jobs entering and leaving the pending
  list) and the running jobs (a handful), checked against the pending list's length, and
  rebuilt from the view where the changes cannot be trusted;
* each type's order is the exact prefix of the plain path's order (decreasing priority,
  deficit, ``x``, then arrival order) that the greedy walk reads, found by partial selection
  (`prefix`) and extended when the walk reaches its end.

Every number is the same float as the plain path's (the same element-wise operations; the
sums that depend on their order kept in it), so the decisions are the same:
``tests/papers/test_gavel_fast_rounds.py`` compares them at every point.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from dlsched.core import ClusterView, JobRun
from dlsched.placement.typed import scale_of

_Index = npt.NDArray[np.intp]


def prefix(keys: Sequence[npt.NDArray[Any]], cand: _Index, k: int) -> _Index:
    """The first ``k`` of ``cand`` (indices into the keys) in ``np.lexsort`` order of
    ``keys`` (most significant first, ascending), all of them where fewer: the same as
    ``cand[np.lexsort(tuple(reversed(keys)))[:k]]`` restricted to ``cand``, by partial
    selection (the last key must be unique). A key with NaN among the candidates sorts them
    fully (NaN has no partition threshold)."""
    if len(cand) <= k:
        sub = [key[cand] for key in keys]
        return cand[np.lexsort(tuple(reversed(sub)))]
    parts: list[_Index] = []
    rest, need = cand, k
    for key in keys:
        if len(rest) <= need:
            break
        values = key[rest]
        kth = np.partition(values, need - 1)[need - 1]
        if kth != kth:  # NaN
            sub = [key[cand] for key in keys]
            return cand[np.lexsort(tuple(reversed(sub)))][:k]
        below = rest[values < kth]
        parts.append(below)
        need -= len(below)
        rest = rest[values == kth]
    parts.append(rest)
    chosen = np.concatenate(parts)
    sub = [key[chosen] for key in keys]
    return chosen[np.lexsort(tuple(reversed(sub)))][:k]


class Books:
    """Per active job: its slot's ``x``, time run and deficit per type (``(slots, n)``
    arrays), estimated rates, scale, submit time and id; per type the time all jobs ran
    (``worker_time``, Python floats added in the plain path's order).

    Args:
        types: the cluster's GPU types (the columns).
        half_round_s: half a round (every account starts there), seconds.
    """

    def __init__(self, types: tuple[str, ...], half_round_s: float) -> None:
        n = len(types)
        self.types, self.half = types, half_round_s
        self.column = {t: k for k, t in enumerate(types)}
        cap = 64
        self.x = np.zeros((cap, n))
        self.time = np.zeros((cap, n))
        self.deficit = np.zeros((cap, n))
        self.rates = np.ones((cap, n))
        self.scale = np.zeros(cap, dtype=np.int64)
        self.submit = np.zeros(cap)
        self.ids = np.zeros(cap, dtype=np.int64)
        self.live = np.zeros(cap, dtype=bool)
        self.runs: list[JobRun | None] = []
        self.slot: dict[int, int] = {}
        self.worker_time = [0.0] * n
        self.estimates: object = None
        # the active set as last seen: pending jobs (id -> run), running job ids
        self.pending: dict[int, JobRun] = {}
        self.running: set[int] = set()
        self.token: object = None
        self.point = -1
        self._given: _Index | None = None

    # -- the active set ------------------------------------------------------------------------

    def sync(self, view: ClusterView) -> tuple[list[JobRun], list[int]]:
        """The jobs that became active and the ids of those that left since the last point."""
        running = {r.job_id: r for r in view.running}
        changes = view.changes
        left: list[int] = []
        entered: list[JobRun] = []
        trusted = (
            changes is not None and changes.run is self.token and changes.point == self.point + 1
        )
        if trusted and changes is not None:
            pending = self.pending
            for run, joined in changes.log:
                if joined:
                    pending[run.job_id] = run
                    entered.append(run)
                else:
                    pending.pop(run.job_id, None)
                    left.append(run.job_id)
            trusted = len(pending) == len(view.pending)
        slot = self.slot
        if trusted:
            arrivals = [r for r in entered if r.job_id not in slot and r.job_id in self.pending]
            arrivals += [r for j, r in running.items() if j not in slot]
            arrivals = list({r.job_id: r for r in arrivals}.values())
            gone = {*self.running, *left}
            departures = [
                j for j in gone if j in slot and j not in running and j not in self.pending
            ]
        else:
            self.pending = {r.job_id: r for r in view.pending}
            active = {**running, **self.pending}
            arrivals = [r for j, r in active.items() if j not in slot]
            departures = [j for j in slot if j not in active]
        self.running = set(running)
        if changes is not None:
            self.token, self.point = changes.run, changes.point
        else:
            self.token, self.point = None, -1
        return arrivals, departures

    # -- slots ---------------------------------------------------------------------------------

    def add(self, runs: list[JobRun], view: ClusterView) -> None:
        """Slots for ``runs``: half a round on every type, no deficit, no ``x`` (Gavel's
        ``add_job``)."""
        estimates = view.type_speeds
        for run in runs:
            s = len(self.runs)
            if s == len(self.live):
                self._grow()
            self.slot[run.job_id] = s
            self.runs.append(run)
            self.live[s] = True
            self.time[s] = self.half
            self.deficit[s] = 0.0
            self.x[s] = 0.0
            self.scale[s] = scale_of(run.spec)
            self.submit[s] = run.spec.submit_time_s
            self.ids[s] = run.job_id
            self.rates[s] = self._rates_row(run, estimates)
            for k in range(len(self.types)):
                self.worker_time[k] += self.half

    def drop(self, job_ids: list[int]) -> None:
        """Forget departed jobs; compact the arrays once most slots are free."""
        for job_id in job_ids:
            s = self.slot.pop(job_id)
            self.live[s] = False
            self.runs[s] = None
        used = len(self.runs)
        if used > 64 and 2 * len(self.slot) < used:
            keep = np.flatnonzero(self.live[:used])
            for name in ("x", "time", "deficit", "rates", "scale", "submit", "ids", "live"):
                array = getattr(self, name)
                moved = array[keep]
                array[: len(keep)] = moved
                array[len(keep) :] = 0
            self.runs = [self.runs[s] for s in keep]
            self._given = None
            self.slot = {int(j): s for s, j in enumerate(self.ids[: len(keep)].tolist())}

    def _grow(self) -> None:
        for name in ("x", "time", "deficit", "rates", "scale", "submit", "ids", "live"):
            array = getattr(self, name)
            bigger = np.zeros((2 * len(array), *array.shape[1:]), dtype=array.dtype)
            bigger[: len(array)] = array
            setattr(self, name, bigger)
        self.rates[len(self.runs) :] = 1.0

    def _rates_row(self, run: JobRun, estimates: object) -> list[float]:
        if estimates is None:
            return [1.0] * len(self.types)
        row = estimates.of(run.spec)  # type: ignore[attr-defined]
        return [row.get(t, 0.0) for t in self.types]

    def check_estimates(self, view: ClusterView) -> None:
        """Read every row again if the view's estimates are another object."""
        if view.type_speeds is not self.estimates:
            self.estimates = view.type_speeds
            for s, run in enumerate(self.runs):
                if run is not None:
                    self.rates[s] = self._rates_row(run, self.estimates)

    # -- the round's reads -----------------------------------------------------------------------

    def live_slots(self) -> _Index:
        """Slots of the active jobs, ascending."""
        return np.flatnonzero(self.live[: len(self.runs)])

    def arrival_order(self) -> _Index:
        """Slots of the active jobs in arrival order (`ClusterView.jobs`' order)."""
        slots = self.live_slots()
        submit, ids = self.submit[slots], self.ids[slots]
        later = submit[1:] > submit[:-1]
        if (later | ((submit[1:] == submit[:-1]) & (ids[1:] > ids[:-1]))).all():
            return slots  # slots are taken in arrival order, the usual case: no sort
        return slots[np.lexsort((ids, submit))]

    def set_x(self, slots: _Index, x: npt.NDArray[np.float64]) -> None:
        """Write the allocation's rows ``x`` into ``slots``."""
        self.x[slots] = x
        self._given = None

    def given_time_slots(self) -> _Index:
        """Slots of the active jobs with some ``x`` above 0, ascending (those found after the
        last `set_x` or compaction, less the departed: ``x`` changes nowhere else, and a
        new slot starts at 0)."""
        if self._given is None:
            used = len(self.runs)
            self._given = np.flatnonzero(self.live[:used] & (self.x[:used] > 0.0).any(axis=1))
        given = self._given
        return given[self.live[given]]

    def run_of(self, s: int) -> JobRun:
        run = self.runs[s]
        assert run is not None
        return run


class RunRows(Sequence[JobRun]):
    """The runs of some slots, in the slots' order, read only when asked for (a policy that
    needs only their ids or submit times reads ``ids`` or ``submit_times``, the slots', without
    a Python loop)."""

    def __init__(self, books: Books, slots: _Index) -> None:
        self._books, self._slots = books, slots
        self.ids = books.ids[slots]
        self.submit_times = books.submit[slots]
        self._all: list[JobRun] | None = None

    def __len__(self) -> int:
        return len(self._slots)

    def __iter__(self) -> Iterator[JobRun]:
        if self._all is None:  # a policy that reads every run reads them in one pass
            self._all = [self._books.run_of(s) for s in self._slots.tolist()]
        return iter(self._all)

    @overload
    def __getitem__(self, i: int) -> JobRun: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[JobRun]: ...

    def __getitem__(self, i: int | slice) -> JobRun | Sequence[JobRun]:
        if isinstance(i, slice):
            return [self._books.run_of(int(s)) for s in self._slots[i]]
        return self._books.run_of(int(self._slots[i]))


def repeated_sum(value: float, count: int) -> float:
    """``0.0 + value + value + ...`` (``count`` times, in order): exactly ``value * count``
    where every partial sum is an integer below 2**53."""
    if value.is_integer() and abs(value) * count < 2.0**53:
        return float(value * count)
    total = 0.0
    for _ in range(count):
        total += value
    return total


def remaining_works(runs: Sequence[JobRun], now_s: float) -> npt.NDArray[np.float64]:
    """Each run's ``remaining_work(now_s)``, in order: from the runs' own ``remaining_works``
    where they have one (the compiled core's runs: one array operation, the same floats),
    else one call per run."""
    whole = getattr(runs, "remaining_works", None)
    if whole is not None:
        return np.asarray(whole(now_s), dtype=np.float64)
    return np.array([r.remaining_work(now_s) for r in runs], dtype=np.float64)
