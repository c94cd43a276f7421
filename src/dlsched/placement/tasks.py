"""Shared mechanics of placement: adding and removing tasks of a job across servers.

Placement runs once per job start or resize, tens of thousands of times in a trace replay, on
clusters of tens of servers: it works on plain Python lists and starts from the cluster's own
per-server fit counts (`Cluster.fits`), recounting only the servers it changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from dlsched.core import Allocation, Cluster, JobSpec, Status
from dlsched.core.cluster import tasks_that_fit

FreeRows = list[Sequence[float]]
"""Per server, free ``(gpu, cpu, mem)``."""
# Picks the server for the next tasks: (free rows, tasks that fit per server, tasks left) → server.
Chooser = Callable[[FreeRows, list[int], int], int]
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
    free: FreeRows,
    fits: list[int],
    demand: tuple[float, float, float],
    choose: Chooser,
    one_at_a_time: bool,
) -> bool:
    """Add ``add`` tasks of ``demand``; False if they do not fit.

    Takes from ``free`` (replacing the rows it changes, never writing into one) and keeps
    ``fits`` (`tasks_that_fit` of each row) up to date. With ``one_at_a_time`` each task is
    placed separately (spreading), otherwise as many as fit go to the chosen server (packing).
    """
    g, c, m = demand
    left = add
    while left > 0:
        if not any(fits):
            return False
        server = choose(free, fits, left)
        n = 1 if one_at_a_time else min(left, fits[server])
        counts[server] = counts.get(server, 0) + n
        row = free[server]
        row = free[server] = (row[0] - g * n, row[1] - c * n, row[2] - m * n)
        fits[server] = tasks_that_fit(row, demand)
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
    free = cast(FreeRows, cluster.free_rows())  # a fresh outer list: `grow` replaces rows
    if not num_ps and not current.workers and not current.ps:
        # a start without PS (every trace job's, and each restart after a preemption): the
        # loop below with one side, without its bookkeeping
        demand = spec.worker_demand.as_tuple()
        placed: dict[int, int] = {}
        if not grow(
            placed, num_workers, free, list(cluster.fits(demand)), demand, choose, one_at_a_time
        ):
            return Status.unschedulable(
                f"job {spec.job_id}: {num_workers} tasks of (gpu, cpu, mem)={demand} do not fit "
                f"({policy})"
            )
        return Allocation(tuple(sorted(placed.items())), ())
    taken: set[int] = set()  # servers whose row the workers' side changed
    sides: list[tuple[tuple[int, int], ...]] = []
    for have, want, demand in (
        (current.workers, num_workers, spec.worker_demand.as_tuple()),
        (current.ps, num_ps, spec.ps_demand.as_tuple()),
    ):
        if not have and not want:
            sides.append(())
            continue
        counts = dict(have)
        total = sum(counts.values())
        for _ in range(total - want):
            server = remove(counts)
            counts[server] -= 1
            if counts[server] == 0:
                del counts[server]
        if want > total:
            fits = list(cluster.fits(demand))
            for server in taken:
                fits[server] = tasks_that_fit(free[server], demand)
            if not grow(counts, want - total, free, fits, demand, choose, one_at_a_time):
                return Status.unschedulable(
                    f"job {spec.job_id}: {want} tasks of (gpu, cpu, mem)={demand} do not fit "
                    f"({policy})"
                )
            taken.update(counts)
        # servers once each, counts > 0: what `Allocation.of` would build, without its checks
        sides.append(tuple(sorted(counts.items())))
    return Allocation(sides[0], sides[1])
