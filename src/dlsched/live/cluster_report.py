"""What `dlsched.live.cluster.LiveCluster` measures and reports: the jobs' progress, the live
view's snapshot, the rows of ``jobs.csv``, the summary and the final `Result`.

`ClusterReport` is the base of `LiveCluster`: it reads the loop's state and changes nothing
but the measurements and the output files.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from dlsched.core import Cluster
from dlsched.live.cluster_ops import LiveEntry
from dlsched.live.run_log import RunLog
from dlsched.live.snapshot import JobRow, LiveSnapshot, ScalingEvent, job_state
from dlsched.live.stream import epochs_per_step
from dlsched.placement.base import Placement
from dlsched.schedulers.base import Scheduler
from dlsched.sim.event_log import EventLog
from dlsched.sim.metrics import Timeline
from dlsched.sim.result import JobRecord, Result, RunTotals


class ClusterReport:
    """Measurement and output of the live loop (see the module docstring)."""

    jobs: dict[int, LiveEntry]
    cluster: Cluster
    scheduler: Scheduler
    placement: Placement
    events: list[ScalingEvent]
    timeline: Timeline
    event_log: EventLog
    run_log: RunLog | None
    on_slot: Callable[[LiveSnapshot], None] | None
    seed: int
    slot_s: float
    poll_s: float
    horizon_s: float | None
    decisions: int
    _t0: float
    _offset: float
    _now: float
    _busy_gpu_s: float
    _busy_cpu_s: float

    def _clock(self) -> float:
        """Seconds into the run (a resumed run goes on from where the killed one stopped)."""
        return self._offset + time.monotonic() - self._t0

    def _pending(self) -> list[LiveEntry]:
        return [
            lv
            for lv in self.jobs.values()
            if lv.arrived and not lv.run.running and not lv.run.finished and not lv.failed
        ]

    def _running(self) -> list[LiveEntry]:
        return [lv for lv in self.jobs.values() if lv.run.running]

    def _measure(self, live: LiveEntry, steps: int, speed: float, now: float) -> None:
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

    # ------------------------------------------------------------------ events and rows

    def _record(self, event: ScalingEvent) -> None:
        """Keep ``event`` (in time order) and append it to ``scaling_events.csv``."""
        at = len(self.events)
        while at > 0 and self.events[at - 1].t_s > event.t_s:
            at -= 1
        self.events.insert(at, event)
        if self.run_log is not None:
            self.run_log.event(event)

    def _write_job(self, live: LiveEntry) -> None:
        """Append the ended job's row to ``jobs.csv`` and rewrite ``summary.json``."""
        if self.run_log is not None:
            self.run_log.job(self.job_row(live))
            self.run_log.summary(self.partial_summary())

    def job_row(self, live: LiveEntry) -> dict[str, Any]:
        """The ``jobs.csv`` row of an ended job (`dlsched.live.run_log.LIVE_JOB_COLUMNS`)."""
        run = live.run
        spec = run.spec
        row: dict[str, Any] = {
            "trace_id": str(spec.job_id),
            "job_id": spec.job_id,
            "scheduler": self.scheduler.name,
            "seed": self.seed,
            "model": spec.model,
            "submit_s": spec.submit_time_s,
            "workers": spec.num_workers,
            "ps": spec.num_ps,
            "gpus": spec.num_gpus,
            "rescales": run.rescales,
            "steps_redone": live.steps_redone,
        }
        if live.failed:
            row.update(status="failed", error=live.failed)
            if run.first_start_s is not None:
                row["start_s"] = run.first_start_s
            return row
        rec = JobRecord.of(run)
        row.update(
            start_s=rec.start_s,
            finish_s=rec.finish_s,
            jct_s=rec.jct_s,
            wait_s=rec.wait_s,
            ideal_s=rec.ideal_s,
            slowdown=rec.slowdown,
            effectiveness=rec.effectiveness,
            status="finished",
            error="",
        )
        return row

    def counts(self) -> dict[str, int]:
        """Jobs finished and failed, repairs and steps redone so far (also asked from the
        metrics server's thread: the jobs copied first)."""
        jobs = list(self.jobs.values())
        return {
            "finished": sum(1 for lv in jobs if lv.run.finished),
            "failed": sum(1 for lv in jobs if lv.failed),
            "repairs": sum(lv.repairs for lv in jobs),
            "steps_redone": sum(lv.steps_redone for lv in jobs),
        }

    def partial_summary(self) -> dict[str, Any]:
        """What ``summary.json`` holds while the run goes on (``complete`` false)."""
        return {
            "workload": "live",
            "scheduler": self.scheduler.name,
            "seed": self.seed,
            "jobs": len(self.jobs),
            **self.counts(),
            "t_s": self._clock(),
            "complete": False,
        }

    # ------------------------------------------------------------------ live view

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
        pids = sum(len(lv.job.pids()) for lv in self.jobs.values() if lv.job is not None)
        return LiveSnapshot(
            self._clock(),
            self.decisions,
            rows,
            self.cluster.used_total().as_tuple(),
            self.cluster.total.as_tuple(),
            pids,
        )

    def _emit(self) -> None:
        if self.on_slot is not None:
            self.on_slot(self.snapshot())

    # ------------------------------------------------------------------ result

    def _ideal_s(self, live: LiveEntry) -> float:
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
            run = live.run
            if run.finished and not run.ideal_duration_s > 0:
                run.ideal_duration_s = self._ideal_s(live)
        span = max(self._now - self._offset, 1e-9)
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
            cluster_gpus=float(total.gpu),
        )
        return Result.from_runs(finished, totals, self.timeline, self.params(), self.event_log)

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
