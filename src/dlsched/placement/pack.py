"""SCED²'s packing placement (its Fig. 2): as few servers as possible, as few free GPUs as possible.

Look for the server with the fewest free slots that can take all remaining tasks; if there is
none, put as many as fit on the server with the most room, and repeat for the rest.
"""

from __future__ import annotations

from dlsched.core import Allocation, Cluster, JobSpec, Status
from dlsched.placement.tasks import FreeRows, fewest_tasks, place_tasks


def best_fit_or_largest(_free: FreeRows, fits: list[int], left: int) -> int:
    """The tightest server that takes all ``left`` tasks, else the one with most room.

    Ties go to the lowest server id.
    """
    most = max(fits)
    if most < left:
        return fits.index(most)
    # the first server holding the fewest fits that are still enough
    return fits.index(min([n for n in fits if n >= left]))


class Pack:
    """Packing placement; shrinking drops tasks from the servers holding fewest of them."""

    name = "pack"

    def place(
        self, cluster: Cluster, spec: JobSpec, current: Allocation, num_workers: int, num_ps: int
    ) -> Allocation | Status:
        return place_tasks(
            cluster,
            spec,
            current,
            num_workers,
            num_ps,
            choose=best_fit_or_largest,
            remove=fewest_tasks,
            one_at_a_time=False,
            policy=self.name,
        )
