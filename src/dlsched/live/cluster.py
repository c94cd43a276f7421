"""`LiveCluster`: the executor that lets any dlsched scheduler drive real elastic jobs.

The live twin of `dlsched.sim.simulator.Simulator`: jobs arrive on the wall clock, every slot the
scheduler gets a `ClusterView` built from what is *measured* (each job's steps done and steps/s as
its coordinator reports them, converted to epochs as `JobSpec.total_work`), and its `Decision` is
applied to real processes: a pending job is started (`LiveJob.start`), a running job is resized
with DL2's hot scaling (`LiveJob.scale_to`), a job left out by a preemptive scheduler is
checkpointed and stopped (`LiveJob.suspend`) and later relaunched from its checkpoint
(`LiveJob.resume`). Decisions go through the simulator's own `Executor` (validation, the
both-kinds rule of PS jobs, shrinks before growth, placement, the `Cluster` bookkeeping that
refuses over-allocation); this module is only its `Actuator` and the measurement loop. The run
ends with a `Result` built by `Result.from_runs`, as a simulation's is.

Every process is stopped by `close` (also at the end of `run`, on an exception and on Ctrl-C).
"""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from dlsched.core import Allocation, Cluster, ClusterView, Decision, JobRun, Status
from dlsched.live import launcher
from dlsched.live.job import LiveJob, LiveJobError
from dlsched.live.snapshot import JobRow, LiveSnapshot, ScalingEvent, job_state
from dlsched.live.stream import LiveJobRequest, epochs_per_step, live_server
from dlsched.placement import make_placement
from dlsched.schedulers.base import Scheduler, check_scheduler
from dlsched.sim.executor import Executor
from dlsched.sim.metrics import Timeline
from dlsched.sim.result import Result, RunTotals

log = logging.getLogger(__name__)

MAX_START_FAILURES = 3
"""A job that fails to start (or resume) this many times is given up as failed."""


@dataclass(slots=True)
class _Live:
    """Executor-side state of one job (the `JobRun` is what schedulers see)."""

    request: LiveJobRequest
    run: JobRun
    job: LiveJob | None = None
    arrived: bool = False
    failed: str = ""
    start_failures: int = 0
    steps: int = 0
    speed: float = 0.0
    best_speed: dict[tuple[int, int], float] = field(default_factory=dict)


