"""Shared mechanics of placement: adding and removing tasks of a job across servers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from dlsched.core import Allocation, Cluster, JobSpec, Status
from dlsched.placement.base import capacity_for

# Picks the server for the next tasks: (free (N,3), fits per server, tasks left) → server index.
Chooser = Callable[[npt.NDArray[np.float64], npt.NDArray[np.int64], int], int]
# Picks the server to take one task from: task counts per server → server id.
Remover = Callable[[dict[int, int]], int]


def most_tasks(counts: dict[int, int]) -> int:
    """Remove from the server holding most of the job's tasks (keeps load balanced)."""
    return max(counts, key=lambda s: (counts[s], s))


def fewest_tasks(counts: dict[int, int]) -> int:
    """Remove from the server holding fewest of the job's tasks (spans fewer servers)."""
    return min(counts, key=lambda s: (counts[s], -s))


def grow(
    counts: dict[int, int],
    add: int,
    free: npt.NDArray[np.float64],
    demand: tuple[float, float, float],
    choose: Chooser,
    one_at_a_time: bool,
) -> bool:
    """Add ``add`` tasks of ``demand``, taking from ``free`` in place; False if they do not fit.

    With ``one_at_a_time`` each task is placed separately (spreading), otherwise as many as fit
    go to the chosen server (packing).
    """
    need = np.asarray(demand, dtype=np.float64)
    left = add
    while left > 0:
        fits = capacity_for(free, demand)
        if not fits.any():
            return False
        server = choose(free, fits, left)
        n = 1 if one_at_a_time else int(min(left, fits[server]))
        counts[server] = counts.get(server, 0) + n
        free[server] -= need * n
        left -= n
    return True


def place_tasks(
    cluster: Cluster,
    spec: JobSpec,
    current: Allocation,
    num_workers: int,
    num_ps: int,
    *,
    choose: Chooser,
    remove: Remover,
    one_at_a_time: bool,
    policy: str,
) -> Allocation | Status:
    """Resize workers and PS of ``spec`` from ``current``, keeping existing tasks in place."""
    free = cluster.free_array
    sides = []
    for have, want, demand in (
        (current.workers, num_workers, spec.worker_demand.as_tuple()),
        (current.ps, num_ps, spec.ps_demand.as_tuple()),
    ):
        counts = dict(have)
        total = sum(counts.values())
        for _ in range(total - want):
            server = remove(counts)
            counts[server] -= 1
            if counts[server] == 0:
                del counts[server]
        if want > total and not grow(counts, want - total, free, demand, choose, one_at_a_time):
            return Status.unschedulable(
                f"job {spec.job_id}: {want} tasks of (gpu, cpu, mem)={demand} do not fit ({policy})"
            )
        sides.append(counts.items())
    return Allocation.of(sides[0], sides[1])
