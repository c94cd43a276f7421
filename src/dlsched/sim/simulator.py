"""The trace-driven simulator: arrivals, scheduling points, exact progress, completions.

Progress between events is computed exactly from each job's rate; there is no per-second
stepping. The scheduler only reads a `ClusterView` and returns a `Decision`; this module is the
only one that changes cluster and job state.
"""

from __future__ import annotations

import bisect
import logging
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from dlsched.core import (
    Allocation,
    Arch,
    Cluster,
    ClusterView,
    Decision,
    JobRun,
    JobSpec,
    Resources,
    Status,
)
from dlsched.models.base import ThroughputModel
from dlsched.placement.base import Placement
from dlsched.schedulers.base import Scheduler
from dlsched.sim.config import SimConfig
from dlsched.sim.engine import EventKind, EventQueue
from dlsched.sim.metrics import Timeline, fragmentation
from dlsched.sim.result import Result

log = logging.getLogger(__name__)


def _arrival_key(run: JobRun) -> tuple[float, int]:
    """Order of the pending list: submission time, then job id."""
    return run.spec.submit_time_s, run.spec.job_id


class SimulationStalled(RuntimeError):
    """Jobs wait or hold resources without progress, and nothing will ever change that."""


class Simulator:
    """Runs one workload under one scheduler.

    Args:
        jobs: the jobs, any order (sorted by submission here).
        cluster: an empty cluster.
        model: true speed of each job (noise-free); schedulers never see it unless oracles.
        scheduler: the policy.
        placement: where tasks go when the decision does not say.
        config: timing, noise, rescale costs, horizon.
        workload_name: for the result.
        on_job_finished: called with (jobs finished so far, jobs in all) after each finish
            (progress display; it must not change the simulation).
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
    ) -> None:
        self.specs = sorted(jobs, key=lambda j: (j.submit_time_s, j.job_id))
        if len({j.job_id for j in self.specs}) != len(self.specs):
            raise ValueError("job ids must be unique")
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
        self.pending: list[JobRun] = []
        self.running: dict[int, JobRun] = {}
        self.finished: list[JobRun] = []
        self.last_status: dict[int, Status] = {}
        self.timeline = Timeline()
        span_s = self.specs[-1].submit_time_s - self.specs[0].submit_time_s if self.specs else 0.0
        self._timeline_step_s = (
            config.timeline_step_s or config.interval_s or max(600.0, span_s / 2000)
        )
        self._running_list: list[JobRun] | None = []  # running's values; None when stale
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
        self._check_fits()

    def _check_fits(self) -> None:
        limit = (self.cluster.capacity_array.sum(axis=0) + 1e-9).tolist()
        fit: set[tuple[Resources, Resources, int, int]] = set()  # smallest sizes known to fit
        for spec in self.specs:
            ps = min(spec.num_ps, 1) if spec.arch is Arch.PS else 0
            key = (spec.worker_demand, spec.ps_demand, spec.min_workers, ps)
            if key in fit:
                continue
            need = spec.demand(spec.min_workers, ps)
            if need.gpu <= limit[0] and need.cpu <= limit[1] and need.mem <= limit[2]:
                fit.add(key)
            else:
                raise ValueError(
                    f"job {spec.job_id} needs {need} at its smallest, more than the whole cluster"
                )

    # -- main loop ---------------------------------------------------------------------------

    def run(self) -> Result:
        """Simulate until every job finishes (or the horizon) and return the metrics."""
        wall0 = time.perf_counter()
        reset = getattr(self.scheduler, "reset", None)
        if callable(reset):
            reset()
        interval = self.config.interval_s
        if interval is not None and self.specs:
            self.queue.push(self._next_tick_after(self.specs[0].submit_time_s), EventKind.TICK)
        horizon = self.config.horizon_s if self.config.horizon_s is not None else math.inf
        while True:
            t = min(self.queue.peek_time(), self._next_arrival_time())
            if t == math.inf or t > horizon:
                if horizon < math.inf:
                    self._advance(horizon)
                break
            self._advance(t)
            point = self._handle_events_at(t)
            if point and (self.pending or self.running):
                self._schedule_point(t)
        self._advance(self.now_s)
        return Result.build(self, wall_s=time.perf_counter() - wall0)

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
            self._add_pending(run)
            changed = True
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

    def _schedule_point(self, t: float) -> None:
        if self.config.interval_s is not None:
            self._redraw_noise(t)
        view = ClusterView(
            now_s=t,
            cluster=self.cluster,
            pending=self.pending,
            running=self._running_view(),
            interval_s=self.config.interval_s,
            last_status=self.last_status,
            _oracle=self.model.speed if getattr(self.scheduler, "is_oracle", False) else None,
        )
        decision = self.scheduler.decide(view)
        self._decisions += 1
        self.last_status = self._apply(decision, t)
        self._slot_clock[0] += 1  # every running job's slots_run (see JobRun.count_slots)
        self._record_timeline(t)
        self._watch_for_stall(t)

    def _running_view(self) -> list[JobRun]:
        """The running jobs as a list, rebuilt only after one started or stopped.

        Schedulers get the same list object at consecutive points while nothing changed; they
        only read it.
        """
        running = self._running_list
        if running is None:
            running = self._running_list = list(self.running.values())
        return running

    def _watch_for_stall(self, t: float) -> None:
        if (
            self._next_arrival < len(self.specs)
            or not (self.pending or self.running)
            or any(run.rate > 0 for run in self.running.values())
        ):
            self._idle_retries = 0
            return
        if self.queue.peek_time() < math.inf:  # a tick is coming anyway
            self._idle_retries += 1
        else:
            self._idle_retries += 1
            self.queue.push(t + self.config.idle_retry_s, EventKind.RETRY)
        if self._idle_retries > self.config.max_idle_retries:
            first = self.pending[0] if self.pending else next(iter(self.running.values()))
            reason = self.last_status.get(first.job_id, Status.unschedulable("never chosen"))
            raise SimulationStalled(
                f"{self.scheduler.name}: {len(self.pending) + len(self.running)} jobs make no "
                f"progress and nothing else will happen (job {first.job_id}: {reason.reason})"
            )

    def _apply(self, decision: Decision, t: float) -> dict[int, Status]:
        """Turn a decision into allocations: shrinks first, then growth in decision order."""
        statuses: dict[int, Status] = {}
        preemptive = getattr(self.scheduler, "preemptive", False)
        targets = decision.targets
        if not targets and not (preemptive and self.running):
            return statuses  # nothing to start, resize or stop
        shrink: list[tuple[JobRun, int, int, Allocation | None]] = []
        grow: list[tuple[JobRun, int, int, Allocation | None]] = []
        if preemptive:
            for job_id, run in list(self.running.items()):
                if job_id not in targets:
                    shrink.append((run, 0, 0, None))
        for job_id, target in targets.items():
            maybe = self.runs.get(job_id)
            if maybe is None or maybe.finished:
                statuses[job_id] = Status.invalid(f"job {job_id} is not active")
                continue
            run = maybe
            status = self._validate(run, target.num_workers, target.num_ps, preemptive)
            if not status.ok:
                statuses[job_id] = status
                continue
            alloc = run.allocation
            if (
                target.placement is None
                and target.num_workers == alloc.num_workers
                and target.num_ps == alloc.num_ps
            ):
                continue
            item = (run, target.num_workers, target.num_ps, target.placement)
            if target.num_workers <= alloc.num_workers and target.num_ps <= alloc.num_ps:
                shrink.append(item)
            else:
                grow.append(item)
        for run, workers, ps, placement in shrink + grow:
            status = self._reallocate(run, workers, ps, placement, t)
            if not status.ok:
                statuses[run.job_id] = status
        return statuses

    def _validate(self, run: JobRun, workers: int, ps: int, preemptive: bool) -> Status:
        spec = run.spec
        if workers > spec.max_workers or (0 < workers < spec.min_workers):
            return Status.invalid(
                f"job {spec.job_id}: {workers} workers outside [{spec.min_workers}, "
                f"{spec.max_workers}]"
            )
        if ps > (spec.max_ps if spec.arch is Arch.PS else 0):
            return Status.invalid(f"job {spec.job_id}: {ps} PS above its cap")
        if (workers or ps) and (workers == 0 or (spec.arch is Arch.PS and ps == 0)):
            # a PS job needs both kinds of task to train; holding one kind only wastes it
            return Status.invalid(
                f"job {spec.job_id}: {workers} workers and {ps} PS cannot train; "
                "give it both or nothing"
            )
        if (
            not preemptive
            and run.running
            and (workers != run.allocation.num_workers or ps != run.allocation.num_ps)
        ):
            return Status.invalid(
                f"job {spec.job_id}: a non-preemptive scheduler cannot resize a running job"
            )
        return Status.success()

    def _reallocate(
        self, run: JobRun, workers: int, ps: int, placement: Allocation | None, t: float
    ) -> Status:
        spec = run.spec
        if workers == 0 and ps == 0:
            new: Allocation | Status = Allocation.EMPTY
        elif placement is not None:
            if placement.num_workers != workers or placement.num_ps != ps:
                return Status.invalid(f"job {spec.job_id}: placement counts differ from target")
            new = placement
        else:
            new = self.placement.place(self.cluster, spec, run.allocation, workers, ps)
        if isinstance(new, Status):
            return new
        status = self.cluster.allocate(spec, new)
        if status.ok:
            self._set_allocation(run, new, t)
        return status

    # -- state changes (the only place job progress and rates change) -------------------------

    def _settle(self, run: JobRun, t: float) -> None:
        """Bring progress and attained service up to ``t``."""
        run.attained_gpu_s = run.attained_gpu_s_at(t)
        ran_from = max(run.progress_time_s, run.paused_until_s)
        if run.rate > 0 and t > ran_from:
            alloc = run.allocation
            run.observed.append((alloc.num_ps, alloc.num_workers, run.rate))
        run.progress_s = run.work_done(t)
        run.progress_time_s = t

    def _set_allocation(self, run: JobRun, new: Allocation, t: float) -> None:
        spec = run.spec
        old = run.allocation
        self._settle(run, t)
        run.allocation = new
        run.version += 1
        if new.is_empty:
            run.rate = 0.0
            self._stop_running(run)
            self._add_pending(run)
        else:
            if old.is_empty:
                self._remove_pending(run)
                self._start_running(run)
                if run.first_start_s is None:
                    run.first_start_s = t
                else:
                    run.paused_until_s = t + self.config.rescale.resume_s(spec.model)
            else:
                run.rescales += 1
                run.paused_until_s = t + self.config.rescale.rescale_s(spec.model)
            self._noise[spec.job_id] = self._draw_noise()
            self._update_rate(run, t)
        self._refresh_usage()

    def _update_rate(self, run: JobRun, t: float) -> None:
        """Set the job's rate from the model and its noise, and schedule its completion."""
        run.rate = self.model.speed(run.spec, run.allocation) * self._noise.get(run.job_id, 1.0)
        if run.rate > 0:
            start = max(t, run.paused_until_s)
            done = start + (run.spec.total_work - run.progress_s) / run.rate
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

    def _add_pending(self, run: JobRun) -> None:
        pending = self.pending
        if not pending or _arrival_key(pending[-1]) < _arrival_key(run):
            pending.append(run)  # an arrival, the usual case
        else:
            pending.insert(bisect.bisect(pending, _arrival_key(run), key=_arrival_key), run)

    def _remove_pending(self, run: JobRun) -> None:
        pending = self.pending
        if pending[0] is run:
            del pending[0]  # the head, the usual case
        else:
            del pending[bisect.bisect_left(pending, _arrival_key(run), key=_arrival_key)]

    # -- accounting ------------------------------------------------------------------------

    def _refresh_usage(self) -> None:
        used = self.cluster.used_total()
        self._gpu_used, self._cpu_used = used.gpu, used.cpu

    def _advance(self, t: float) -> None:
        dt = t - self.now_s
        if dt > 0:
            self._busy_gpu_s += self._gpu_used * dt
            self._busy_cpu_s += self._cpu_used * dt
            self.now_s = t

    def _record_timeline(self, t: float) -> None:
        if self.timeline.times and t - self.timeline.times[-1] < self._timeline_step_s:
            return
        total = self.cluster.total
        self.timeline.add(
            t,
            gpu_util=self._gpu_used / total.gpu if total.gpu else 0.0,
            cpu_util=self._cpu_used / total.cpu if total.cpu else 0.0,
            fragmentation=fragmentation(self.cluster, self.running.values(), t),
            running=len(self.running),
            pending=len(self.pending),
        )
