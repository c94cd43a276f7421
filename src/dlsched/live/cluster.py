"""`LiveCluster`: the executor that lets any dlsched scheduler drive real elastic jobs.

The live twin of `dlsched.sim.simulator.Simulator`: jobs arrive on the wall clock, every slot the
scheduler gets a `ClusterView` built from what is *measured* (each job's steps done and steps/s as
its coordinator reports them, converted to epochs as `JobSpec.total_work`), and its `Decision` is
applied to real processes: a pending job is started (`LiveJob.start`), a running job is resized
with DL2's hot scaling (`LiveJob.scale_to`), a job left out by a preemptive scheduler is
checkpointed and stopped (`LiveJob.suspend`) and later relaunched from its checkpoint
(`LiveJob.resume`). Decisions go through the simulator's own `Executor` (validation, the
both-kinds rule of PS jobs, shrinks before growth, placement, the `Cluster` bookkeeping that
refuses over-allocation); this module is its `Actuator` and the measurement loop. The run ends
with a `Result` built by `Result.from_runs`, as a simulation's is.

No action blocks the loop: each runs in a thread of its own (`cluster_ops.JobOp`), the books
charge the job what it was given, and an action that fails gives the books back. (So a shrink
frees its cores in the books at once, while its processes stop a round later: for that while,
another job's new processes may share those cores; the books never over-commit.) Faults are
repaired as they are seen: a dead coordinator is restarted from its state file; dead workers or
PS are replaced by hot scaling; a job with no PS or no worker left is relaunched from its last
snapshot (every job snapshots every ``snapshot_every`` steps). A job that keeps failing is
given up, with its error, after `MAX_REPAIRS` repairs or `MAX_START_FAILURES` failed starts.

Every process is stopped by `close` (also at the end of `run`, on an exception and on Ctrl-C).
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from dlsched.core import Allocation, Cluster, ClusterView, Decision, JobRun, Status
from dlsched.live import launcher
from dlsched.live.cluster_ops import LiveEntry, resume_job, size, start_job, suspend_job
from dlsched.live.cluster_repair import FaultRepair
from dlsched.live.coord_store import write_atomic
from dlsched.live.job import LiveJob
from dlsched.live.run_log import PROGRESS_FILE, RunLog, read_progress
from dlsched.live.snapshot import LiveSnapshot, ScalingEvent
from dlsched.live.stream import LiveJobRequest, epochs_per_step, live_server
from dlsched.live.workdirs import make_run_dir
from dlsched.placement import make_placement
from dlsched.schedulers.base import Scheduler, check_scheduler
from dlsched.sim.event_log import EventLog
from dlsched.sim.executor import Executor
from dlsched.sim.metrics import Timeline
from dlsched.sim.result import Result

log = logging.getLogger(__name__)


class LiveCluster(FaultRepair):
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
        workdir: where job state and snapshots go (None: a temporary folder, removed at the end
            and, should this process be killed, by the next run).
        on_slot: called with a `LiveSnapshot` after every decision and at the end.
        on_decision: called with ``(view, decision)`` after every decision (e.g. online learning).
        job_timeout_s: limit for starting a job and for each control request, seconds.
        run_log: files to write as things happen (``live run --out``), or None.
        params_dir: where each finished job's parameters go (``job<id>.pt``), or None.
        time_offset_s: seconds the run had already lasted (``live run --resume``).

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
        run_log: RunLog | None = None,
        params_dir: Path | None = None,
        time_offset_s: float = 0.0,
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
        self.event_log = EventLog.attach(self.executor, lambda: self._now)
        self.seed = seed
        self.poll_s = poll_s
        self.horizon_s = horizon_s
        self.on_slot = on_slot
        self.on_decision = on_decision
        self.job_timeout_s = job_timeout_s
        self.run_log = run_log
        self.params_dir = params_dir
        self._own_workdir = workdir is None
        self.workdir = Path(workdir).resolve() if workdir is not None else make_run_dir()
        self.workdir.mkdir(parents=True, exist_ok=True)
        ordered = sorted(requests, key=lambda r: (r.spec.submit_time_s, r.spec.job_id))
        self.jobs: dict[int, LiveEntry] = {
            r.spec.job_id: LiveEntry(r, JobRun(r.spec)) for r in ordered
        }
        self.events: list[ScalingEvent] = []
        self.timeline = Timeline()
        self.pids_seen: set[int] = set()
        self.last_status: dict[int, Status] = {}
        self.decisions = 0
        self._t0 = 0.0
        self._offset = time_offset_s
        self._now = time_offset_s
        self._busy_gpu_s = 0.0
        self._busy_cpu_s = 0.0
        self._closed = False
        self._saved_steps: dict[str, int] = {}

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
        """Stop every process of every job (idempotent) and remove a temporary workdir;
        actions still running are cancelled first (their processes killed)."""
        if self._closed:
            return
        self._closed = True
        self.pids_seen.update(self.alive_pids())
        busy = [lv for lv in self.jobs.values() if lv.busy and lv.job is not None]
        for live in busy:
            assert live.job is not None
            live.job.cancel()
        for live in busy:
            assert live.op is not None
            if not live.op.join(10.0):
                log.warning("job %d: its %s did not end", live.run.job_id, live.op.action)
        for live in self.jobs.values():
            if live.job is not None:
                try:
                    live.job.stop(timeout_s=5.0)
                except Exception:  # best effort: keep stopping the others
                    log.exception("failed to stop live job %d", live.run.job_id)
        if self.run_log is not None:
            self.run_log.close()
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
        next_decision = self._offset
        while True:
            now = self._clock()
            self._advance(now)
            self._arrivals(now)
            self._reap(now)
            self._poll(now)
            self._save_progress(now)
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

    def _advance(self, now: float) -> None:
        dt = now - self._now
        if dt > 0:
            used = self.cluster.used_total()
            self._busy_gpu_s += used.gpu * dt
            self._busy_cpu_s += used.cpu * dt
            for live in self._running():
                run = live.run
                run.attained_gpu_s += run.allocation.num_workers * run.spec.worker_demand.gpu * dt
                run.held_s += dt
            self._now = now

    def _arrivals(self, now: float) -> None:
        for live in self.jobs.values():
            if not live.arrived and live.run.spec.submit_time_s <= now:
                live.arrived = True
                self.event_log.submit(live.run.job_id)

    def _all_done(self) -> bool:
        return all((lv.run.finished or lv.failed) and not lv.busy for lv in self.jobs.values())

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
        self.last_status = self.executor.apply(
            decision,
            active=self._active,
            running=[lv.run for lv in self._running()],
            preemptive=self.scheduler.preemptive,
            actuator=self,
            source=self.scheduler.name,
        )
        for live in self._running():
            live.run.slots_run += 1
        self._record_timeline(self._clock())

    # ------------------------------------------------------------------ resume

    def _save_progress(self, now: float) -> None:
        """With ``--out``: how far each job got, whenever that changed (what a resume of a
        killed run redoes is counted from it)."""
        steps = {str(i): lv.steps for i, lv in self.jobs.items() if lv.steps}
        if self.run_log is None or steps == self._saved_steps:
            return
        self._saved_steps = steps
        write_atomic(self.workdir / PROGRESS_FILE, json.dumps({"t_s": now, "steps": steps}))

    def adopt(
        self, ended: dict[int, dict[str, str]], started: dict[int, float] | None = None
    ) -> None:
        """Carry on from a killed run (``live run --resume``): jobs with a row in its
        ``jobs.csv`` (``ended``, `dlsched.live.run_log.ended_jobs`) keep their outcome; every
        other job that had started (at ``started``, `run_log.first_starts`) resumes from its
        last snapshot in `workdir`."""
        progress = read_progress(self.workdir)
        for job_id, live in self.jobs.items():
            run = live.run
            row = ended.get(job_id)
            if row is not None:
                live.arrived = True
                if row.get("status") == "failed":
                    live.failed = row.get("error") or "failed"
                    continue
                run.first_start_s = float(row["start_s"])
                run.finish_s = float(row["finish_s"])
                run.progress_s = run.spec.total_work
                run.rescales = int(row.get("rescales") or 0)
                run.held_s = run.finish_s - run.first_start_s  # not logged: as if never preempted
                run.ideal_duration_s = float(row.get("ideal_s") or "nan")
                live.steps = live.request.config.total_steps
                live.steps_redone = int(row.get("steps_redone") or 0)
                continue
            workdir = self.workdir / f"job{job_id}"
            if not workdir.is_dir():
                continue
            job = LiveJob(
                live.request.config,
                job_id=f"j{job_id}",
                workdir=workdir,
                timeout_s=self.job_timeout_s,
            )
            version = job.reset_to_snapshot()
            live.job = job
            live.steps = version
            run.progress_s = min(run.spec.total_work, version * epochs_per_step(job.config))
            live.steps_redone = max(0, progress.get(job_id, version) - version)
            run.first_start_s = (started or {}).get(job_id)

    def _active(self, job_id: int) -> JobRun | None:
        live = self.jobs.get(job_id)
        if live is None or live.run.finished or live.failed or not live.arrived:
            return None
        return live.run

    def change(self, run: JobRun, old: Allocation, new: Allocation) -> Status:
        """The executor's `Actuator`: start making the real job hold ``new`` (the books already
        do); refused (the executor gives the job ``old`` back) while another action on it runs.
        """
        live = self.jobs[run.job_id]
        if live.op is not None:  # running, or ended and not yet collected
            return Status.unschedulable(f"job {run.job_id}: busy with {live.op.action}")
        action, fn = self._action(live, old, new)
        self._start_op(live, action, size(new), fn)
        assert live.op is not None
        live.op.before, live.op.restore = size(old), old
        run.allocation = new
        if new.is_empty:
            run.rate = 0.0
            live.speed = 0.0
        return Status.success()

    def _action(
        self, live: LiveEntry, old: Allocation, new: Allocation
    ) -> tuple[str, Callable[[], float]]:
        """What makes the real job match ``new``: its name and the function doing it."""
        run = live.run
        after = size(new)
        if old.is_empty and live.job is None:
            job = LiveJob(
                live.request.config,
                *after,
                job_id=f"j{run.job_id}",
                workdir=self.workdir / f"job{run.job_id}",
                timeout_s=self.job_timeout_s,
            )
            live.job = job
            if run.first_start_s is None:
                run.first_start_s = self._clock()
            return "start", lambda: start_job(job)
        running = live.job
        assert running is not None
        if run.first_start_s is None:  # a job a killed run had started (--resume)
            run.first_start_s = self._clock()
        if old.is_empty:
            return "resume", lambda: resume_job(running, after)
        if new.is_empty:
            return "suspend", lambda: suspend_job(running)
        run.rescales += 1
        return "hot", lambda: running.scale_to(*after).worker_update_s
