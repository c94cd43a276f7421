"""Gavel's round-based mechanism (Narayanan et al., OSDI 2020, §4): turns a policy's allocation
``X`` (the fraction of time each job should get on each GPU type) into the jobs that run in the
next round, and where.

Every round (the workload's scheduling interval, 360 s in Gavel):

1. the time each job ran on each type last round is added to its account (``job_time``, and
   the type's ``worker_time``);
2. when the set of jobs changed and at least ``reset_every_s`` passed since the last reset (or
   none happened yet), the policy computes a new ``X`` and the accounts restart (Gavel's
   ``_reset_time_run_so_far``: every job starts at half a round on every type; the gap between
   what it should have had and what it got accrues to its ``deficit``);
3. each job's priority on type ``t`` is ``X[j, t]`` divided by the fraction of type ``t``'s time
   it got since the reset (``X * 1e9`` before it got any; 0 where ``X`` is 0);
4. per type (for a heterogeneity-aware policy Gavel's fixed order, V100, P100, K80: see
   `AWARE_TYPE_ORDER`; a seeded shuffle otherwise), jobs in decreasing (priority, deficit, X)
   order are scheduled while the type has GPUs left, each job once;
5. a job keeps its servers where it ran on the same type and they are still free; others get
   servers of their type (one server if one fits them, else the emptiest first).

Jobs are placed in an order the executor can apply (jobs moving between servers first, each on
room free at its turn, then jobs starting), so no target fails for want of room another target
would free. A policy subclass gives ``allocation``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from dlsched.core import Cluster, ClusterView, Decision, JobRun, JobSpec, Resources
from dlsched.papers.gavel.books import Books, RunRows, prefix, repeated_sum
from dlsched.papers.gavel.lp import Array, Problem
from dlsched.placement.typed import not_fixed_gpu_jobs, place_changes, place_on_types, scale_of
from dlsched.schedulers.base import BaseScheduler

UNTYPED = "gpu"
SETTING = "fixed-GPU, heterogeneous (gavel, philly, trace)"
"""The registry's setting of every Gavel policy."""
SOURCE = "Gavel (Narayanan et al., OSDI 2020)"
"""The one type of a cluster that names none."""
AWARE_TYPE_ORDER = ("v100", "p100", "k80")
"""The order in which a heterogeneity-aware policy's round fills GPU types: Gavel's, which is
fixed (``worker_types = ["v100", "p100", "k80"]`` in its ``_schedule_jobs_on_workers``), newest
generation first. Types it does not name come after, the fastest mean estimated rate first.
(Ordering all types by mean estimated rate instead can put the P100 first for job mixes where some
types run faster there, and moved the aware policies' makespans +9 % and average JCTs up to
-21 % away from Gavel's: `benchmarks/gavel_side_by_side.py`.)"""
_BIG = 1e9
_WHOLE_ORDER = 256
"""Up to this many active jobs a round sorts every type's whole order in one `np.lexsort`
(NumPy's cost per call dominates: ~70 jobs at Gavel's sizes); above, each type's walk reads
exact prefixes of it (`dlsched.papers.gavel.books.prefix`: thousands of jobs on Philly)."""


