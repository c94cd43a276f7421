"""DRF as DL2 runs it (§6.2): bundles go to the job with the lowest dominant share."""

from __future__ import annotations

import heapq
from typing import ClassVar

from dlsched.core import Arch, ClusterView, Decision, JobSpec
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.common import FreeTracker
from dlsched.schedulers.registry import register


def next_bundle(spec: JobSpec, workers: int, ps: int) -> tuple[int, int] | None:
    """The next (workers, PS) to add to a job holding ``workers``/``ps``, or None at its caps.

    A job first gets its minimum (workers, plus one PS for PS jobs); after that one worker and,
    for PS jobs below their PS cap, one PS at a time.
    """
    if workers == 0:
        return spec.min_workers, 1 if spec.arch is Arch.PS and spec.max_ps > 0 else 0
    add_w = 1 if workers < spec.max_workers else 0
    add_p = 1 if spec.arch is Arch.PS and ps < spec.max_ps else 0
    if add_w == 0 and add_p == 0:
        return None
    return add_w, add_p


class Drf(BaseScheduler):
    """Dominant Resource Fairness, elastic: every round, reallocate from scratch.

    Repeatedly give a worker+PS bundle to the active job with the lowest dominant share until
    nothing more fits. Ties go to the earlier arrival.
    """

    name = "drf"
    preemptive: ClassVar[bool] = True

    def decide(self, view: ClusterView) -> Decision:
        total = view.cluster.total
        tracker = FreeTracker(view.cluster, release=list(view.running))
        jobs = view.jobs()
        counts = {run.job_id: (0, 0) for run in jobs}
        heap = [(0.0, i, run.spec) for i, run in enumerate(jobs)]
        heapq.heapify(heap)
        while heap:
            _, order, spec = heapq.heappop(heap)
            workers, ps = counts[spec.job_id]
            bundle = next_bundle(spec, workers, ps)
            if bundle is None or not tracker.take(spec, *bundle):
                continue
            workers, ps = workers + bundle[0], ps + bundle[1]
            counts[spec.job_id] = (workers, ps)
            heapq.heappush(heap, (spec.demand(workers, ps).dominant_share(total), order, spec))
        return Decision.from_counts({j: c for j, c in counts.items() if c[0] > 0})


@register(
    "drf",
    setting="elastic PS (dl2); any",
    source="DL2 §6.2 (Ghodsi et al. 2011)",
    description="worker+PS bundles to the lowest dominant share, re-decided every slot",
)
def _make(_arg: str | None) -> Scheduler:
    return Drf()
