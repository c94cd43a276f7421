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

import math
from typing import ClassVar

from dlsched.core import Allocation, ClusterView, Decision, JobSpec, Target
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.common import requested, tasks_that_fit
from dlsched.schedulers.pending_queue import Shape, shape_of
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

    def decide(self, view: ClusterView) -> Decision:
        decision = Decision()
        free = view.cluster.free_array.tolist()
        candidates = list(view.pending)
        now = view.now_s
        while candidates:
            best: tuple[float, float, int] | None = None
            choice: tuple[int, Allocation] | None = None
            fitting = []
            # jobs of one shape get the same packing from the same free resources
            packed: dict[Shape, Allocation | None] = {}
            for run in candidates:
                spec = run.spec
                workers, ps = requested(spec)
                shape = shape_of(spec, workers, ps)
                if shape in packed:
                    alloc = packed[shape]
                else:
                    alloc = packed[shape] = pack_allocation(
                        [row[:] for row in free], spec, workers, ps
                    )
                if alloc is None:
                    continue
                fitting.append(run)
                speed = view.oracle_speed(run.spec, alloc)
                actual = run.remaining_work(now) / speed if speed > 0 else math.inf
                key = (actual, run.spec.submit_time_s, run.job_id)
                if best is None or key < best:
                    best, choice = key, (run.job_id, alloc)
            if choice is None:
                break
            job_id, alloc = choice
            run = next(r for r in fitting if r.job_id == job_id)
            pack_allocation(free, run.spec, alloc.num_workers, alloc.num_ps)
            decision.targets[job_id] = Target(alloc.num_workers, alloc.num_ps, alloc)
            candidates = [r for r in fitting if r.job_id != job_id]
        return decision


@register(
    "saf",
    setting="fixed-GPU (sched2, philly, trace)",
    source="SCED² §IV-A",
    description="(oracle) shortest actual time on the packing placement it would get",
)
def _make(_arg: str | None) -> Scheduler:
    return Saf()
