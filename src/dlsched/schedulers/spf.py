"""SPF, Smallest Product job First (SCED²'s baseline).

Rule: at every scheduling point, pending jobs are sorted by GPUs × ideal execution time
(requested GPUs times ``total_work`` seconds at the best placement: the job's GPU-seconds), then
by arrival; each starts at its requested size if it fits, and jobs that do not fit are skipped.
Non-preemptive; a `KeyOrdered`.

Source: Luan et al., SCED² §IV-A baselines ("the smallest product of GPU demand and the ideal
execution time").
"""

from __future__ import annotations

from dlsched.core import JobRun, Resources
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.key_ordered import KeyOrdered
from dlsched.schedulers.registry import register


def gpu_seconds_key(run: JobRun) -> tuple[float, float, int]:
    """Smallest requested GPUs × ideal duration first, then arrival."""
    spec = run.spec
    gpus = spec.worker_demand.gpu * spec.num_workers
    return (gpus * spec.total_work, spec.submit_time_s, run.job_id)


def _gpu_seconds_key_in(run: JobRun, _total: Resources) -> tuple[float, float, int]:
    return gpu_seconds_key(run)


@register(
    "spf",
    setting="fixed-GPU (sched2, philly, trace)",
    source="SCED² §IV-A",
    description="smallest GPUs × ideal time first; non-preemptive",
)
def _make(_arg: str | None) -> Scheduler:
    return KeyOrdered("spf", _gpu_seconds_key_in)
