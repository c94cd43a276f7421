"""SCED²-L: a learned job-selection rule over the whole queue, with locality holds and a
reservation planned over *estimated* durations.

Why not the Q-network alone (issue 17): the DQN chooses among J = 10 visible jobs and, trained
from DSIF demonstrations, reaches about DSIF's quality and no more — its action space can express
DSIF's choice but not what makes DSIF lose. On ``sched2`` traces at load 1.8 the losses are:

* **locality collapses for long jobs**: a 4-GPU, 12 h transformer spread over 4 servers runs
  3.3× slower and alone sets the makespan (SIF, validation trace 90001: 142,123 s of running for
  43,507 s of work);
* **big jobs starve**: 16- and 32-GPU jobs wait 25,000–70,000 s, until arrivals stop, because
  small short jobs keep taking the servers they need; they then run last, at the end of the trace.

This policy sees the same things as SCED²'s agent — each waiting job's GPU demand, waiting time
and its ``k`` profiled times (`dlsched.papers.sched2.profiling`, measured with noise, never the
simulator's true speed), and the estimated remaining time of every running job (its remaining
work over its *profiled* speed on its placement) — but over the whole queue, and decides with a
rule of nine parameters (`LookaheadParams`) found by the cross-entropy method on the objective
itself (`dlsched.papers.sched2.lookahead_train`):

1. **Priority** (lower first): ``log(T_best) + gpu_exp · log(GPUs) − aging · log1p(wait / 1 h)``
   with ``T_best`` the profiled time at the best placement.
2. **Locality hold**: a job whose packing placement now would make it slower than
   ``(1 + slow_tol) · T_best`` (estimated from its profile) waits, unless it has waited
   ``patience · T_best`` already.
3. **Reservation with lookahead** (EASY backfilling over estimates): the longest-waiting job
   that has waited at least ``reserve_after_h`` hours and cannot start now (it does not fit, or
   it is held) gets the servers that will give it its best locality soonest, by the estimated
   remaining times of their jobs (time ``t*``). Other jobs may use those servers only if their
   estimated time there ends by ``backfill · t*``; elsewhere they start as usual.
4. **Promotion**: a job that has waited ``promote_after`` times its best profiled time goes
   ahead of the others (promoted jobs in arrival order).
5. **Placement**: a job that fits on one server goes to the one with the tightest fit plus
   ``match`` times the mismatch between its estimated time and the remaining times of the
   server's jobs (so that servers empty at once and big jobs find whole servers) plus
   ``open_cost`` for an idle server; larger jobs are packed (SCED² Fig. 2).

The engine applies exactly the placements decided here. Non-preemptive.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from dlsched.core import Allocation, ClusterView, Decision, JobRun, JobSpec, Resources, Target
from dlsched.papers.sched2.lookahead_queue import Entry, Job, RankedQueue
from dlsched.papers.sched2.lookahead_walk import Walk
from dlsched.papers.sched2.packings import Packings
from dlsched.papers.sched2.profiling import JobProfile, Profiler
from dlsched.papers.sched2.reservation_scan import ReservationScan
from dlsched.schedulers.base import BaseScheduler
from dlsched.schedulers.common import RoomCounts
from dlsched.schedulers.saf import pack_allocation

HOUR_S = 3600.0


@dataclass(frozen=True)
class LookaheadParams:
    """The rule's parameters (module docstring); every one is ≥ 0.

    Attributes:
        gpu_exp: weight of ``log(GPUs)`` in the priority (0: shortest first; 1: least
            GPU-time first).
        aging: weight of ``log1p(wait / 1 h)`` in the priority (0: no aging).
        slow_tol: tolerated estimated slowdown from locality before a job is held (0.25: hold
            jobs that would run over 25 % slower than at their best placement).
        patience: longest hold, in multiples of the job's best profiled time.
        reserve_after_h: hours a job must have waited before it gets a reservation.
        backfill: other jobs may use reserved servers if they end by ``backfill · t*``.
        match: weight of the end-time mismatch in choosing a server for a one-server job
            (mean ``|log1p(t_gpu / 1 h) − log1p(T / 1 h)|`` over the server's busy GPUs).
        open_cost: extra cost of starting a one-server job on an idle server.
        promote_after: a job that has waited this many times its best profiled time goes ahead
            of every job not promoted (promoted jobs in arrival order), so that it gets the
            reservation or starts: long jobs do not wait for the queue to drain.
    """

    gpu_exp: float = 0.0
    aging: float = 0.0
    slow_tol: float = 0.25
    patience: float = 1.0
    reserve_after_h: float = 4.0
    backfill: float = 1.0
    match: float = 0.0
    open_cost: float = 0.0
    promote_after: float = 1e6

    NAMES: ClassVar[tuple[str, ...]] = (
        "gpu_exp",
        "aging",
        "slow_tol",
        "patience",
        "reserve_after_h",
        "backfill",
        "match",
        "open_cost",
        "promote_after",
    )

    @staticmethod
    def from_vector(values: list[float]) -> LookaheadParams:
        """Parameters from a vector in `NAMES` order, clipped at 0."""
        return LookaheadParams(*(max(0.0, float(v)) for v in values))

    def vector(self) -> list[float]:
        return [float(getattr(self, f.name)) for f in fields(self)]

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


_Placed = tuple[JobSpec, Allocation, float, float, tuple[tuple[int, int], ...], int]
"""A running job as `LookaheadScheduler._free_times` keeps it (`LookaheadScheduler._place`)."""


@dataclass
class _Candidate:
    run: JobRun
    profile: JobProfile
    best_s: float
    best_span: int
    key: float


class LookaheadScheduler(BaseScheduler):
    """SCED²-L (module docstring).

    Args:
        params: the rule's parameters.
        gpus_per_server: M (for the best span ``ceil(GPUs / M)``).
        profile_seed: seed of the profiler's measurement noise.

    Attributes:
        trained_setting: the card's ``trained_setting`` (`dlsched.rl.setting`), set by the
            loader; None: not said.
    """

    name = "sched2"
    preemptive: ClassVar[bool] = False
    trained_setting: dict[str, Any] | None = None

    def __init__(
        self, params: LookaheadParams, gpus_per_server: int = 8, *, profile_seed: int = 0
    ) -> None:
        self.params = params
        self.gpus_per_server = gpus_per_server
        self.profiler = Profiler(gpus_per_server, seed=profile_seed)
        self._known: dict[int, tuple[JobSpec, JobProfile, float, int, float]] = {}
        self._placed: dict[int, _Placed] = {}
        self._queue = self._new_queue()
        self._scan = ReservationScan(self._slow, self._patience_s)

    def _new_queue(self) -> RankedQueue:
        return RankedQueue(self._queued, self.params.promote_after, self.params.aging)

    def reset(self) -> None:
        self.profiler._cache.clear()
        self._known.clear()
        self._placed.clear()
        self._queue = self._new_queue()
        self._scan = ReservationScan(self._slow, self._patience_s)

    def _slow(self, run: JobRun, k: int) -> bool:
        """Whether the job's estimate on ``k`` servers is over ``(1 + slow_tol) · T_best``
        (`_startable`'s float test)."""
        _, prof, best_s, _, _ = self._entry(run.spec)
        return prof.estimate_time_s(k) > (1.0 + self.params.slow_tol) * best_s

    def _patience_s(self, run: JobRun) -> float:
        """``patience · T_best`` (s): the job may be held while its wait is below it."""
        return self.params.patience * self._entry(run.spec)[2]

    def _queued(self, run: JobRun) -> tuple[float, float, float]:
        """What the waiting queue keeps of a job: the time-free part of its key, its best
        profiled time s and its estimated time on one server s."""
        _, prof, best_s, _, base = self._entry(run.spec)
        return base, best_s, prof.estimate_time_s(1)

    def cannot_run(self, jobs: Sequence[JobSpec], servers: Sequence[Resources]) -> str | None:
        """`Profiler.cannot_profile`'s reason, where some job cannot be profiled."""
        return self.profiler.cannot_profile(jobs)

    def _learn(self, spec: JobSpec) -> tuple[JobSpec, JobProfile, float, int, float]:
        """What a waiting job's candidate reads that does not change while it waits, kept by
        job id: (its spec, profile, best profiled time s, best span in servers, the time-free
        part of its priority key: the same float the whole key began with before)."""
        prof = self.profiler.profile(spec)
        g = max(1, spec.num_gpus)
        best_s = max(prof.times_s[0], 1.0)
        base = math.log(best_s) + self.params.gpu_exp * math.log(g)
        entry = (spec, prof, best_s, math.ceil(g / self.gpus_per_server), base)
        self._known[spec.job_id] = entry
        return entry

    def _entry(self, spec: JobSpec) -> tuple[JobSpec, JobProfile, float, int, float]:
        known = self._known.get(spec.job_id)
        return known if known is not None and known[0] is spec else self._learn(spec)

    # -- estimates -----------------------------------------------------------------------

    def _free_times(
        self, view: ClusterView, free: list[list[float]] | None = None
    ) -> list[list[float]]:
        """Per server, the estimated seconds until each GPU is free (0 = free now): each
        running job's remaining work over its profiled speed on its placement
        (`JobProfile.estimate_time_s` of `JobRun.remaining_work`, the same floats).
        ``free``: the cluster's free rows, where the caller has them."""
        m = self.gpus_per_server
        now = view.now_s
        if free is None:
            free = view.cluster.free_rows()
        times: list[list[float]] = [[0.0] * round(row[0]) for row in free]
        placed = self._placed
        for run in view.running:
            kept = placed.get(run.job_id)
            if kept is None or kept[0] is not run.spec or kept[1] is not run.allocation:
                kept = self._place(run)
            _, _, total, divisor, workers, single = kept
            # `remaining_work(now)` written out at every point (the time moves): each max/min
            # becomes the comparison that picks the same operand, so the same float results
            start = run.progress_time_s
            paused = run.paused_until_s
            if paused > start:
                start = paused
            done = run.progress_s
            rate = run.rate
            if not (rate <= 0.0 or now <= start):
                done = done + rate * (now - start)
                if not done < total:
                    done = total
            left = total - done
            left = (left if left > 0.0 else 0.0) / divisor
            if single >= 0:
                times[single].append(left)
                continue
            for server, n in workers:
                if n == 1:
                    times[server].append(left)
                else:
                    times[server].extend([left] * n)
        for row in times:
            row.sort()
            del row[m:]
        return times

    def _place(self, run: JobRun) -> _Placed:
        """What `_free_times` keeps of a running job while its spec and placement stay:
        (spec, allocation, total work, the divisor of `JobProfile.estimate_time_s` on its
        span, its workers, and its server if it is one worker on one server, else -1)."""
        spec, alloc = run.spec, run.allocation
        speed = self._entry(spec)[1].estimate_speed(alloc.num_servers)
        workers = alloc.workers
        single = workers[0][0] if len(workers) == 1 and workers[0][1] == 1 else -1
        kept = (spec, alloc, spec.total_work, max(speed, 1e-9), workers, single)
        self._placed[run.job_id] = kept
        return kept

    @staticmethod
    def _reserve(times: list[list[float]], gpus: int, span: int, m: int) -> tuple[float, set[int]]:
        """Servers giving ``gpus`` GPUs on ``span`` servers soonest, and when (seconds from now)."""
        per_server = -(-gpus // span)
        ready = sorted(
            (row[per_server - 1] if per_server <= len(row) else math.inf, s)
            for s, row in enumerate(times)
        )
        chosen = ready[:span]
        return chosen[-1][0], {s for _, s in chosen}

    # -- deciding ------------------------------------------------------------------------

    def decide(self, view: ClusterView) -> Decision:
        """The rule (module docstring): the waiting jobs in key order, each started where it
        may; `dlsched.papers.sched2.lookahead_queue` yields them in that order without keying
        or trying the jobs that cannot start."""
        decision = Decision()
        queue = self._queue.update(view)  # at every point: it follows the queue's changes
        pending = view.pending
        if not pending:
            return decision
        cluster = view.cluster
        # the cluster's rows, read-only: a start replaces the rows it takes from (`_take`)
        free = cluster.free_rows()
        free_gpus = sum(row[0] for row in free)
        if free_gpus < 0.5:
            return decision  # no job starts: the loop below stops before its first candidate
        now = view.now_s
        queue.promote(now)
        times = self._free_times(view, free)
        # each server's room for a worker demand, copied from the cluster's kept counts when
        # first asked and shared by the lanes' status, the packings and the one-server
        # choice; recounted after each start
        rooms = RoomCounts(free, cluster.fits)
        # each shape packed once between two starts (`Packings`): the reservation, the lanes'
        # status and `_startable` read the same placements
        packs = Packings(rooms)
        target, reserve_until, reserved = self._reservation(queue, free, rooms, times, now, packs)
        # more GPUs than any packing on ``free`` can give (``tasks_that_fit`` adds 1e-9 a
        # server): a job asking for more cannot start, so its packing is not tried
        gpu_room = free_gpus + len(free) * 1e-9 + 1e-6
        # parameters that are not finite (NaN keys): every job keyed, as the rule did
        entries = None if queue.finite else self._rank(pending, now)
        walk = Walk(
            queue,
            entries,
            now,
            rooms,
            reserved,
            self.params.backfill * reserve_until,
            gpu_room,
            packs,
        )
        while free_gpus >= 0.5:
            entry = walk.next()  # lowest key first (sort order)
            if entry is None:
                break
            key, _, job_id, run = entry
            if job_id == target:
                continue
            spec = run.spec
            per_worker = spec.worker_demand.gpu
            if per_worker > 0 and spec.num_workers * per_worker > gpu_room:
                continue
            c = self._candidate(run, key)
            alloc = self._startable(rooms, c, now, packs)
            if alloc is None:
                continue
            if alloc.num_servers == 1:
                alloc = self._one_server(rooms, times, c, reserved, reserve_until)
            elif reserved:
                alloc = self._around(free, c, alloc, reserved, reserve_until, packs)
            if alloc is None:
                continue
            est = c.profile.estimate_time_s(alloc.num_servers)
            _take(free, alloc, spec.worker_demand.as_tuple())
            rooms.recount(server for server, _ in alloc.workers)
            packs.changed()
            for server, n in alloc.workers:
                row = times[server]
                for k in range(min(n, len(row))):
                    row[k] = est
                row.sort()
            free_gpus -= spec.num_gpus
            gpu_room -= per_worker * alloc.num_workers
            walk.started(gpu_room)
            decision.targets[job_id] = Target(alloc.num_workers, 0, alloc)
        return decision

    def _rank(self, pending: Sequence[JobRun], now: float) -> list[Entry]:
        """Every waiting job's (priority key, submission time, job id, job) in ``pending``'s
        order (module docstring, 1 and 4): what the rule heapified at every point; used where
        the parameters are not finite (`RankedQueue.finite`)."""
        p = self.params
        aging, promote_after = p.aging, p.promote_after
        known = self._known
        ranked: list[Entry] = []
        for run in pending:
            spec = run.spec
            entry = known.get(spec.job_id)
            if entry is None or entry[0] is not spec:
                entry = self._learn(spec)
            submit = spec.submit_time_s
            wait_h = max(0.0, now - submit) / HOUR_S
            if wait_h * HOUR_S >= promote_after * entry[2]:
                key = -1e9 + submit / HOUR_S  # promoted: arrival order first
            else:
                key = entry[4] - aging * math.log1p(wait_h)
            ranked.append((key, submit, spec.job_id, run))
        return ranked

    def _candidate(self, run: JobRun, key: float) -> _Candidate:
        _, prof, best_s, span, _ = self._entry(run.spec)
        return _Candidate(run, prof, best_s, span, key)

    def _reservation(
        self,
        queue: RankedQueue,
        free: list[list[float]],
        rooms: RoomCounts,
        times: list[list[float]],
        now: float,
        packs: Packings | None = None,
    ) -> tuple[int | None, float, set[int]]:
        """The job that gets a reservation (module docstring, 3), None if none, and the time
        (s from now) and servers reserved for it: the longest-waiting job past
        ``reserve_after_h`` that cannot start now, found by `ReservationScan` without
        checking every old job (each shape packed at most once: ``free`` does not change).
        ``packs``: the point's packings (`Packings` of ``rooms``), shared with the walk."""
        limit_s = self.params.reserve_after_h * HOUR_S
        if packs is None:
            packs = Packings(rooms)

        def pack(job: Job) -> Allocation | None:
            return packs.of(job.run.spec)

        job = self._scan.first_blocked(queue, now, limit_s, pack)
        if job is None:
            return None, math.inf, set()
        c = self._candidate(job.run, 0.0)
        assert self._startable(rooms, c, now, packs) is None
        gpus = max(1, c.run.spec.num_gpus)
        until, servers = self._reserve(times, gpus, c.best_span, self.gpus_per_server)
        return job.job_id, until, servers

    def _startable(
        self, rooms: RoomCounts, c: _Candidate, now: float, packs: Packings | None = None
    ) -> Allocation | None:
        """The job's packing placement on ``free`` unless it does not fit or is held for
        locality (estimated slowdown over ``1 + slow_tol`` and waited under ``patience``).
        ``packs``: the point's packings of ``rooms`` (`Packings`), where the caller has them."""
        p = self.params
        spec = c.run.spec
        if packs is not None:
            alloc = packs.of(spec)
        else:
            need = spec.worker_demand.as_tuple()
            alloc = pack_allocation(list(rooms.free), spec, spec.num_workers, 0, rooms.of(need))
        if alloc is None:
            return None
        est = c.profile.estimate_time_s(alloc.num_servers)
        wait = now - spec.submit_time_s
        if est > (1.0 + p.slow_tol) * c.best_s and wait < p.patience * c.best_s:
            return None
        return alloc

    def _one_server(
        self,
        rooms: RoomCounts,
        times: list[list[float]],
        c: _Candidate,
        reserved: set[int],
        until_s: float,
    ) -> Allocation | None:
        """The server for a job that fits on one: tightest fit, plus ``match`` times the
        end-time mismatch and ``open_cost`` for an idle server; reserved servers only if the
        job ends by ``backfill · t*``."""
        p = self.params
        spec = c.run.spec
        g = spec.num_workers
        need = spec.worker_demand.as_tuple()
        est = c.profile.estimate_time_s(1)
        may_reserved = est <= p.backfill * until_s
        log_est = math.log1p(est / HOUR_S)
        m = self.gpus_per_server
        best: tuple[float, int] | None = None
        for server, room in enumerate(rooms.of(need)):
            if server in reserved and not may_reserved:
                continue
            if room < g:
                continue
            score = (room - g) / m
            busy = [t for t in times[server] if t > 0.0]
            if busy:
                score += (
                    p.match * sum(abs(math.log1p(t / HOUR_S) - log_est) for t in busy) / len(busy)
                )
            else:
                score += p.open_cost
            if best is None or score < best[0]:
                best = (score, server)
        if best is None:
            return None
        return Allocation.of([(best[1], g)])

    def _around(
        self,
        free: list[list[float]],
        c: _Candidate,
        alloc: Allocation,
        reserved: set[int],
        until_s: float,
        packs: Packings | None = None,
    ) -> Allocation | None:
        """``alloc`` if it avoids the reserved servers or ends in time; else a packing placement
        on the other servers at no worse locality; else None. ``packs``: the point's packings
        of ``free`` (`Packings.outside`), where the caller has them."""
        if not any(s in reserved for s, _ in alloc.workers):
            return alloc
        if c.profile.estimate_time_s(alloc.num_servers) <= self.params.backfill * until_s:
            return alloc
        spec = c.run.spec
        if packs is not None:
            outside = packs.outside(spec, reserved)
        else:
            others = [[0.0, 0.0, 0.0] if s in reserved else row[:] for s, row in enumerate(free)]
            outside = pack_allocation(others, spec, spec.num_workers, 0)
        if outside is None or outside.num_servers > alloc.num_servers:
            return None
        return outside


def _take(free: list[list[float]], alloc: Allocation, need: tuple[float, float, float]) -> None:
    """Subtract ``alloc``'s workers of demand ``need`` from ``free``: the rows it takes from
    are replaced, never changed in place (they may be the cluster's own)."""
    for server, n in alloc.workers:
        row = free[server]
        free[server] = [row[0] - need[0] * n, row[1] - need[1] * n, row[2] - need[2] * n]
