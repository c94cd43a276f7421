"""Kubeflow-style gang placement: all of a job's replicas are bound together or none is.

Every placement in dlsched is all-or-nothing; what sets this one apart is the node order of
Kubernetes' default first-fit binding: replicas fill nodes in id order, one replica at a time,
so a job lands on the first nodes with room, as the tf-operator's pods would.
"""

from __future__ import annotations

from dlsched.core import Allocation, Cluster, JobSpec, Status
from dlsched.placement.tasks import FreeRows, most_tasks, place_tasks


def first_fit(_free: FreeRows, fits: list[int], _left: int) -> int:
    """The first server (in id order) with room for a task."""
    return next(server for server, n in enumerate(fits) if n > 0)


class Gang:
    """First-fit, all-or-nothing placement of replicas; scale-down removes from the busiest node."""

    name = "gang"

    def place(
        self, cluster: Cluster, spec: JobSpec, current: Allocation, num_workers: int, num_ps: int
    ) -> Allocation | Status:
        return place_tasks(
            cluster,
            spec,
            current,
            num_workers,
            num_ps,
            choose=first_fit,
            remove=most_tasks,
            one_at_a_time=True,
            policy=self.name,
        )
