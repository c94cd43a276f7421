"""SPF, Smallest Product job First (SCED²'s baseline).

Rule: at every scheduling point, pending jobs are sorted by GPUs × ideal execution time
(requested GPUs times ``total_work`` seconds at the best placement: the job's GPU-seconds), then
by arrival; each starts at its requested size if it fits, and jobs that do not fit are skipped.
Non-preemptive.

Source: Luan et al., SCED² §IV-A baselines ("the smallest product of GPU demand and the ideal
execution time").
"""

from __future__ import annotations

from typing import ClassVar

from dlsched.core import ClusterView, Decision, JobRun
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.ordered import requested_size, start_in_order
from dlsched.schedulers.pending_queue import PendingQueue
from dlsched.schedulers.registry import register


def gpu_seconds_key(run: JobRun) -> tuple[float, float, int]:
    """Smallest requested GPUs × ideal duration first, then arrival."""
    spec = run.spec
    gpus = spec.worker_demand.gpu * spec.num_workers
    return (gpus * spec.total_work, spec.submit_time_s, run.job_id)


def _gpu_seconds_key_at(run: JobRun, _now_s: float) -> tuple[float, float, int]:
    return gpu_seconds_key(run)


class Spf(BaseScheduler):
    """Smallest GPU × ideal-time product first, non-preemptive and work-conserving."""

    name = "spf"
    preemptive: ClassVar[bool] = False

    def __init__(self) -> None:
        # kept sorted between points instead of sorting the queue at each
        self.queue = PendingQueue(_gpu_seconds_key_at, requested_size)

    def reset(self) -> None:
        self.queue.clear()

    def decide(self, view: ClusterView) -> Decision:
        return start_in_order(view, self.queue.update(view))


@register(
    "spf",
    setting="fixed-GPU (sched2, philly, trace)",
    source="SCED² §IV-A",
    description="smallest GPUs × ideal time first; non-preemptive",
)
def _make(_arg: str | None) -> Scheduler:
    return Spf()
