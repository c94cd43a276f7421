"""SIF, Shortest Ideal time job First (SCED²'s baseline).

Rule: at every scheduling point, pending jobs are sorted by their ideal execution time — the
duration at their best placement, ``total_work`` seconds for all-reduce jobs — then by arrival;
each starts at its requested GPUs if they fit (the placement policy, packing in SCED², decides
where), and jobs that do not fit are skipped. Non-preemptive. The queue is kept sorted between
points (`dlsched.schedulers.key_ordered.KeyOrdered` with SJF's key).

Source: Luan et al., SCED² §IV-A baselines ("schedules the job with the shortest ideal
execution time from waiting queue") and §II-B, Fig. 4.
"""

from __future__ import annotations

from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.key_ordered import KeyOrdered
from dlsched.schedulers.registry import register
from dlsched.schedulers.sjf import duration_key_in


@register(
    "sif",
    setting="fixed-GPU (sched2, philly, trace)",
    source="SCED² §IV-A",
    description="shortest ideal execution time first; non-preemptive",
)
def _make(_arg: str | None) -> Scheduler:
    return KeyOrdered("sif", duration_key_in)