class LiveCluster:
    """Runs a stream of real jobs on this machine under one scheduler.

    Args:
        requests: the jobs (`dlsched.live.stream.make_stream`).
        scheduler: any registered scheduler except oracles (a live cluster has no hidden truth).
        slot_s: seconds between scheduling decisions.
        cores: cores offered as GPUs (`dlsched.live.stream.live_server`).
        placement: placement policy name (one machine: it only keeps the bookkeeping).
        seed: recorded in the result.
        poll_s: seconds between polls of the jobs' progress (finish times are this precise).
        horizon_s: stop after this many seconds even if jobs are left (None: run to the end).
        workdir: where job state and checkpoints go (a temporary directory if None).
        on_slot: called with a `LiveSnapshot` after every decision and at the end.
        on_decision: called with ``(view, decision)`` after every decision (e.g. online learning).
        job_timeout_s: limit for starting a job and for each control request, seconds.

    Raises:
        ValueError: for an oracle scheduler, a non-positive slot or an empty stream.
    """

    def __init__(
        self,
        requests: Sequence[LiveJobRequest],
        scheduler: Scheduler,
        *,
        slot_s: float = 5.0,
        cores: int = 2,
        placement: str = "load_balance",
        seed: int = 0,
        poll_s: float = 0.1,
        horizon_s: float | None = None,
        workdir: str | Path | None = None,
        on_slot: Callable[[LiveSnapshot], None] | None = None,
        on_decision: Callable[[ClusterView, Decision], None] | None = None,
        job_timeout_s: float = 60.0,
    ) -> None:
        check_scheduler(scheduler)
        if scheduler.is_oracle:
            raise ValueError(
                f"scheduler {scheduler.name!r} is an oracle; a live cluster has no true speeds"
            )
        if not slot_s > 0:
            raise ValueError(f"--slot must be > 0 seconds, got {slot_s}")
        if not requests:
            raise ValueError("the live stream has no jobs")
        if len({r.spec.job_id for r in requests}) != len(requests):
            raise ValueError("job ids must be unique")
        self.scheduler = scheduler
        self.slot_s = slot_s
        self.cluster = Cluster([live_server(cores)])
        self.placement = make_placement(placement)
        self.executor = Executor(self.cluster, self.placement)
        self.seed = seed
        self.poll_s = poll_s
        self.horizon_s = horizon_s
        self.on_slot = on_slot
        self.on_decision = on_decision
        self.job_timeout_s = job_timeout_s
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="dlsched-live-run-"))
        ordered = sorted(requests, key=lambda r: (r.spec.submit_time_s, r.spec.job_id))
        self.jobs: dict[int, _Live] = {r.spec.job_id: _Live(r, JobRun(r.spec)) for r in ordered}
        self.events: list[ScalingEvent] = []
        self.timeline = Timeline()
        self.pids_seen: set[int] = set()
        self.last_status: dict[int, Status] = {}
        self.decisions = 0
        self._t0 = 0.0
        self._now = 0.0
        self._busy_gpu_s = 0.0
        self._busy_cpu_s = 0.0
        self._closed = False

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> LiveCluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop every process of every job (idempotent) and remove a temporary workdir."""
        if self._closed:
            return
        self._closed = True
        for live in self.jobs.values():
            if live.job is not None:
                try:
                    live.job.stop(timeout_s=5.0)
                except Exception:  # best effort: keep stopping the others
                    log.exception("failed to stop live job %d", live.run.job_id)
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def alive_pids(self) -> list[int]:
        """Processes of this run's jobs still running (empty after `close`)."""
        pids: list[int] = []
        for live in self.jobs.values():
            if live.job is not None:
                pids.extend(live.job.pids())
        return pids

    # ------------------------------------------------------------------ main loop

    def run(self) -> Result:
        """Run every job to the end (or the horizon), then stop everything; the metrics."""
        try:
            return self._run()
        finally:
            self.close()

    def _run(self) -> Result:
        self.scheduler.reset()
        launcher.warm_up()
        self._t0 = time.monotonic()
        wall0 = time.perf_counter()
        next_decision = 0.0
        while True:
            now = self._clock()
            self._advance(now)
            self._arrivals(now)
            self._poll(now)
            if self._all_done():
                break
            if self.horizon_s is not None and now >= self.horizon_s:
                log.warning("live run stopped at the horizon, %.1f s", self.horizon_s)
                break
            if now >= next_decision:
                if self._pending() or self._running():
                    self._decide(self._clock())
                    self._emit()
                next_decision = self.slot_s * (math.floor(self._clock() / self.slot_s) + 1)
            upcoming = [next_decision, now + self.poll_s]
            upcoming += [lv.run.spec.submit_time_s for lv in self.jobs.values() if not lv.arrived]
            time.sleep(max(0.0, min(upcoming) - self._clock()))
        self._advance(self._clock())
        self._emit()
        return self._result(time.perf_counter() - wall0)

    def _clock(self) -> float:
        return time.monotonic() - self._t0

    def _advance(self, now: float) -> None:
        dt = now - self._now
        if dt > 0:
            used = self.cluster.used_total()
            self._busy_gpu_s += used.gpu * dt
            self._busy_cpu_s += used.cpu * dt
            for live in self._running():
                run = live.run
                run.attained_gpu_s += run.allocation.num_workers * run.spec.worker_demand.gpu * dt
            self._now = now

    def _arrivals(self, now: float) -> None:
        for live in self.jobs.values():
            if not live.arrived and live.run.spec.submit_time_s <= now:
                live.arrived = True

    def _pending(self) -> list[_Live]:
        return [
            lv
            for lv in self.jobs.values()
            if lv.arrived and not lv.run.running and not lv.run.finished and not lv.failed
        ]

    def _running(self) -> list[_Live]:
        return [lv for lv in self.jobs.values() if lv.run.running]

    def _all_done(self) -> bool:
        return all(lv.run.finished or lv.failed for lv in self.jobs.values())

    # ------------------------------------------------------------------ measurement

    def _poll(self, now: float) -> None:
        """Read each running job's progress and speed; finish jobs that are done."""
        for live in self._running():
            job = live.job
            assert job is not None
            try:
                st = job.status(timeout_s=self.job_timeout_s)
            except LiveJobError as exc:
                self._fail(live, f"no status: {exc}", now)
                continue
            if st["failed"]:
                self._fail(live, str(st["failed"]), now)
                continue
            self._measure(live, int(st["progress"]), float(st["speed"]), now)
            if st["finished"]:
                self._finish(live, now)

    def _measure(self, live: _Live, steps: int, speed: float, now: float) -> None:
        run = live.run
        eps = epochs_per_step(live.request.config)
        live.steps = min(steps, live.request.config.total_steps)
        live.speed = speed
        run.progress_s = min(run.spec.total_work, live.steps * eps)
        run.progress_time_s = now
        if speed > 0:
            run.rate = speed * eps
            config = (run.allocation.num_ps, run.allocation.num_workers)
            live.best_speed[config] = max(live.best_speed.get(config, 0.0), speed)

    def _finish(self, live: _Live, now: float) -> None:
        run = live.run
        run.finish_s = now
        run.progress_s = run.spec.total_work
        run.rate = 0.0
        live.steps = live.request.config.total_steps
        self.cluster.release(run.spec)
        run.allocation = Allocation.EMPTY
        if live.job is not None:
            live.job.stop(timeout_s=5.0)
        log.info("job %d finished at %.2f s", run.job_id, now)

    def _fail(self, live: _Live, reason: str, now: float) -> None:
        log.error("job %d failed: %s", live.run.job_id, reason)
        live.failed = reason
        self.cluster.release(live.run.spec)
        live.run.allocation = Allocation.EMPTY
        live.run.rate = 0.0
        if live.job is not None:
            live.job.stop(timeout_s=5.0)
        self.events.append(ScalingEvent(now, live.run.job_id, "failed", (0, 0), (0, 0), 0.0))

    # ------------------------------------------------------------------ scheduling

    def _view(self, now: float) -> ClusterView:
        for live in self._running():
            run = live.run
            if live.speed > 0:
                alloc = run.allocation
                run.observed.append((alloc.num_ps, alloc.num_workers, run.rate))
        return ClusterView(
            now_s=now,
            cluster=self.cluster,
            pending=[lv.run for lv in self._pending()],
            running=[lv.run for lv in self._running()],
            interval_s=self.slot_s,
            last_status=dict(self.last_status),
        )

    def _decide(self, now: float) -> None:
        view = self._view(now)
        decision = self.scheduler.decide(view)
        self.decisions += 1
        if self.on_decision is not None:
            self.on_decision(view, decision)
        self.last_status = self._apply(decision)
        for live in self._running():
            live.run.slots_run += 1
        self._record_timeline(self._clock())

    def _apply(self, decision: Decision) -> dict[int, Status]:
        """Apply ``decision`` through the shared executor; failed targets' statuses."""
        return self.executor.apply(
            decision,
            active=self._active,
            running=[lv.run for lv in self._running()],
            preemptive=self.scheduler.preemptive,
            actuator=self,
            source=self.scheduler.name,
        )

    def _active(self, job_id: int) -> JobRun | None:
        live = self.jobs.get(job_id)
        if live is None or live.run.finished or live.failed or not live.arrived:
            return None
        return live.run

    def change(self, run: JobRun, old: Allocation, new: Allocation) -> Status:
        """The executor's `Actuator`: make the real job hold ``new`` (the cluster already does).

        A failed action is recorded and refused (the executor gives the job ``old`` back); a job
        that fails to start `MAX_START_FAILURES` times is given up.
        """
        live = self.jobs[run.job_id]
        spec = run.spec
        try:
            self._actuate(live, old, new)
        except (LiveJobError, ValueError) as exc:
            before = (old.num_ps, old.num_workers)
            self.events.append(
                ScalingEvent(
                    self._clock(), spec.job_id, "failed", before, before, 0.0, error=str(exc)
                )
            )
            log.warning("job %d: could not apply %s: %s", spec.job_id, new, exc)
            if old.is_empty:
                live.start_failures += 1
                if live.start_failures >= MAX_START_FAILURES:
                    self._fail(
                        live, f"did not start {MAX_START_FAILURES} times: {exc}", self._clock()
                    )
            return Status.unschedulable(f"job {spec.job_id}: {exc}")
        run.allocation = new
        if new.is_empty:
            run.rate = 0.0
            live.speed = 0.0
        self.pids_seen.update(self.alive_pids())
        return Status.success()

    def _actuate(self, live: _Live, old: Allocation, new: Allocation) -> None:
        """Make the real job match ``new`` (processes started, resized, or stopped)."""
        run = live.run
        before, after = (old.num_ps, old.num_workers), (new.num_ps, new.num_workers)
        t = self._clock()
        t0 = time.perf_counter()
        if old.is_empty and live.job is None:
            job = LiveJob(
                live.request.config,
                *after,
                job_id=f"j{run.job_id}",
                workdir=self.workdir / f"job{run.job_id}",
                timeout_s=self.job_timeout_s,
            )
            try:
                job.start()
            except BaseException:
                job.stop(timeout_s=5.0)
                raise
            live.job = job
            run.first_start_s = t
            action, suspension = "start", 0.0
        elif old.is_empty:
            assert live.job is not None
            live.job.resume(*after)
            action, suspension = "resume", 0.0
        elif new.is_empty:
            assert live.job is not None
            version = live.job.suspend()
            live.steps = min(version, live.request.config.total_steps)
            action, suspension = "suspend", 0.0
        else:
            assert live.job is not None
            report = live.job.scale_to(*after)
            run.rescales += 1
            action, suspension = "hot", report.worker_update_s
        self.events.append(
            ScalingEvent(t, run.job_id, action, before, after, time.perf_counter() - t0, suspension)
        )

    # ------------------------------------------------------------------ output

    def _record_timeline(self, t: float) -> None:
        used = self.cluster.used_total()
        running = [lv.run for lv in self._running()]
        self.timeline.sample(t, self.cluster, running, len(self._pending()), (used.gpu, used.cpu))

    def snapshot(self) -> LiveSnapshot:
        """The state the live view shows."""
        rows = []
        for live in self.jobs.values():
            run = live.run
            state = job_state(
                failed=bool(live.failed),
                finished=run.finished,
                running=run.running,
                suspended=live.job is not None and live.job.suspended,
                arrived=live.arrived,
            )
            rows.append(
                JobRow(
                    run.job_id,
                    run.spec.model,
                    state,
                    run.allocation.num_ps,
                    run.allocation.num_workers,
                    live.steps,
                    live.request.config.total_steps,
                    live.speed if run.running else 0.0,
                    run.rescales,
                )
            )
        return LiveSnapshot(
            self._clock(),
            self.decisions,
            rows,
            self.cluster.used_total().as_tuple(),
            self.cluster.total.as_tuple(),
            len(self.alive_pids()),
        )

    def _emit(self) -> None:
        if self.on_slot is not None:
            self.on_slot(self.snapshot())

    def _ideal_s(self, live: _Live) -> float:
        """Duration at the requested size: from the best speed measured at that size, else
        from the best speed measured at any size scaled linearly to the requested workers (an
        optimistic estimate: a live cluster has no true speed). NaN if never measured."""
        spec = live.run.spec
        speed = live.best_speed.get((spec.num_ps, spec.num_workers), 0.0)
        if speed <= 0:
            speed = max(
                (v * spec.num_workers / w for (_, w), v in live.best_speed.items() if w > 0),
                default=0.0,
            )
        steps = live.request.config.total_steps
        return steps / speed if speed > 0 else float("nan")

    def _result(self, wall_s: float) -> Result:
        finished = [lv.run for lv in self.jobs.values() if lv.run.finished]
        for live in self.jobs.values():
            if live.run.finished:
                live.run.ideal_duration_s = self._ideal_s(live)
        span = max(self._now, 1e-9)
        total = self.cluster.total
        totals = RunTotals(
            workload="live",
            scheduler=self.scheduler.name,
            seed=self.seed,
            num_jobs=len(self.jobs),
            events=len(self.events),
            decisions=self.decisions,
            wall_s=wall_s,
            end_s=self._now,
            gpu_util=self._busy_gpu_s / (total.gpu * span) if total.gpu else 0.0,
            cpu_util=self._busy_cpu_s / (total.cpu * span) if total.cpu else 0.0,
        )
        return Result.from_runs(finished, totals, self.timeline, self.params())

    def params(self) -> dict[str, Any]:
        """The run's settings, for the result."""
        server = self.cluster.total
        return {
            "slot_s": self.slot_s,
            "cores": server.gpu,
            "placement": self.placement.name,
            "poll_s": self.poll_s,
            "horizon_s": self.horizon_s,
        }
