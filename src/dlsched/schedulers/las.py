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

from dlsched.core import ClusterView, Decision, JobRun
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.ordered import requested_size, run_in_order
from dlsched.schedulers.pending_queue import PendingQueue
from dlsched.schedulers.registry import register


def service_key(run: JobRun, now_s: float) -> tuple[float, float, int]:
    """Least GPU-seconds received by ``now_s`` first, then arrival (a waiting job's service
    does not grow, so its key is the same at any time)."""
    # `JobRun.attained_gpu_s_at` inlined, the same float operations: every running job is
    # keyed at every point
    spec = run.spec
    workers = run.allocation.workers
    if not workers:
        count = 0
    elif len(workers) == 1:
        count = workers[0][1]
    else:
        count = sum(n for _, n in workers)
    since = now_s - run.progress_time_s
    held_s = since if since > 0.0 else 0.0
    return (
        run.attained_gpu_s + count * spec.worker_demand.gpu * held_s,
        spec.submit_time_s,
        spec.job_id,
    )


class Las(BaseScheduler):
    """Least attained GPU service first, preemptive."""

    name = "las"
    preemptive: ClassVar[bool] = True

    def __init__(self) -> None:
        # waiting jobs kept sorted between points; the running ones are ranked at each
        self.queue = PendingQueue(service_key, requested_size)

    def reset(self) -> None:
        self.queue.clear()

    def decide(self, view: ClusterView) -> Decision:
        return run_in_order(view, self.queue.update(view).rank(view), changes_only=True)


@register(
    "las",
    setting="fixed-GPU (sched2, philly, trace, pollux)",
    source="Tiresias (NSDI 2019), LAS",
    description="least attained GPU-seconds first; preemptive",
)
def _make(_arg: str | None) -> Scheduler:
    return Las()
