"""FIFO: jobs start in arrival order at the size they asked for; the first misfit blocks."""

from __future__ import annotations

from typing import ClassVar

from dlsched.core import ClusterView, Decision
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.common import FreeTracker, requested
from dlsched.schedulers.registry import register


class Fifo(BaseScheduler):
    """First in, first out, non-preemptive, with head-of-line blocking (tf-operator, Philly)."""

    name = "fifo"
    preemptive: ClassVar[bool] = False
    wake: ClassVar[str] = "head-or-free"

    def __init__(self) -> None:
        # (cluster, its version, head job id) when the head last did not fit
        self._blocked: tuple[int, int, int] | None = None

    def reset(self) -> None:
        self._blocked = None

    def decide(self, view: ClusterView) -> Decision:
        decision = Decision()
        if not view.pending:
            return decision
        head = (id(view.cluster), view.cluster.version, view.pending[0].job_id)
        if head == self._blocked:  # nothing was given back since the head did not fit
            return decision
        tracker = FreeTracker(view.cluster)
        for i, run in enumerate(view.pending):
            workers, ps = requested(run.spec)
            if not tracker.take(run.spec, workers, ps):
                self._blocked = head if i == 0 else None
                break
            decision.set(run.job_id, workers, ps)
        return decision


@register(
    "fifo",
    setting="any",
    source="tf-operator, Philly",
    description="arrival order at the requested size; head-of-line blocking",
)
def _make(_arg: str | None) -> Scheduler:
    return Fifo()
