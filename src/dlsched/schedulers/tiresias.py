"""Tiresias: discretised two-dimensional least-attained-service with preemption (Tiresias-G).

Rule: a job's attained service is the GPU-seconds it has received (its GPUs × time held: the
two dimensions, space and time). Queues are cut by thresholds on attained service
(`DEFAULT_THRESHOLDS_GPU_S`: two queues split at one GPU-hour; ``tiresias:T1,T2,...`` sets
them): a job starts in the highest-priority queue and is demoted when its service crosses the
next threshold. Jobs are ranked by queue, then first-come first-served within a queue (by
arrival), which avoids the constant preemptions of continuous LAS; the jobs to run are chosen
in that order at their requested size while they fit, and running jobs not chosen are
preempted unless they still fit where they are. Starvation guard: a job that has been waiting
longer than `PROMOTE_KNOB` times its last continuous run is promoted back to the highest queue
(its service counted afresh from then on).

Demotions take effect at the next scheduling point (the simulator schedules on job arrivals and
completions; a scheduler cannot ask for a wake-up).

Source: Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI 2019
(§3.1–§4.2: 2D-LAS, discretised into K queues, FIFO within a queue, promotion on starvation).
The thresholds and the knob are our defaults; the paper tunes them per cluster.
"""

from __future__ import annotations

import bisect
from typing import ClassVar

from dlsched.core import ClusterView, Decision, JobRun
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.ordered import run_in_order
from dlsched.schedulers.registry import register

DEFAULT_THRESHOLDS_GPU_S: tuple[float, ...] = (3600.0,)
"""Attained GPU-seconds at which a job moves to the next (lower-priority) queue."""

PROMOTE_KNOB = 8.0
"""Promote a job that has waited this many times its last continuous run."""


class Tiresias(BaseScheduler):
    """Discretised 2D-LAS (module docstring).

    Args:
        thresholds_gpu_s: increasing queue thresholds on attained service, GPU-seconds.
        promote_knob: starvation guard (waiting time / last run time), > 0.
    """

    name = "tiresias"
    preemptive: ClassVar[bool] = True

    def __init__(
        self,
        thresholds_gpu_s: tuple[float, ...] = DEFAULT_THRESHOLDS_GPU_S,
        promote_knob: float = PROMOTE_KNOB,
    ) -> None:
        if list(thresholds_gpu_s) != sorted(thresholds_gpu_s) or any(
            t <= 0 for t in thresholds_gpu_s
        ):
            raise ValueError(f"tiresias: thresholds must be increasing and > 0: {thresholds_gpu_s}")
        if promote_knob <= 0:
            raise ValueError(f"tiresias: promote_knob must be > 0, got {promote_knob}")
        self.thresholds_gpu_s = tuple(thresholds_gpu_s)
        self.promote_knob = promote_knob
        self.reset()

    def reset(self) -> None:
        self._prev_decision_s = 0.0
        self._run_started_s: dict[int, float] = {}
        self._seen_running_s: dict[int, float] = {}
        self._last_run_s: dict[int, float] = {}
        self._waiting_since_s: dict[int, float] = {}
        self._service_offset: dict[int, float] = {}

    def queue_of(self, run: JobRun, now_s: float) -> int:
        """Queue index (0 = highest priority) of ``run`` at ``now_s``."""
        service = run.attained_gpu_s_at(now_s) - self._service_offset.get(run.job_id, 0.0)
        return bisect.bisect_right(self.thresholds_gpu_s, service)

    def _track(self, view: ClusterView) -> None:
        """Record run and wait spells (as seen at decisions), and promote starved jobs."""
        now = view.now_s
        for run in view.running:
            job = run.job_id
            self._waiting_since_s.pop(job, None)
            self._run_started_s.setdefault(job, self._prev_decision_s)  # started last decision
            self._seen_running_s[job] = now
        for run in view.pending:
            job = run.job_id
            started = self._run_started_s.pop(job, None)
            if started is not None:  # preempted by the decision at which it was last running
                stopped = self._seen_running_s.pop(job)
                self._last_run_s[job] = stopped - started
                self._waiting_since_s[job] = stopped
            since = self._waiting_since_s.get(job)
            last = self._last_run_s.get(job, 0.0)
            if since is not None and last > 0 and now - since >= self.promote_knob * last:
                self._service_offset[job] = run.attained_gpu_s_at(now)
                self._waiting_since_s[job] = now
                self._last_run_s[job] = 0.0
        self._prev_decision_s = now

    def decide(self, view: ClusterView) -> Decision:
        self._track(view)
        now = view.now_s
        order = sorted(
            view.jobs(), key=lambda r: (self.queue_of(r, now), r.spec.submit_time_s, r.job_id)
        )
        return run_in_order(view, order)


@register(
    "tiresias",
    setting="fixed-GPU (sched2, philly, trace, pollux)",
    source="Tiresias (NSDI 2019)",
    description="discretised 2D-LAS: GPU-second queues, FIFO within; preemptive (tiresias:T1,..)",
)
def _make(arg: str | None) -> Scheduler:
    if arg is None:
        return Tiresias()
    try:
        thresholds = tuple(float(x) for x in arg.split(","))
    except ValueError:
        raise ValueError(f"tiresias:T1,T2,... needs GPU-second thresholds, got {arg!r}") from None
    return Tiresias(thresholds)
