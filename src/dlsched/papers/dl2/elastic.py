"""DL2 runs and trains only on workloads with elastic jobs.

DL2's policy decides how many workers and parameter servers each job gets; on a workload
whose jobs all run at one fixed size (``philly``, a Philly-like ``trace:PATH``, ``sched2``,
``deeprm``) it has nothing to decide and its training makes no progress (issue 35). The rule is
kept apart from the state code so that the scheduler registry asks it before a policy (and
PyTorch) is loaded (`dlsched.schedulers.registry.SchedulerEntry.refuses`, issue 34).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dlsched.core import JobSpec, Resources

__all__ = ["no_elastic_job", "require_elastic"]


def no_elastic_job(jobs: Sequence[JobSpec], servers: Sequence[Resources] = ()) -> str | None:
    """Why DL2 cannot run ``jobs`` (none of them is elastic, `JobSpec.elastic`), or None."""
    if any(job.elastic for job in jobs):
        return None
    return (
        f"none of its {len(jobs):,} jobs is elastic (each runs at one fixed size), so DL2 "
        "has no workers or parameter servers to decide; run it on an elastic workload "
        "such as dl2"
    )


def require_elastic(workload: str, options: Mapping[str, Any], option: str = "--workload") -> None:
    """Refuse ``workload`` (built once at seed 0 with ``options``) when none of its jobs is
    elastic (`dlsched.core.JobSpec.elastic`).

    Raises:
        ValueError: one line naming ``option`` and the workload, and the workloads to use.
    """
    from dlsched.workloads.registry import make_workload

    jobs = make_workload(workload, seed=0, **options).jobs
    if not any(job.elastic for job in jobs):
        raise ValueError(
            f"{option} {workload!r}: none of its {len(jobs):,} jobs is elastic (each runs at "
            "one fixed size), so DL2 has no workers or parameter servers to decide; train on "
            "an elastic workload such as dl2"
        )
