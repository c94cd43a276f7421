"""LAS, Least Attained Service: preemptive priority to the job that has received least service.

Rule: at every scheduling point, every active job is ranked by the GPU-seconds it has received
so far (`JobRun.attained_gpu_s_at`; ties by arrival); the jobs to run are chosen in that order at
their requested size while they fit, and running jobs not chosen are preempted (unless they
still fit where they are). Needs no knowledge of durations. Jobs without GPUs attain no GPU
service and so keep the highest priority: LAS is meant for GPU jobs.

Source: the least-attained-service discipline (Rai et al., SIGMETRICS 2003) as applied to GPU
jobs by Tiresias (Gu et al., NSDI 2019), whose continuous 2D-LAS this is.
"""

from __future__ import annotations

from typing import ClassVar

from dlsched.core import ClusterView, Decision
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.ordered import run_in_order
from dlsched.schedulers.registry import register


class Las(BaseScheduler):
    """Least attained GPU service first, preemptive."""

    name = "las"
    preemptive: ClassVar[bool] = True

    def decide(self, view: ClusterView) -> Decision:
        now = view.now_s
        order = sorted(
            view.jobs(),
            key=lambda r: (r.attained_gpu_s_at(now), r.spec.submit_time_s, r.job_id),
        )
        return run_in_order(view, order)


@register(
    "las",
    setting="fixed-GPU (sched2, philly, trace, pollux)",
    source="Tiresias (NSDI 2019), LAS",
    description="least attained GPU-seconds first; preemptive",
)
def _make(_arg: str | None) -> Scheduler:
    return Las()
