"""The trace-driven simulator: arrivals, scheduling points, exact progress, completions.

Progress between events is computed exactly from each job's rate; there is no per-second
stepping. The scheduler only reads a read-only `ClusterView` and returns a `Decision`; the shared
`Executor` (`dlsched.sim.executor`) validates and places it, and this module is the only one that
changes job state.

The public stepping API (as SimPy's ``step()``/``peek()``) lets an environment or a debugger
drive the run one scheduling point at a time; `Simulator.run` is a loop over it::

    while (t := sim.next_point()) is not None:   # simulate to the next scheduling point
        sim.apply(scheduler.decide(sim.view()))  # decide there and apply
    result = sim.result()

(`run` also applies an empty decision without asking, at the points where a policy that
declared ``wake = "head-or-free"`` is asleep; see `BaseScheduler.wake`.) Each view carries
`QueueChanges`: how the pending list changed since the previous point.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from types import MappingProxyType

import numpy as np

from dlsched.core import (
    Allocation,
    Cluster,
    ClusterView,
    Decision,
    JobRun,
    JobSpec,
    QueueChanges,
    Status,
)
from dlsched.models.base import ThroughputModel, no_wait_bound_s
from dlsched.placement.base import Placement
from dlsched.schedulers.base import Scheduler, check_scheduler
from dlsched.sim.config import SimConfig
from dlsched.sim.engine import EventKind, EventQueue
from dlsched.sim.event_log import EventLog
from dlsched.sim.executor import Applying, Executor
from dlsched.sim.metrics import Timeline
from dlsched.sim.pending import PendingList
from dlsched.sim.result import Result, RunTotals

log = logging.getLogger(__name__)


class SimulationStalled(RuntimeError):
    """Jobs wait or hold resources without progress, and nothing will ever change that."""


_NEVER_CHOSEN = Status.unschedulable("never chosen")


class Simulator:
    """Runs one workload under one scheduler.

    Args:
        jobs: the jobs, any order (sorted by submission here).
        cluster: an empty cluster.
        model: true speed of each job (noise-free); schedulers never see it unless oracles.
        scheduler: the policy (`run` calls it; the stepping API reads only its name, whether it
            is preemptive and whether it is an oracle).
        placement: where tasks go when the decision does not say.
        config: timing, noise, rescale costs, horizon.
        workload_name: for the result.
        on_job_finished: called with (jobs finished so far, jobs in all) after each finish
            (progress display; it must not change the simulation).
        record_events: keep the run's `EventLog` (``result().event_log``); nothing else changes.
    """

    def __init__(
        self,
        jobs: Sequence[JobSpec],
        cluster: Cluster,
        model: ThroughputModel,
        scheduler: Scheduler,
        placement: Placement,
        config: SimConfig,
        workload_name: str = "",
        on_job_finished: Callable[[int, int], None] | None = None,
        record_events: bool = False,
    ) -> None:
        self.specs = sorted(jobs, key=lambda j: (j.submit_time_s, j.job_id))
        if len({j.job_id for j in self.specs}) != len(self.specs):
            raise ValueError("job ids must be unique")
        check_scheduler(scheduler)
        self.cluster = cluster
        self.model = model
        self.scheduler = scheduler
        self.placement = placement
        self.config = config
        self.workload_name = workload_name
        self.on_job_finished = on_job_finished
        self.rng = np.random.default_rng(config.seed)
        self.queue = EventQueue()
        self.now_s = 0.0
        self.runs: dict[int, JobRun] = {}
        self.pending = PendingList(self.specs)
        self.running: dict[int, JobRun] = {}
        self.finished: list[JobRun] = []
        self.last_status: dict[int, Status] = {}
        self.timeline = Timeline()
        span_s = self.specs[-1].submit_time_s - self.specs[0].submit_time_s if self.specs else 0.0
        self._timeline_step_s = (
            config.timeline_step_s or config.interval_s or max(600.0, span_s / 2000)
        )
        self.executor = Executor(cluster, placement)
        self._actuator = Applying(lambda run, new: self._set_allocation(run, new, self.now_s))
        self._mover = Applying(lambda run, new: self._set_allocation(run, new, self.now_s, True))
        self.repacked = 0  # moves of split jobs onto one server (`SimConfig.repack`)
        self.event_log = (
            EventLog.attach(self.executor, lambda: self.now_s) if record_events else None
        )
        self._running_list: tuple[JobRun, ...] | None = ()  # running's values; None when stale
        self._slot_clock = [0]  # scheduling points so far, shared by the running jobs
        self._noise: dict[int, float] = {}
        self._next_arrival = 0
        # submission times in arrival order, then +inf: the next arrival's time without a test
        self._arrival_times = [spec.submit_time_s for spec in self.specs] + [math.inf]
        self._gpu_used = 0.0
        self._cpu_used = 0.0
        self._busy_gpu_s = 0.0
        self._busy_cpu_s = 0.0
        self._idle_retries = 0
        self._decisions = 0
        self._started = False
        self._point_s: float | None = None
        self._changes: QueueChanges | None = None  # since the previous point
        self._wall0 = time.perf_counter()
        self._type_speeds = getattr(model, "estimates", None)  # per-type estimates, not truth
        cluster.check_fits(self.specs)

    # -- main loop and stepping API ------------------------------------------------------------

    def run(self) -> Result:
        """Simulate until every job finishes (or the horizon) and return the metrics.

        Raises:
            SimulationStalled: jobs are left that nothing will ever run (whatever the scheduler
                returned, a run never ends early without saying so).
        """
        scheduler = self.scheduler
        # a policy that sleeps until its queue's head or the free resources change (see
        # `BaseScheduler.wake`) is not asked at points where neither did since it started
        # nothing: its answer would be the same empty decision
        sleeps = getattr(scheduler, "wake", None) == "head-or-free" and not scheduler.preemptive
        asleep: tuple[int, int] | None = None
        empty = Decision()
        cluster = self.cluster
        pending = self.pending
        while self.next_point() is not None:
            if asleep is not None and pending and asleep == (cluster.version, pending[0].job_id):
                self.apply(empty)
                continue
            decision = scheduler.decide(self.view())
            asleep = None
            if sleeps and pending and not decision.targets:
                asleep = (cluster.version, pending[0].job_id)
            self.apply(decision)
        return self.result()

    def next_point(self) -> float | None:
        """Simulate up to the next scheduling point with active jobs and return its time (s);
        None once the run is over (every job finished, or the horizon reached).

        Raises:
            RuntimeError: the current point has no decision yet (call `apply` first).
            SimulationStalled: the events ran out with jobs unfinished.
        """
        if self._point_s is not None:
            raise RuntimeError(f"scheduling point {self._point_s} s has no decision: apply() one")
        if not self._started:
            self._start()
        horizon = self.config.horizon_s if self.config.horizon_s is not None else math.inf
        while True:
            t = min(self.queue.peek_time(), self._next_arrival_time())
            if horizon == math.inf and len(self.finished) == len(self.specs):
                # only stale events (completions of allocations since changed) are left: the run
                # ends at its last finish, not at the last stale event's time
                return None
            if t == math.inf or t > horizon:
                if horizon < math.inf:
                    self._advance(horizon)
                else:
                    self._check_all_finished()
                return None
            self._advance(t)
            if self._handle_events_at(t) and (self.pending or self.running):
                if self.config.interval_s is not None:
                    self._redraw_noise(t)
                self._point_s = t
                self._changes = self.pending.changes()
                return t

    def view(self) -> ClusterView:
        """What the scheduler sees at the current point (read-only: its lists and statuses
        cannot be changed through it)."""
        t = self._point_s
        if t is None:
            raise RuntimeError("no current scheduling point: call next_point() first")
        return ClusterView(
            now_s=t,
            cluster=self.cluster,
            pending=self.pending.view(),
            running=self._running_view(),
            interval_s=self.config.interval_s,
            last_status=MappingProxyType(self.last_status),  # type: ignore[arg-type]
            _oracle=self.model.speed if self.scheduler.is_oracle else None,
            changes=self._changes,
            type_speeds=self._type_speeds,
        )

    def apply(self, decision: Decision) -> dict[int, Status]:
        """Apply ``decision`` at the current point (through the shared `Executor`); the status
        of every target that failed, by job id.

        Raises:
            RuntimeError: there is no current point (call `next_point` first).
            TypeError: ``decision`` is not a `Decision` (the error names the scheduler).
        """
        t = self._point_s
        if t is None:
            raise RuntimeError("no current scheduling point: call next_point() first")
        self._point_s = None
        self._decisions += 1
        self.last_status = self.executor.apply(
            decision,
            active=self._active,
            running=self.running.values(),  # read through before anything changes
            preemptive=self.scheduler.preemptive,
            actuator=self._actuator,
            source=self.scheduler.name,
        )
        if self.config.repack:
            self.repacked += len(self.executor.repack(self.running.values(), self._mover))
        self._slot_clock[0] += 1  # every running job's slots_run (see JobRun.count_slots)
        self._record_timeline(t)
        self._watch_for_stall(t)
        return self.last_status

    def result(self) -> Result:
        """The metrics of the run so far (complete once `next_point` returned None)."""
        total = self.cluster.total
        start = self.specs[0].submit_time_s if self.specs else 0.0
        span = max(self.now_s - start, 1e-9)
        bound = (
            float(np.mean([no_wait_bound_s(run.spec, self.model) for run in self.finished]))
            if self.finished
            else math.nan
        )
        return Result.from_runs(
            self.finished,
            RunTotals(
                workload=self.workload_name,
                scheduler=self.scheduler.name,
                seed=self.config.seed,
                num_jobs=len(self.specs),
                events=self.queue.handled + len(self.specs),
                decisions=self._decisions,
                wall_s=time.perf_counter() - self._wall0,
                end_s=self.now_s,
                gpu_util=self._busy_gpu_s / (total.gpu * span) if total.gpu else 0.0,
                cpu_util=self._busy_cpu_s / (total.cpu * span) if total.cpu else 0.0,
                jct_bound_s=bound,
                cluster_gpus=float(total.gpu),
            ),
            self.timeline,
            event_log=self.event_log,
        )

    def _start(self) -> None:
        self._started = True
        self._wall0 = time.perf_counter()
        self.scheduler.reset()
        if self.config.interval_s is not None and self.specs:
            self.queue.push(self._next_tick_after(self.specs[0].submit_time_s), EventKind.TICK)

    def _active(self, job_id: int) -> JobRun | None:
        run = self.runs.get(job_id)
        return run if run is not None and run.finish_s is None else None

    def _check_all_finished(self) -> None:
        left = len(self.specs) - len(self.finished)
        if left:
            job_id, reason = self._first_left()
            raise SimulationStalled(
                f"{self.scheduler.name}: no event left with {left} of {len(self.specs)} jobs "
                f"unfinished (job {job_id}: {reason or 'no progress'})"
            )

    def _first_left(self) -> tuple[int, str]:
        """The first job waiting (else running) and why it is not done, for a stall error."""
        first = self.pending[0] if self.pending else next(iter(self.running.values()))
        return first.job_id, self.last_status.get(first.job_id, _NEVER_CHOSEN).reason

    def _next_arrival_time(self) -> float:
        return self._arrival_times[self._next_arrival]

    def _next_tick_after(self, t: float) -> float:
        interval = self.config.interval_s
        assert interval is not None
        return math.ceil(t / interval - 1e-12) * interval

    def _handle_events_at(self, t: float) -> bool:
        """Handle every event at time ``t``; return True if a scheduling point follows."""
        changed = False
        tick = False
        times = self._arrival_times
        while times[self._next_arrival] <= t:
            spec = self.specs[self._next_arrival]
            self._next_arrival += 1
            run = JobRun(spec, progress_time_s=t)
            run.ideal_duration_s = spec.total_work / max(self.model.ideal_speed(spec), 1e-12)
            self.runs[spec.job_id] = run
            self.pending.add(run)
            changed = True
            if self.event_log is not None:
                self.event_log.submit(spec.job_id)
        queue = self.queue
        while queue.peek_time() <= t:
            _, kind, payload = queue.pop()
            if kind is EventKind.COMPLETION:
                job_id, version = payload
                run = self.runs[job_id]
                if run.version == version and run.finish_s is None:
                    self._finish(run, t)
                    changed = True
            elif kind is EventKind.TICK:
                tick = True
                self._push_next_tick(t)
            else:  # EventKind.RETRY
                tick = True
        return tick or (changed and self.config.on_events)

    def _push_next_tick(self, t: float) -> None:
        interval = self.config.interval_s
        assert interval is not None
        if self.pending or self.running:
            self.queue.push(t + interval, EventKind.TICK)
        elif self._next_arrival < len(self.specs):
            self.queue.push(self._next_tick_after(self._next_arrival_time()), EventKind.TICK)

    # -- scheduling ----------------------------------------------------------------------------

    def _running_view(self) -> tuple[JobRun, ...]:
        """The running jobs, rebuilt only after one started or stopped (a tuple: schedulers
        get the same object at consecutive points while nothing changed, and cannot change it).
        """
        running = self._running_list
        if running is None:
            running = self._running_list = tuple(self.running.values())
        return running

    def _watch_for_stall(self, t: float) -> None:
        if (
            self._next_arrival < len(self.specs)
            or not (self.pending or self.running)
            or any(run.rate > 0 for run in self.running.values())
        ):
            self._idle_retries = 0
            return
        self._idle_retries += 1
        if self.config.interval_s is None:
            # no tick is coming (events left in the queue may be outdated completions): ask again
            self.queue.push(t + self.config.idle_retry_s, EventKind.RETRY)
        if self._idle_retries > self.config.max_idle_retries:
            job_id, reason = self._first_left()
            raise SimulationStalled(
                f"{self.scheduler.name}: {len(self.pending) + len(self.running)} jobs make no "
                f"progress and nothing else will happen (job {job_id}: {reason})"
            )

    # -- state changes (the only place job progress and rates change) -------------------------

    def _settle(self, run: JobRun, t: float) -> None:
        """Bring progress and attained service up to ``t`` (`JobRun.attained_gpu_s_at` and
        `JobRun.work_done` inlined, the same operations: this runs at every change)."""
        alloc = run.allocation
        since = run.progress_time_s
        if alloc.workers:
            held = alloc.num_workers * run.spec.worker_demand.gpu
            run.attained_gpu_s += held * (t - since if t > since else 0.0)
            run.held_s += t - since if t > since else 0.0
        ran_from = since if since >= run.paused_until_s else run.paused_until_s
        rate = run.rate
        if rate > 0.0 and t > ran_from:
            run.observed.append((alloc.num_ps, alloc.num_workers, rate))
            run.progress_s = min(run.spec.total_work, run.progress_s + rate * (t - ran_from))
        run.progress_time_s = t

    def _set_allocation(self, run: JobRun, new: Allocation, t: float, moved: bool = False) -> None:
        """Give ``run`` ``new`` at ``t`` (s); ``moved``: re-packed (`SimConfig.repack`)."""
        spec = run.spec
        old = run.allocation
        self._settle(run, t)
        run.allocation = new
        run.version += 1
        if new.is_empty:
            run.rate = 0.0
            self._stop_running(run)
            self.pending.add(run)
        else:
            if old.is_empty:
                self.pending.remove(run)
                self._start_running(run)
                if run.first_start_s is None:
                    run.first_start_s = t
                else:
                    run.paused_until_s = t + self.config.rescale.resume_s(spec.model)
            else:  # a resize, or a move (a checkpoint-restart) that is not one
                run.rescales += 0 if moved else 1
                cost = self.config.rescale.resume_s if moved else self.config.rescale.rescale_s
                run.paused_until_s = t + cost(spec.model)
            if self.config.noise > 0:  # else every factor is 1.0, `_noise.get`'s default
                self._noise[spec.job_id] = self._draw_noise()
            self._update_rate(run, t)
        self._gpu_used, self._cpu_used = self.cluster.used_gpu_cpu()  # `_refresh_usage`

    def _update_rate(self, run: JobRun, t: float) -> None:
        """Set the job's rate from the model and its noise, and schedule its completion."""
        rate = run.rate = self.model.speed(run.spec, run.allocation) * self._noise.get(
            run.job_id, 1.0
        )
        if rate > 0:
            paused = run.paused_until_s
            start = paused if paused > t else t  # max(t, paused): the same value
            done = start + (run.spec.total_work - run.progress_s) / rate
            self.queue.push(done, EventKind.COMPLETION, (run.job_id, run.version))

    def _draw_noise(self) -> float:
        level = self.config.noise
        if level <= 0:
            return 1.0
        return float(max(0.1, 1.0 + level * self.rng.standard_normal()))

    def _redraw_noise(self, t: float) -> None:
        if self.config.noise <= 0:
            return
        for run in self.running.values():
            self._settle(run, t)
            run.version += 1
            self._noise[run.job_id] = self._draw_noise()
            self._update_rate(run, t)

    def _finish(self, run: JobRun, t: float) -> None:
        self._settle(run, t)
        run.progress_s = run.spec.total_work
        run.finish_s = t
        run.rate = 0.0
        self.cluster.release(run.spec)
        run.allocation = Allocation.EMPTY
        self._stop_running(run)
        self.finished.append(run)
        self._refresh_usage()
        if self.event_log is not None:
            self.event_log.finish(run.job_id)
        if self.on_job_finished is not None:
            self.on_job_finished(len(self.finished), len(self.specs))

    def _start_running(self, run: JobRun) -> None:
        self.running[run.job_id] = run
        self._running_list = None
        run.count_slots(self._slot_clock)

    def _stop_running(self, run: JobRun) -> None:
        del self.running[run.job_id]
        self._running_list = None
        run.count_slots(None)
        self._noise.pop(run.job_id, None)

    # -- accounting ------------------------------------------------------------------------

    def _refresh_usage(self) -> None:
        self._gpu_used, self._cpu_used = self.cluster.used_gpu_cpu()

    def _advance(self, t: float) -> None:
        dt = t - self.now_s
        if dt > 0:
            self._busy_gpu_s += self._gpu_used * dt
            self._busy_cpu_s += self._cpu_used * dt
            self.now_s = t

    def _record_timeline(self, t: float) -> None:
        if self.timeline.times and t - self.timeline.times[-1] < self._timeline_step_s:
            return
        self.timeline.sample(
            t,
            self.cluster,
            self._running_view(),
            len(self.pending),
            (self._gpu_used, self._cpu_used),
        )
