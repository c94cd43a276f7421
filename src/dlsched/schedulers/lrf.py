"""LRF, Least Resource job First (SCED²'s baseline).

Rule: at every scheduling point, pending jobs are sorted by the GPUs they ask for (``num_workers``
× GPUs per worker; jobs without GPUs by their dominant share of the cluster), then by arrival;
each starts at its requested size if it fits, and jobs that do not fit are skipped.
Non-preemptive; a `KeyOrdered`.

Source: Luan et al., SCED² §IV-A baselines ("schedules the job demanding the fewest GPUs") and
§II-B, Fig. 4.
"""

from __future__ import annotations

from dlsched.core import JobRun, Resources
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.common import requested
from dlsched.schedulers.key_ordered import KeyOrdered
from dlsched.schedulers.registry import register


def resource_key(run: JobRun, total: Resources) -> tuple[float, float, float, int]:
    """Fewest requested GPUs first, then smallest dominant share, then arrival."""
    spec = run.spec
    demand = spec.demand(*requested(spec))
    return (demand.gpu, demand.dominant_share(total), spec.submit_time_s, run.job_id)


@register(
    "lrf",
    setting="fixed-GPU (sched2, philly, trace)",
    source="SCED² §IV-A",
    description="fewest requested GPUs first; non-preemptive",
)
def _make(_arg: str | None) -> Scheduler:
    return KeyOrdered("lrf", resource_key)
