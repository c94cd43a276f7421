"""SJF (DeepRM §4.1's comparable): start pending jobs in increasing order of duration.

Rule: at every scheduling point, pending jobs are sorted by duration — ``total_work`` in seconds
for fixed-duration (DeepRM) and fixed-GPU jobs, which run at speed 1.0 with their requested
allocation — then by arrival; each starts at its requested size if it fits, and jobs that do not
fit are skipped (DeepRM: "all work-conserving, and allocate as many jobs as can be accommodated
with the available resources (in the preference order)"). Non-preemptive; a `KeyOrdered`. For PS
jobs the duration is not known in seconds, so their ``total_work`` in epochs stands in for it.

Source: Mao et al., DeepRM (HotNets 2016) §4.1, "Comparables".
"""

from __future__ import annotations

from dlsched.core import JobRun, Resources
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.key_ordered import KeyOrdered
from dlsched.schedulers.registry import register


def duration_key(run: JobRun) -> tuple[float, float, int]:
    """Shortest duration first, then arrival."""
    return (run.spec.total_work, run.spec.submit_time_s, run.job_id)


def duration_key_at(run: JobRun, _now_s: float) -> tuple[float, float, int]:
    """`duration_key` as a `PendingQueue` key (it does not depend on the time)."""
    return duration_key(run)


def duration_key_in(run: JobRun, _total: Resources) -> tuple[float, float, int]:
    """`duration_key` as a `KeyOrdered` key (it does not depend on the cluster)."""
    return duration_key(run)


@register(
    "sjf",
    setting="fixed-duration (deeprm)",
    source="DeepRM §4.1",
    description="shortest duration first; work-conserving, non-preemptive",
)
def _make(_arg: str | None) -> Scheduler:
    return KeyOrdered("sjf", duration_key_in)
