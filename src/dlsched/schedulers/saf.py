"""SAF, Shortest Actual time job First (SCED²'s baseline) — an ORACLE.

Rule: at every scheduling point, for each pending job that fits, work out the placement it
would get now by packing (SCED² Fig. 2: the tightest server that takes all its GPUs, else the
roomiest server and repeat) and its actual execution time there — remaining work over its true
speed on that placement, from ``view.oracle_speed``, which a real scheduler cannot know (SCED²:
"we assume there is an oracle that can tell the scheduler what placement each job will be
assigned and the corresponding mini-batch time"). Start the job with the shortest actual time
on exactly that placement, then repeat with what is left until no pending job fits.
Non-preemptive, work-conserving. The placement is always packing, whatever ``--placement``
says, because it is part of what the oracle answers.

Source: Luan et al., SCED² §IV-A baselines.
"""

from __future__ import annotations

import heapq
import math
from typing import ClassVar

from dlsched.core import Allocation, ClusterView, Decision, JobRun, JobSpec, Target
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.common import tasks_that_fit
from dlsched.schedulers.ordered import requested_size
from dlsched.schedulers.pending_queue import PendingQueue, Shape
from dlsched.schedulers.registry import register


def pack_tasks(
    free: list[list[float]], need: tuple[float, float, float], count: int
) -> list[tuple[int, int]] | None:
    """Packing placement of ``count`` tasks (SCED² Fig. 2); takes them from ``free`` in place.

    Returns:
        ``(server, tasks)`` pairs, or None (and ``free`` unchanged) if they do not fit.
    """
    trial = [row[:] for row in free]
    placed: list[tuple[int, int]] = []
    left = count
    while left > 0:
        room = [tasks_that_fit(row, need) for row in trial]
        whole = [s for s, n in enumerate(room) if n >= left]
        if whole:
            server = min(whole, key=lambda s: (room[s], s))
        else:
            server = max(range(len(room)), key=lambda s: (room[s], -s))
            if room[server] <= 0:
                return None
        n = min(left, room[server])
        for r in range(3):
            trial[server][r] -= need[r] * n
        placed.append((server, n))
        left -= n
    free[:] = trial
    return placed


def pack_allocation(
    free: list[list[float]], spec: JobSpec, num_workers: int, num_ps: int
) -> Allocation | None:
    """Packing placement of a job's workers then PS, taken from ``free``; None if no fit."""
    trial = [row[:] for row in free]
    workers = pack_tasks(trial, spec.worker_demand.as_tuple(), num_workers)
    ps = pack_tasks(trial, spec.ps_demand.as_tuple(), num_ps) if workers is not None else None
    if workers is None or ps is None:
        return None
    free[:] = trial
    return Allocation.of(workers, ps)


class Saf(BaseScheduler):
    """ORACLE: shortest actual execution time (true speed on its packing placement) first."""

    name = "saf"
    preemptive: ClassVar[bool] = False
    is_oracle: ClassVar[bool] = True

    def __init__(self) -> None:
        # waiting jobs grouped by shape between points (jobs of one shape get one packing)
        self.queue = PendingQueue(arrival_key, requested_size)

    def reset(self) -> None:
        self.queue.clear()

    def decide(self, view: ClusterView) -> Decision:
        """Pick, again and again, the fitting job with the shortest actual time (module
        docstring). Jobs of one shape get the same packing from the same free resources, so
        each shape is packed once a pick; a shape that does not fit is dropped for the rest of
        the point, as each of its jobs was before; and a shape's jobs are ranked once for as
        long as its packing stays the same (the job picked is then the next in that ranking).
        """
        decision = Decision()
        free = view.cluster.free_array.tolist()
        now = view.now_s
        groups = self.queue.update(view).by_shape()
        # per shape: the packing its jobs were ranked for, and (key, job) of those not picked
        ranked: dict[Shape, tuple[Allocation, list[tuple[_Key, JobRun]]]] = {}
        while groups:
            best: tuple[_Key, JobRun, Allocation, Shape] | None = None
            fitting = []
            for shape, runs in groups:
                alloc = pack_allocation([row[:] for row in free], runs[0].spec, shape[2], shape[3])
                if alloc is None:
                    continue
                fitting.append((shape, runs))
                kept = ranked.get(shape)
                if kept is None or kept[0] != alloc:
                    order = [(self._key(run, alloc, view, now), run) for run in runs]
                    heapq.heapify(order)
                    kept = ranked[shape] = (alloc, order)
                key, run = kept[1][0]
                if best is None or key < best[0]:
                    best = (key, run, alloc, shape)
            if best is None:
                break
            _, run, alloc, shape = best
            heapq.heappop(ranked[shape][1])
            pack_allocation(free, run.spec, alloc.num_workers, alloc.num_ps)
            decision.targets[run.job_id] = Target(alloc.num_workers, alloc.num_ps, alloc)
            groups = []
            for shape_, runs in fitting:
                if shape_ == shape:
                    runs = [r for r in runs if r is not run]
                if runs:
                    groups.append((shape_, runs))
        return decision

    @staticmethod
    def _key(run: JobRun, alloc: Allocation, view: ClusterView, now: float) -> _Key:
        """Actual time on ``alloc`` (true speed), then arrival."""
        speed = view.oracle_speed(run.spec, alloc)
        actual = run.remaining_work(now) / speed if speed > 0 else math.inf
        return (actual, run.spec.submit_time_s, run.job_id)


_Key = tuple[float, float, int]


def arrival_key(run: JobRun, _now_s: float) -> tuple[float, int]:
    """Arrival order (the groups' order does not matter: keys end with the job id)."""
    return (run.spec.submit_time_s, run.job_id)


@register(
    "saf",
    setting="fixed-GPU (sched2, philly, trace)",
    source="SCED² §IV-A",
    description="(oracle) shortest actual time on the packing placement it would get",
)
def _make(_arg: str | None) -> Scheduler:
    return Saf()
