"""SJF (DeepRM §4.1's comparable): start pending jobs in increasing order of duration.

Rule: at every scheduling point, pending jobs are sorted by duration — ``total_work`` in seconds
for fixed-duration (DeepRM) and fixed-GPU jobs, which run at speed 1.0 with their requested
allocation — then by arrival; each starts at its requested size if it fits, and jobs that do not
fit are skipped (DeepRM: "all work-conserving, and allocate as many jobs as can be accommodated
with the available resources (in the preference order)"). Non-preemptive. For PS jobs the
duration is not known in seconds, so their ``total_work`` in epochs stands in for it.

Source: Mao et al., DeepRM (HotNets 2016) §4.1, "Comparables".
"""

from __future__ import annotations

from typing import ClassVar

from dlsched.core import ClusterView, Decision, JobRun
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.ordered import requested_size, start_in_order
from dlsched.schedulers.pending_queue import PendingQueue
from dlsched.schedulers.registry import register


def duration_key(run: JobRun) -> tuple[float, float, int]:
    """Shortest duration first, then arrival."""
    return (run.spec.total_work, run.spec.submit_time_s, run.job_id)


def duration_key_at(run: JobRun, _now_s: float) -> tuple[float, float, int]:
    """`duration_key` as a `PendingQueue` key (it does not depend on the time)."""
    return duration_key(run)


class Sjf(BaseScheduler):
    """Shortest job first, non-preemptive and work-conserving."""

    name = "sjf"
    preemptive: ClassVar[bool] = False

    def __init__(self) -> None:
        # kept sorted between points instead of sorting the queue at each
        self.queue = PendingQueue(duration_key_at, requested_size)

    def reset(self) -> None:
        self.queue.clear()

    def decide(self, view: ClusterView) -> Decision:
        return start_in_order(view, self.queue.update(view))


@register(
    "sjf",
    setting="fixed-duration (deeprm)",
    source="DeepRM §4.1",
    description="shortest duration first; work-conserving, non-preemptive",
)
def _make(_arg: str | None) -> Scheduler:
    return Sjf()
