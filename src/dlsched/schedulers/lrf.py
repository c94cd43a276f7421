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

from dlsched.core import ClusterView, Decision, JobRun, JobSpec, Resources
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.common import requested
from dlsched.schedulers.ordered import start_in_order
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
        # job id -> (its spec, its key) for the cluster total the keys were computed with: a
        # job's key never changes, and long queues are sorted at every point
        self._keys: dict[int, tuple[JobSpec, tuple[float, float, float, int]]] = {}
        self._keys_total: Resources | None = None

    def reset(self) -> None:
        self._keys.clear()
        self._keys_total = None

    def decide(self, view: ClusterView) -> Decision:
        total = view.cluster.total
        if total != self._keys_total:
            self._keys.clear()
            self._keys_total = total
        keys = self._keys

        def key(run: JobRun) -> tuple[float, float, float, int]:
            found = keys.get(run.job_id)
            if found is None or found[0] is not run.spec:  # new, or another job with this id
                found = keys[run.job_id] = (run.spec, resource_key(run, total))
            return found[1]

        return start_in_order(view, sorted(view.pending, key=key))


@register(
    "lrf",
    setting="fixed-GPU (sched2, philly, trace)",
    source="SCED² §IV-A",
    description="fewest requested GPUs first; non-preemptive",
)
def _make(_arg: str | None) -> Scheduler:
    return Lrf()
