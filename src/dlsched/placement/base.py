"""The placement contract: where a job's tasks go, given how many it should have."""

from __future__ import annotations

from typing import Protocol

from dlsched.core import Allocation, Cluster, JobSpec, Status


class Placement(Protocol):
    """Chooses servers for a job's tasks; never decides how many tasks.

    ``place`` gets the job's current allocation and its new task counts and returns the full new
    allocation, keeping tasks where they are (tasks that move would cost a migration). It returns
    a `Status` with a reason when the counts do not fit, and never changes ``cluster``.
    """

    name: str

    def place(
        self, cluster: Cluster, spec: JobSpec, current: Allocation, num_workers: int, num_ps: int
    ) -> Allocation | Status: ...
