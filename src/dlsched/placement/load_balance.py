"""DL2's placement: each new task goes to the least-loaded server where it fits."""

from __future__ import annotations

import math

from dlsched.core import Allocation, Cluster, JobSpec, Status
from dlsched.placement.tasks import FreeRows, most_tasks, place_tasks


class LoadBalance:
    """Spread tasks: each goes where the largest fraction of every resource is still free.

    Ties go to the lowest server id. Removals take tasks from the servers holding most of the
    job's tasks, so its load stays balanced.
    """

    name = "load_balance"

    def place(
        self, cluster: Cluster, spec: JobSpec, current: Allocation, num_workers: int, num_ps: int
    ) -> Allocation | Status:
        cap = cluster.capacity_rows

        def least_loaded(free: FreeRows, fits: list[int], _left: int) -> int:
            best, best_share = 0, -math.inf
            for server, row in enumerate(free):
                if fits[server] <= 0:
                    share = -math.inf
                else:
                    c0, c1, c2 = cap[server]
                    share = min(
                        row[0] / c0 if c0 > 0 else math.inf,
                        row[1] / c1 if c1 > 0 else math.inf,
                        row[2] / c2 if c2 > 0 else math.inf,
                    )
                if server == 0 or share > best_share:
                    best, best_share = server, share
            return best

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
