"""`Result`: per-job records and summary metrics of one run, simulated or live.

Both the simulator and the live runtime build it the same way, through `Result.from_runs`: the
finished `JobRun`s (each with its ``ideal_duration_s`` set) and the run's `RunTotals`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlsched.core import JobRun
from dlsched.sim.event_log import EventLog
from dlsched.sim.fairness import fairness_summary
from dlsched.sim.metrics import Timeline, jain_index
from dlsched.sim.order_stats import median, percentile

_RECORDED_PARAMS = ("skipped_rows", "speed_model", "repack", "core")
"""Workload and run parameters every summary carries when the run has them."""


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One finished job, times in seconds.

    Attributes:
        effectiveness: SCED² Eq. 2, ``T_ideal / (T_wait + T_actual)`` = ideal / JCT.
        slowdown: JCT / ideal duration (ideal = at its requested allocation, best placement).
        wait_s: first start − submit: the wait before it first ran only (a preempted job's
            later waits are in `Result.queued_s`, the summary's ``avg_queued_s``).
    """

    job_id: int
    model: str
    submit_s: float
    start_s: float
    finish_s: float
    jct_s: float
    wait_s: float
    ideal_s: float
    slowdown: float
    effectiveness: float
    num_workers: int
    num_ps: int
    num_gpus: int
    rescales: int

    @staticmethod
    def of(run: JobRun) -> JobRecord:
        """The record of a finished job (its ``ideal_duration_s`` set; NaN if unknown)."""
        if run.finish_s is None or run.first_start_s is None:
            raise ValueError(f"job {run.job_id} has not finished")
        spec = run.spec
        jct = run.finish_s - spec.submit_time_s
        ideal = run.ideal_duration_s
        return JobRecord(  # positional, in field order (one record a job: keywords cost)
            spec.job_id,
            spec.model,
            spec.submit_time_s,
            run.first_start_s,
            run.finish_s,
            jct,
            run.first_start_s - spec.submit_time_s,
            ideal,
            jct / ideal if ideal > 0 else float("nan"),
            ideal / jct if jct > 0 else 1.0,
            spec.num_workers,
            spec.num_ps,
            spec.num_gpus,
            run.rescales,
        )


@dataclass(frozen=True, slots=True)
class RunTotals:
    """What a backend measured of a whole run, besides its jobs.

    Attributes:
        num_jobs: jobs in the workload (finished or not).
        events: events handled; decisions: scheduling points decided.
        wall_s: wall-clock time of the run (s); end_s: simulated or live time at the end (s).
        gpu_util, cpu_util: time-averaged fraction of the cluster's GPUs / CPUs held.
        jct_bound_s: mean no-wait lower bound of the finished jobs' JCT (s; NaN if unknown).
        cluster_gpus: GPUs in the cluster (finish-time fairness; NaN if unknown).
    """

    workload: str
    scheduler: str
    seed: int
    num_jobs: int
    events: int
    decisions: int
    wall_s: float
    end_s: float
    gpu_util: float
    cpu_util: float
    jct_bound_s: float = float("nan")
    cluster_gpus: float = float("nan")


@dataclass
class Result:
    """Outcome of a run: per-job records, the timeline and the run's bookkeeping."""

    workload: str
    scheduler: str
    seed: int
    num_jobs: int
    records: list[JobRecord]
    timeline: Timeline
    events: int
    decisions: int
    wall_s: float
    end_s: float
    gpu_util: float
    cpu_util: float
    params: dict[str, Any] = field(default_factory=dict)
    jct_bound_s: float = float("nan")
    """Mean no-wait lower bound of the finished jobs' JCT (s; `models.base.no_wait_bound_s`)."""
    cluster_gpus: float = float("nan")
    """GPUs in the cluster (the fair share of `dlsched.sim.fairness`; NaN if unknown)."""
    queued_s: list[float] = field(default_factory=list)
    """Each record's seconds submitted, unfinished and holding no resources: its wait before
    the first start plus every gap after a preemption (JCT − `JobRun.held_s`; beside the
    records, which are unchanged; empty if unknown)."""
    event_log: EventLog | None = None
    """Every allocation change of the run, when it was recorded (`dlsched.sim.event_log`)."""
    decision_trace: dict[str, Any] | None = None
    """A learned policy's decision points, when recorded (`dlsched.rl.decision_trace`)."""

    @staticmethod
    def from_runs(
        finished: Iterable[JobRun],
        totals: RunTotals,
        timeline: Timeline,
        params: dict[str, Any] | None = None,
        event_log: EventLog | None = None,
    ) -> Result:
        """The result of a run from its finished jobs (any order) and its totals."""
        runs = sorted(finished, key=lambda r: r.job_id)
        records = [JobRecord.of(run) for run in runs]
        return Result(
            workload=totals.workload,
            scheduler=totals.scheduler,
            seed=totals.seed,
            num_jobs=totals.num_jobs,
            records=records,
            timeline=timeline,
            events=totals.events,
            decisions=totals.decisions,
            wall_s=totals.wall_s,
            end_s=totals.end_s,
            gpu_util=totals.gpu_util,
            cpu_util=totals.cpu_util,
            params=dict(params or {}),
            jct_bound_s=totals.jct_bound_s,
            cluster_gpus=totals.cluster_gpus,
            queued_s=[r.jct_s - run.held_s for r, run in zip(records, runs, strict=True)],
            event_log=event_log,
        )

    def column(self, name: str) -> np.ndarray:
        return np.asarray([getattr(r, name) for r in self.records], dtype=np.float64)

    def summary(self) -> dict[str, Any]:
        """The metrics object printed by ``dlsched simulate --json``."""
        jct = self.column("jct_s")
        have = jct.size > 0

        def stat(values: np.ndarray, fn: Any) -> float:
            return float(fn(values)) if values.size else float("nan")

        first_submit = float(self.column("submit_s").min()) if have else 0.0
        return {
            "workload": self.workload,
            "scheduler": self.scheduler,
            "seed": self.seed,
            "jobs": self.num_jobs,
            "finished": len(self.records),
            "avg_jct_s": stat(jct, np.mean),
            "jct_lower_bound_s": self.jct_bound_s,
            "jct_over_bound": stat(jct, np.mean) / self.jct_bound_s,
            "median_jct_s": stat(jct, median),
            "p95_jct_s": stat(jct, lambda v: percentile(v, 95)),
            "p99_jct_s": stat(jct, lambda v: percentile(v, 99)),
            "makespan_s": float(self.column("finish_s").max() - first_submit) if have else 0.0,
            "avg_slowdown": stat(self.column("slowdown"), np.mean),
            "avg_effectiveness": stat(self.column("effectiveness"), np.mean),
            "avg_wait_s": stat(self.column("wait_s"), np.mean),
            "avg_queued_s": (
                stat(np.asarray(self.queued_s), np.mean)
                if len(self.queued_s) == len(self.records)
                else float("nan")
            ),
            "gpu_util": self.gpu_util,
            "cpu_util": self.cpu_util,
            "avg_fragmentation": self.timeline.time_average(
                self.timeline.fragmentation, self.end_s
            ),
            "jain_fairness": jain_index(self.column("effectiveness").tolist()),
            **fairness_summary(
                [r.job_id for r in self.records],
                self.column("submit_s"),
                self.column("finish_s"),
                self.column("ideal_s"),
                self.column("slowdown"),
                self.column("num_gpus"),
                self.cluster_gpus,
                self.params.get("users"),
            ),
            "events": self.events,
            "decisions": self.decisions,
            "wall_s": self.wall_s,
            **{k: self.params[k] for k in _RECORDED_PARAMS if k in self.params},
        }
