"""LRF, Least Resource job First (SCED²'s baseline).

Rule: at every scheduling point, pending jobs are sorted by the GPUs they ask for (``num_workers``
× GPUs per worker; jobs without GPUs by their dominant share of the cluster), then by arrival;
each starts at its requested size if it fits, and jobs that do not fit are skipped.
Non-preemptive.

Source: Luan et al., SCED² §IV-A baselines ("schedules the job demanding the fewest GPUs") and
§II-B, Fig. 4.
"""

from __future__ import annotations

from typing import ClassVar

from dlsched.core import ClusterView, Decision, JobRun, Resources
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.common import requested
from dlsched.schedulers.ordered import requested_size, start_in_order
from dlsched.schedulers.pending_queue import PendingQueue
from dlsched.schedulers.registry import register


def resource_key(run: JobRun, total: Resources) -> tuple[float, float, float, int]:
    """Fewest requested GPUs first, then smallest dominant share, then arrival."""
    spec = run.spec
    demand = spec.demand(*requested(spec))
    return (demand.gpu, demand.dominant_share(total), spec.submit_time_s, run.job_id)


class Lrf(BaseScheduler):
    """Least resource (GPUs) first, non-preemptive and work-conserving."""

    name = "lrf"
    preemptive: ClassVar[bool] = False

    def __init__(self) -> None:
        # kept sorted between points instead of sorting the queue at each; the keys hold for
        # the cluster total they were computed with
        self._total = Resources()
        self.queue = PendingQueue(self._key, requested_size)

    def reset(self) -> None:
        self.queue.clear()

    def _key(self, run: JobRun, _now_s: float) -> tuple[float, float, float, int]:
        return resource_key(run, self._total)

    def decide(self, view: ClusterView) -> Decision:
        total = view.cluster.total
        if total != self._total:
            self._total = total
            self.queue.clear()
        return start_in_order(view, self.queue.update(view))


@register(
    "lrf",
    setting="fixed-GPU (sched2, philly, trace)",
    source="SCED² §IV-A",
    description="fewest requested GPUs first; non-preemptive",
)
def _make(_arg: str | None) -> Scheduler:
    return Lrf()
