"""How the live loop acts on jobs and repairs faults (the base of
`dlsched.live.cluster.LiveCluster`).

Actions run as `dlsched.live.cluster_ops.JobOp` threads; `_reap` collects them. Faults seen in a
job's status (`cluster_ops.repair_needed`) or in its coordinator's process are repaired by a
new action: ``restart_coordinator`` (from its state file), ``replace`` (dead members killed for
good and replaced by hot scaling) or ``relaunch`` (every process restarted from the last
snapshot). An action that fails gives the books back (a failed resize) or relaunches the job
(a failed repair, whose outcome is unknown); a job past `MAX_REPAIRS` repairs or
`MAX_START_FAILURES` failed starts in a row is given up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlsched.core import Allocation
from dlsched.live.cluster_ops import (
    JobOp,
    LiveEntry,
    finish_job,
    new_rollbacks,
    repair_needed,
    reset_job,
    restart_coordinator,
    size,
    stop_job,
)
from dlsched.live.cluster_report import ClusterReport
from dlsched.live.job import LiveJob
from dlsched.live.snapshot import ScalingEvent

log = logging.getLogger(__name__)

MAX_START_FAILURES = 3
"""A job that fails to start (or resume) this many times in a row is given up as failed."""
MAX_REPAIRS = 8
"""A job that needed this many repairs after faults and fails again is given up."""
STATUS_TIMEOUT_S = 5.0
"""A coordinator that leaves a status request unanswered this long, seconds, twice in a row,
is restarted from its state file."""


class FaultRepair(ClusterReport):
    """Actions on jobs and the repair of faults (see the module docstring)."""

    job_timeout_s: float
    params_dir: Path | None
    pids_seen: set[int]

    # ------------------------------------------------------------------ actions

    def _start_op(
        self,
        live: LiveEntry,
        action: str,
        after: tuple[int, int],
        fn: Callable[[], float],
        note: str = "",
        steps_redone: int = 0,
        start: bool = True,
    ) -> None:
        before = size(live.run.allocation)
        live.op = JobOp(action, before, after, self._clock(), fn, note, steps_redone, start)
        live.status_req = None  # the action's thread owns the control channel now

    def _reap(self, now: float) -> None:
        """Collect the actions that ended: record them, give the books back where one failed."""
        for live in self.jobs.values():
            op = live.op
            if op is None or not op.done:
                continue
            live.op = None
            if op.error is None:
                if op.action in ("finish", "stop"):
                    continue
                self._record(
                    ScalingEvent(
                        op.t_s,
                        live.run.job_id,
                        op.action,
                        op.before,
                        op.after,
                        op.seconds,
                        op.suspension_s,
                        op.note,
                        op.steps_redone,
                    )
                )
                if op.action in ("start", "resume", "relaunch"):
                    live.start_failures = 0
                if live.job is not None:
                    self.pids_seen.update(live.job.pids())
                continue
            self._op_failed(live, op, now)

    def _op_failed(self, live: LiveEntry, op: JobOp, now: float) -> None:
        run = live.run
        error = f"{op.action}: {op.error}"
        log.warning("job %d: %s failed: %s", run.job_id, op.action, op.error)
        self._record(
            ScalingEvent(op.t_s, run.job_id, "failed", op.before, op.before, op.seconds, 0.0, error)
        )
        if op.action == "finish" or run.finished or live.failed:
            return
        if op.action in ("start", "resume", "relaunch"):
            live.start_failures += 1
            self._release(live)
            if op.action == "start":
                live.job = None
            if live.start_failures >= MAX_START_FAILURES:
                self._fail(live, f"did not start {MAX_START_FAILURES} times: {op.error}", now)
        elif op.action == "hot" and op.restore is not None:
            # the coordinator aborted the round: the members keep the old roster (a repair
            # follows at the next poll if they do not)
            if self.cluster.allocate(run.spec, op.restore).ok:
                run.allocation = op.restore
            else:
                self._relaunch(live, error)
        elif op.action == "suspend":  # books already given back: keep the last snapshot
            job = live.job
            assert job is not None
            self._start_op(live, "reset", (0, 0), lambda: reset_job(job), error)
        else:  # replace, restart_coordinator, reset: the job's state is unknown, start afresh
            self._relaunch(live, error)

    def _count_repair(self, live: LiveEntry, why: str) -> bool:
        """Count one more repair of the job; False (and the job given up) past `MAX_REPAIRS`."""
        live.repairs += 1
        if live.repairs <= MAX_REPAIRS:
            return True
        self._fail(live, f"gave up after {MAX_REPAIRS} repairs; last fault: {why}", self._clock())
        return False

    def _relaunch(self, live: LiveEntry, why: str) -> None:
        """Kill every process of the job and start it again, at the size it holds, from its
        last snapshot (a job that cannot go on, or whose state is unknown)."""
        job = live.job
        run = live.run
        if job is None or run.allocation.is_empty:
            self._release(live)
            return
        if not self._count_repair(live, why):
            return
        before = live.steps
        after = size(run.allocation)
        holder: list[JobOp] = []

        def relaunch() -> float:
            version = job.reset_to_snapshot()
            holder[0].steps_redone = max(0, before - version)
            job.resume(*after)
            return 0.0

        self._start_op(live, "relaunch", after, relaunch, why, start=False)
        assert live.op is not None
        holder.append(live.op)
        live.op.start()

    def _repair(self, live: LiveEntry, kind: str, why: str) -> None:
        """Start the repair ``kind`` (`cluster_ops.repair_needed`, or ``restart_coordinator``)
        of a running job."""
        job = live.job
        assert job is not None
        if kind == "relaunch":
            self._relaunch(live, why)
            return
        if not self._count_repair(live, why):
            return
        after = size(live.run.allocation)
        if kind == "restart_coordinator":
            self._start_op(live, kind, after, lambda: restart_coordinator(job), why)
            return

        def replace() -> float:
            job.prune_dead(job.status(timeout_s=self.job_timeout_s)["members"])
            return job.scale_to(*after).worker_update_s

        self._start_op(live, "replace", after, replace, why)

    def _release(self, live: LiveEntry) -> None:
        """Give back what the books charge the job."""
        self.cluster.release(live.run.spec)
        live.run.allocation = Allocation.EMPTY
        live.run.rate = 0.0
        live.speed = 0.0

    def _fail(self, live: LiveEntry, reason: str, now: float) -> None:
        """Give the job up: a ``job_failed`` event and a ``failed`` row of ``jobs.csv``."""
        log.error("job %d failed: %s", live.run.job_id, reason)
        live.failed = reason
        self._release(live)
        self.event_log.fail(live.run.job_id)
        self._record(
            ScalingEvent(now, live.run.job_id, "job_failed", (0, 0), (0, 0), 0.0, error=reason)
        )
        self._write_job(live)
        job = live.job
        if job is not None and not live.busy:
            self._start_op(live, "stop", (0, 0), lambda: stop_job(job))

    def _finish(self, live: LiveEntry, now: float) -> None:
        run = live.run
        run.finish_s = now
        run.progress_s = run.spec.total_work
        live.steps = live.request.config.total_steps
        self._release(live)
        self.event_log.finish(run.job_id)
        run.ideal_duration_s = self._ideal_s(live)
        self._write_job(live)
        log.info("job %d finished at %.2f s", run.job_id, now)
        job = live.job
        if job is not None:
            path = None if self.params_dir is None else self.params_dir / f"job{run.job_id}.pt"
            self._start_op(live, "finish", (0, 0), lambda: finish_job(job, path))

    # ------------------------------------------------------------------ measurement

    def _poll(self, now: float) -> None:
        """Read each running job's status without waiting (a request sent at one poll is
        answered by the next); repair faults; finish jobs that are done."""
        for live in self._running():
            job = live.job
            if job is None or live.busy:
                continue
            if not job.coordinator_alive():
                self._repair(live, "restart_coordinator", "coordinator process died")
                continue
            st = self._status(live, job)
            if st is None:
                continue
            self.pids_seen.update(job.pids())
            redone = new_rollbacks(live, st)
            if redone:
                live.steps_redone += redone
                held = size(live.run.allocation)
                self._record(
                    ScalingEvent(
                        now, live.run.job_id, "rollback", held, held, 0.0, 0.0, "a PS died", redone
                    )
                )
            need = repair_needed(st, live.run.allocation)
            if need is not None:
                self._repair(live, *need)
                continue
            self._measure(live, int(st["progress"]), float(st["speed"]), now)
            if st["finished"]:
                self._finish(live, now)

    def _status(self, live: LiveEntry, job: LiveJob) -> dict[str, Any] | None:
        """The job's status if the answer to the last request came (None if not yet); sends
        the next request. Two requests unanswered for `STATUS_TIMEOUT_S` restart the
        coordinator."""
        reply = None
        if live.status_req is not None:
            req, sent = live.status_req
            reply = job.status_reply(req)
            if reply is None:
                if time.monotonic() - sent < STATUS_TIMEOUT_S:
                    return None
                live.status_misses += 1
                if live.status_misses >= 2:
                    live.status_misses = 0
                    self._repair(live, "restart_coordinator", "coordinator does not answer")
                    return None
            else:
                live.status_misses = 0
        live.status_req = (job.ask_status(), time.monotonic())
        return reply
