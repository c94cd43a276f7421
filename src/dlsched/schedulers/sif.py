"""SIF, Shortest Ideal time job First (SCED²'s baseline).

Rule: at every scheduling point, pending jobs are sorted by their ideal execution time — the
duration at their best placement, ``total_work`` seconds for all-reduce jobs — then by arrival;
each starts at its requested GPUs if they fit (the placement policy, packing in SCED², decides
where), and jobs that do not fit are skipped. Non-preemptive. The queue is kept sorted between
points (`PendingQueue`), not re-sorted at each.

Source: Luan et al., SCED² §IV-A baselines ("schedules the job with the shortest ideal
execution time from waiting queue") and §II-B, Fig. 4.
"""

from __future__ import annotations

from typing import ClassVar

from dlsched.core import ClusterView, Decision
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.ordered import requested_size, start_in_order
from dlsched.schedulers.pending_queue import PendingQueue
from dlsched.schedulers.registry import register
from dlsched.schedulers.sjf import duration_key_at


class Sif(BaseScheduler):
    """Shortest ideal time first, non-preemptive and work-conserving."""

    name = "sif"
    preemptive: ClassVar[bool] = False

    def __init__(self) -> None:
        self.queue = PendingQueue(duration_key_at, requested_size)

    def reset(self) -> None:
        self.queue.clear()

    def decide(self, view: ClusterView) -> Decision:
        return start_in_order(view, self.queue.update(view))


@register(
    "sif",
    setting="fixed-GPU (sched2, philly, trace)",
    source="SCED² §IV-A",
    description="shortest ideal execution time first; non-preemptive",
)
def _make(_arg: str | None) -> Scheduler:
    return Sif()
