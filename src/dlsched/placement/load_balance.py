"""DL2's placement: each new task goes to the least-loaded server where it fits."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dlsched.core import Allocation, Cluster, JobSpec, Status
from dlsched.placement.tasks import most_tasks, place_tasks


class LoadBalance:
    """Spread tasks: each goes where the largest fraction of every resource is still free.

    Ties go to the lowest server id. Removals take tasks from the servers holding most of the
    job's tasks, so its load stays balanced.
    """

    name = "load_balance"

    def place(
        self, cluster: Cluster, spec: JobSpec, current: Allocation, num_workers: int, num_ps: int
    ) -> Allocation | Status:
        cap = cluster.capacity_array
        safe_cap = np.where(cap > 0, cap, 1.0)

        def least_loaded(
            free: npt.NDArray[np.float64], fits: npt.NDArray[np.int64], _left: int
        ) -> int:
            share = np.where(cap > 0, free / safe_cap, np.inf).min(axis=1)
            share[fits <= 0] = -np.inf
            return int(np.argmax(share))

        return place_tasks(
            cluster,
            spec,
            current,
            num_workers,
            num_ps,
            choose=least_loaded,
            remove=most_tasks,
            one_at_a_time=True,
            policy=self.name,
        )