class GavelRounds(BaseScheduler):
    """The mechanism; subclasses give `allocation` (the policy).

    Attributes:
        aware: whether the policy reads the per-type speed estimates (``view.type_speeds``);
            an agnostic policy sees every type as equally fast (rates of 1.0).
        reset_every_s: least time between allocation resets (Gavel's
            ``minimum_time_between_allocation_resets``), seconds.
        skip_zero_priority: schedule only jobs the allocation gives time (Gavel's FIFO).
    """

    preemptive: ClassVar[bool] = True
    aware: ClassVar[bool] = True
    reset_every_s: ClassVar[float] = 1920.0
    skip_zero_priority: ClassVar[bool] = False
    round_core: ClassVar[str | None] = None
    """The name under which the compiled core (`dlsched.sim.gavel_core_run`) replays the
    policy on one GPU type (its allocation by `round_allocation`); None: it does not. Read
    only where the class itself sets it (a subclass changing the mechanism is not replayed)."""

    def __init__(self) -> None:
        self.plain = False
        """Take the plain path (every job's books rebuilt at every point) rather than the
        fast one (`dlsched.papers.gavel.books`); the same decisions (tests compare them)."""
        self.reset()

    def reset(self) -> None:
        # per job, one entry per GPU type in the order of ``decide``'s ``types``
        self._x: dict[int, list[float]] = {}
        self._job_time: dict[int, list[float]] = {}
        self._worker_time: dict[str, float] = {}
        self._deficit: dict[int, list[float]] = {}
        self._last_reset_s: float | None = None
        self._last_point_s: float | None = None
        self._known: set[int] = set()
        self._changed = False
        self._shuffle = random.Random(5)
        self._rows_of: tuple[object, tuple[str, ...]] | None = None
        self._rows: dict[int, list[float]] = {}
        self._books: Books | None = None

    def cannot_run(self, jobs: Sequence[JobSpec], servers: Sequence[Resources]) -> str | None:
        """Gavel schedules GPU jobs of a fixed size: no parameter servers, at least one GPU."""
        return not_fixed_gpu_jobs(self.name, jobs)

    # -- the policy ----------------------------------------------------------------------------

    def allocation(self, problem: Problem, runs: Sequence[JobRun], now_s: float) -> Array:
        """``(m, n)`` time fractions for ``runs`` on the problem's types (the policy)."""
        raise NotImplementedError

    def policy_rates(self, rates: Array, types: tuple[str, ...]) -> Array:
        """The rates the policy plans with (``types``: the columns' GPU types): the estimates if
        aware, else all 1.0 (types alike).

        The mechanism itself never runs a job on a type whose estimate is 0, aware or not (as
        Gavel's)."""
        return rates if self.aware else np.ones_like(rates)

    # -- the mechanism -------------------------------------------------------------------------

    def decide(self, view: ClusterView) -> Decision:
        if not self.plain:
            return self._decide_fast(view)
        cluster = view.cluster
        server_types = cluster.server_types or (UNTYPED,) * cluster.num_servers
        types = tuple(dict.fromkeys(server_types))
        runs = view.jobs()
        round_s = view.interval_s or 360.0
        self._account(view, server_types, types, round_s)
        rates = self._rates(view, runs, types)
        if self._changed and (
            self._last_reset_s is None or view.now_s - self._last_reset_s >= self.reset_every_s
        ):
            self._reset_accounts(view.now_s, types, round_s)
            self._recompute(view, runs, types, rates)
        chosen = self._choose(runs, types, rates, cluster.gpus_by_type() or _gpus(view))
        return _place(view, server_types, chosen)

    def _rates(self, view: ClusterView, runs: Sequence[JobRun], types: tuple[str, ...]) -> Array:
        """``(m, n)`` estimated rates (all 1.0 without estimates); each job's row read once
        (the estimates of a run never change)."""
        estimates = view.type_speeds
        if estimates is None:
            return np.ones((len(runs), len(types)))
        if self._rows_of != (estimates, types):
            self._rows_of, self._rows = (estimates, types), {}
        rows = self._rows
        for r in runs:
            if r.job_id not in rows:
                row = estimates.of(r.spec)
                rows[r.job_id] = [row.get(t, 0.0) for t in types]
        return np.array([rows[r.job_id] for r in runs], dtype=float).reshape(len(runs), len(types))

    def _recompute(
        self, view: ClusterView, runs: Sequence[JobRun], types: tuple[str, ...], rates: Array
    ) -> None:
        gpus = view.cluster.gpus_by_type() or _gpus(view)
        problem = Problem(
            rates=self.policy_rates(rates, types),
            scale=np.array([float(scale_of(r.spec)) for r in runs]),
            gpus=np.array([float(gpus.get(t, 0)) for t in types]),
        )
        x = self.allocation(problem, runs, view.now_s) if runs else np.zeros((0, len(types)))
        self._x = {r.job_id: [float(v) for v in x[i]] for i, r in enumerate(runs)}
        self._changed = False

    def _account(
        self,
        view: ClusterView,
        server_types: Sequence[str],
        types: tuple[str, ...],
        round_s: float,
    ) -> None:
        """Add last round's time to each job's account; note arrivals and departures."""
        now = view.now_s
        elapsed = 0.0 if self._last_point_s is None else now - self._last_point_s
        self._last_point_s = now
        for t in types:
            self._worker_time.setdefault(t, 0.0)
        column = {t: k for k, t in enumerate(types)}
        for run in view.running:
            times = self._job_time.get(run.job_id)
            if run.allocation.workers and times is not None:
                t = server_types[run.allocation.workers[0][0]]
                times[column[t]] += elapsed
                self._worker_time[t] += elapsed
        active = {r.job_id for r in view.running} | {r.job_id for r in view.pending}
        for job_id in active - self._known:  # Gavel's add_job: half a round on every type
            self._job_time[job_id] = [round_s / 2] * len(types)
            self._deficit[job_id] = [0.0] * len(types)
            for t in types:
                self._worker_time[t] += round_s / 2
        for job_id in self._known - active:
            self._job_time.pop(job_id, None)
            self._deficit.pop(job_id, None)
            self._x.pop(job_id, None)
        if active != self._known:
            self._changed = True
            self._known = active

    def _reset_accounts(self, now: float, types: tuple[str, ...], round_s: float) -> None:
        since = 0.0 if self._last_reset_s is None else now - self._last_reset_s
        none = [0.0] * len(types)
        for k, t in enumerate(types):
            self._worker_time[t] = 0.0
            for job_id, times in self._job_time.items():
                got = times[k] - round_s / 2
                owed = self._x.get(job_id, none)[k] * since
                deficit = self._deficit[job_id]
                deficit[k] = deficit[k] + owed - got  # (d + owed) - got, as Gavel adds
                times[k] = round_s / 2
                self._worker_time[t] += round_s / 2
        self._last_reset_s = now

    def _type_order(self, types: tuple[str, ...], rates: Array) -> list[str]:
        """`AWARE_TYPE_ORDER` when aware (other types after it, the fastest mean estimated rate
        first); a seeded shuffle otherwise."""
        order = list(types)
        if self.aware:
            mean = rates.mean(axis=0) if rates.size else np.zeros(len(types))
            rank = {t: k for k, t in enumerate(AWARE_TYPE_ORDER)}
            order = sorted(order, key=lambda t: (rank.get(t, len(rank)), -mean[types.index(t)]))
        elif len(order) > 1:
            self._shuffle.shuffle(order)
        return order

    def _choose(
        self,
        runs: Sequence[JobRun],
        types: tuple[str, ...],
        rates: Array,
        gpus: Mapping[str, int],
    ) -> list[tuple[JobRun, str]]:
        """The jobs to run next round and their types (Gavel's greedy over priorities)."""
        if not runs:
            return []
        left = {t: int(gpus.get(t, 0)) for t in types}
        scales = [scale_of(run.spec) for run in runs]
        orders = self._by_priority(runs, types, rates)
        chosen: list[tuple[JobRun, str]] = []
        taken = [False] * len(runs)
        for t in self._type_order(types, rates):
            room = left[t]
            for i in orders(types.index(t)):
                if room <= 0:
                    break  # the rest of this type's jobs find no GPU either
                if taken[i] or scales[i] > room:
                    continue
                room -= scales[i]
                taken[i] = True
                chosen.append((runs[i], t))
            left[t] = room
        return chosen

    def _priorities(
        self, x: Array, job_time: Array, worker_time: Array, rates: Array
    ) -> tuple[Array, npt.NDArray[np.bool_]]:
        """Gavel's round priorities (allocation share over the fraction of time received; a job
        that received none yet ranks ``_BIG`` times its share) and which (job, type) pairs may
        be chosen: rate above 0 and, where `skip_zero_priority`, priority above 0. Arrays are
        (jobs, types)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            fraction = np.where(worker_time > 0, job_time / worker_time, 0.0)
            share = np.where(fraction > 0, x / fraction, x * _BIG)
        return self._chosen_by(x, rates, share)

    def _chosen_by(
        self, x: Array, rates: Array, share: Array
    ) -> tuple[Array, npt.NDArray[np.bool_]]:
        """The priorities (``share`` where the allocation ``x`` and the rate are above 0, else 0)
        and the (job, type) pairs that may be chosen (`_priorities`)."""
        priority = np.where((x <= 0.0) | (rates <= 0.0), 0.0, share)
        allowed = rates > 0.0
        if self.skip_zero_priority:
            allowed &= priority > 0.0
        return priority, allowed

    def _by_priority(
        self, runs: Sequence[JobRun], types: tuple[str, ...], rates: Array
    ) -> Callable[[int], list[int]]:
        """For the type of column ``k``: the indices of the jobs that may run on it in
        decreasing (priority, deficit, ``X``) order, ties by index (priority: see the module
        doc); jobs of zero priority left out where `skip_zero_priority`, and jobs whose
        estimated rate on the type is 0. The priorities of every type are computed at once."""
        none = [0.0] * len(types)
        books = (self._x, self._job_time, self._deficit)
        table = [[book.get(r.job_id, none) for r in runs] for book in books]
        x, job_time, deficit = np.array(table, dtype=float).reshape(3, len(runs), len(types))
        worker_time = np.array([self._worker_time.get(t, 0.0) for t in types])
        priority, allowed = self._priorities(x, job_time, worker_time, rates)
        index = np.arange(len(runs))

        def order(k: int) -> list[int]:
            ranked = np.lexsort((index, -x[:, k], -deficit[:, k], -priority[:, k]))
            return ranked[allowed[ranked, k]].tolist()

        return order

    # -- the fast path (`dlsched.papers.gavel.books`): the plain path's decisions ---------------

    def _decide_fast(self, view: ClusterView) -> Decision:
        cluster = view.cluster
        server_types = cluster.server_types or (UNTYPED,) * cluster.num_servers
        types = tuple(dict.fromkeys(server_types))
        round_s = view.interval_s or 360.0
        books = self._books
        if books is None or books.types != types or books.half != round_s / 2:
            if books is not None:
                raise ValueError("the cluster's GPU types or the round changed during a run")
            books = self._books = Books(types, round_s / 2)
        books.check_estimates(view)
        now = view.now_s
        elapsed = 0.0 if self._last_point_s is None else now - self._last_point_s
        self._last_point_s = now
        arrivals, departures = books.sync(view)
        column, worker_time, slot_of = books.column, books.worker_time, books.slot
        ran: list[int] = []  # last round's time, as `_account`: slots and columns
        on: list[int] = []
        for run in view.running:
            s = slot_of.get(run.job_id)
            workers = run.allocation.workers
            if workers and s is not None:
                ran.append(s)
                on.append(column[server_types[workers[0][0]]])
        if ran:  # one addition per (slot, column): each job has its own slot
            books.time[ran, on] += elapsed
            for k in on:  # in the order of the running jobs, as `_account`
                worker_time[k] += elapsed
        books.add(arrivals, view)
        books.drop(departures)
        if arrivals or departures:
            self._changed = True
        if self._changed and (
            self._last_reset_s is None or now - self._last_reset_s >= self.reset_every_s
        ):
            self._reset_books(books, now)
            self._recompute_books(view, books, types)
        chosen = self._choose_books(books, types, cluster.gpus_by_type() or _gpus(view))
        return _place(view, server_types, chosen)

    def _reset_books(self, books: Books, now: float) -> None:
        """`_reset_accounts` on the arrays (the same element-wise operations)."""
        since = 0.0 if self._last_reset_s is None else now - self._last_reset_s
        slots = books.live_slots()
        half = books.half
        x, times, deficit = books.x[slots], books.time[slots], books.deficit[slots]
        books.deficit[slots] = (deficit + x * since) - (times - half)
        books.time[slots] = half
        total = repeated_sum(half, len(slots))
        for k in range(len(books.types)):
            books.worker_time[k] = total
        self._last_reset_s = now

    def _recompute_books(self, view: ClusterView, books: Books, types: tuple[str, ...]) -> None:
        """`_recompute` with the active jobs in arrival order."""
        order = books.arrival_order()
        runs = RunRows(books, order)
        rates, scale = books.rates[order], books.scale[order].astype(float)
        books.set_x(order, self.round_allocation(view.cluster, rates, scale, runs, view.now_s))
        self._changed = False

    def round_allocation(
        self, cluster: Cluster, rates: Array, scale: Array, runs: Sequence[JobRun], now_s: float
    ) -> Array:
        """The policy's ``(m, n)`` allocation at a reset for ``runs`` (the active jobs in
        arrival order) with estimated ``rates`` ``(m, n)`` on ``cluster``'s types and
        ``scale`` (GPUs of each job): what the fast path and the compiled core
        (`dlsched.sim.gavel_core_run`) write into the books."""
        types = tuple(dict.fromkeys(cluster.server_types or (UNTYPED,) * cluster.num_servers))
        gpus = cluster.gpus_by_type() or {UNTYPED: int(cluster.total.gpu)}
        problem = Problem(
            rates=self.policy_rates(rates, types),
            scale=scale,
            gpus=np.array([float(gpus.get(t, 0)) for t in types]),
        )
        return self.allocation(problem, runs, now_s) if len(runs) else np.zeros((0, len(types)))

    def _choose_books(
        self, books: Books, types: tuple[str, ...], gpus: Mapping[str, int]
    ) -> list[tuple[JobRun, str]]:
        """`_choose` over the exact prefixes of each type's order that its walk reads."""
        if not books.slot:  # no active job
            return []
        # only jobs given time may run where zero priority is skipped: the rest (most of a
        # long queue) are never read; the types' order is still drawn if none is given time
        slots = books.given_time_slots() if self.skip_zero_priority else books.live_slots()
        left = {t: int(gpus.get(t, 0)) for t in types}
        x, deficit, rates = books.x[slots], books.deficit[slots], books.rates[slots]
        job_time = books.time[slots]
        priority, allowed = self._priorities_fast(x, job_time, books.worker_time, rates)
        submit, ids, scale = books.submit[slots], books.ids[slots], books.scale[slots]
        chosen: list[tuple[JobRun, str]] = []
        taken: set[int] = set()
        whole = None
        if len(slots) <= _WHOLE_ORDER:  # every type's whole order at once (one call)
            shape = priority.shape
            whole = np.lexsort(
                (
                    np.broadcast_to(ids[:, None], shape),
                    np.broadcast_to(submit[:, None], shape),
                    -x,
                    -deficit,
                    -priority,
                ),
                axis=0,
            )
        sizes = scale.tolist()
        runs, slot_of = books.runs, slots.tolist()  # `books.run_of(int(slots[i]))`, in lists
        for t in self._type_order_books(types, books, rates):
            k = types.index(t)
            room, size, at = left[t], 64, 0
            keys: tuple[npt.NDArray[Any], ...] = ()
            cand = slots[:0]
            if whole is not None:
                ranked = whole[:, k]
                order = ranked[allowed[ranked, k]].tolist()
                count = len(order)
            else:
                keys = (-priority[:, k], -deficit[:, k], -x[:, k], submit, ids)
                cand = np.flatnonzero(allowed[:, k])
                count = len(cand)
                order = prefix(keys, cand, size).tolist()
            end = len(order)
            while room > 0:
                if at == end:
                    if end >= count:
                        break
                    size *= 4
                    order = prefix(keys, cand, size).tolist()
                    end = len(order)
                    continue
                i = order[at]
                at += 1
                if i in taken or sizes[i] > room:
                    continue
                room -= sizes[i]
                taken.add(i)
                run = runs[slot_of[i]]
                assert run is not None  # a live slot
                chosen.append((run, t))
            left[t] = room
        return chosen

    def round_type_order(self, types: tuple[str, ...]) -> tuple[list[str], bool] | None:
        """For the compiled core: the order in which the next round fills ``types`` (every
        type, not the jobs, decides it) and whether every round has it (Gavel's order, or one
        type); else the next seeded shuffle, drawn now as the round would. None where it
        depends on the jobs (aware, several types Gavel's order does not name)."""
        if not self.aware or len(types) == 1:
            return self._type_order(types, np.zeros((0, len(types)))), len(types) == 1
        if sum(t not in AWARE_TYPE_ORDER for t in types) > 1:
            return None
        return self._type_order(types, np.ones((1, len(types)))), True

    def _type_order_books(
        self, types: tuple[str, ...], books: Books, rates: Array
    ) -> Sequence[str]:
        """`_type_order`; the mean rates (read only to order types Gavel's order does not
        name) taken in arrival order, as the plain path's; Gavel's order itself where it
        names every type (the same at every round)."""
        if self.aware:
            unnamed = sum(t not in AWARE_TYPE_ORDER for t in types)
            if not unnamed:
                return [t for t in AWARE_TYPE_ORDER if t in types]
            if unnamed > 1:
                rates = books.rates[books.arrival_order()]
        return self._type_order(types, rates)

    def _priorities_fast(
        self, x: Array, job_time: Array, worker_time: list[float], rates: Array
    ) -> tuple[Array, npt.NDArray[np.bool_]]:
        """`_priorities` (the same floats: each division made only where its divisor is
        above 0, the value of the other branch elsewhere), without NumPy's error state."""
        times = np.array(worker_time)
        fraction = np.zeros(job_time.shape)
        np.divide(job_time, times, out=fraction, where=times > 0)
        share = x * _BIG
        np.divide(x, fraction, out=share, where=fraction > 0)
        return self._chosen_by(x, rates, share)


def _place(
    view: ClusterView, server_types: Sequence[str], chosen: list[tuple[JobRun, str]]
) -> Decision:
    """`place_on_types`' decision, as changes only where that is the same (`place_changes`)."""
    decision = place_changes(view, server_types, chosen)
    return place_on_types(view, server_types, chosen) if decision is None else decision


def lp_argument(name: str, arg: str) -> None:
    """The check of the ``:lp`` argument of the policies that solve an LP (`dlsched.schedulers.
    registry`): the LP on one-type clusters too, as before 2026-11-27 (`one_type`)."""
    if arg != "lp":
        raise ValueError(f"scheduler {name}:{arg}: the only argument is 'lp'")


def _gpus(view: ClusterView) -> dict[str, int]:
    return {UNTYPED: int(view.cluster.total.gpu)}
