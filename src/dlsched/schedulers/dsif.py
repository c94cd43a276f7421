"""DSIF, Delayed Shortest Ideal time job First (SCED²'s baseline).

Rule: as SIF — pending jobs in order of ideal execution time (``total_work`` seconds at the best
placement), then arrival, each started at its requested size if it fits — except that a job that
fits but could not get its best locality now is delayed (skipped at this scheduling point), at
most `MAX_DELAYS` = 3 times; at the fourth such occasion it starts with the locality it can get.

Locality is the number of servers the job's GPUs would span. Its best is the fewest servers an
empty cluster would need (``ceil(GPUs / GPUs per server)`` on identical servers); what it can get
now is the fewest servers that the free resources allow, filling the servers with most room
first — which is what packing placement (SCED² Fig. 2) achieves. A job that does not fit at all
just waits, without counting a delay. Non-preemptive and otherwise work-conserving. The queue is
kept sorted between points (`PendingQueue`), and the jobs of a shape that no longer fits are
skipped together.

Source: Luan et al., SCED² §IV-A baselines ("if the selected job could not get the best
locality, it will delay the job for at most 3 times").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from dlsched.core import ClusterView, Decision, JobSpec
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.common import FreeTracker, requested, tasks_that_fit
from dlsched.schedulers.ordered import requested_size
from dlsched.schedulers.pending_queue import PendingQueue, Shape
from dlsched.schedulers.registry import register
from dlsched.schedulers.sjf import duration_key_at

MAX_DELAYS = 3


def servers_needed(free: Sequence[Sequence[float]], spec: JobSpec, num_workers: int) -> int | None:
    """Fewest servers that can hold ``num_workers`` workers of ``spec`` given ``free``.

    Args:
        free: per server, free (gpu, cpu, mem).
        spec: the job (its worker demand).
        num_workers: workers to place.

    Returns:
        The count, filling the roomiest servers first; None if they do not fit at all.
    """
    if num_workers <= 0:
        return 0
    need = spec.worker_demand.as_tuple()
    room = sorted((tasks_that_fit(list(row), need) for row in free), reverse=True)
    placed = 0
    for used, n in enumerate(room, start=1):
        placed += n
        if placed >= num_workers:
            return used
    return None


class Dsif(BaseScheduler):
    """SIF that delays a job up to `MAX_DELAYS` times for its best locality.

    Args:
        max_delays: scheduling points a job may be passed over for locality.
    """

    name = "dsif"
    preemptive: ClassVar[bool] = False

    def __init__(self, max_delays: int = MAX_DELAYS) -> None:
        self.max_delays = max_delays
        self.delays: dict[int, int] = {}
        # kept sorted between points instead of sorting the queue at each
        self.queue = PendingQueue(duration_key_at, requested_size)

    def reset(self) -> None:
        self.delays = {}
        self.queue.clear()

    def decide(self, view: ClusterView) -> Decision:
        decision = Decision()
        if not view.pending:
            return decision
        capacity = view.cluster.capacity_array.tolist()
        tracker = FreeTracker(view.cluster)
        # per shape: servers its workers need on an empty cluster and, until the next start,
        # now (both depend on nothing else); a shape that fits nowhere or failed is dead
        best_of: dict[Shape, int | None] = {}
        now_of: dict[Shape, int | None] = {}
        dead: set[Shape] = set()
        for run, shape in self.queue.update(view).candidates(dead):
            spec = run.spec
            workers, ps = requested(spec)
            if shape not in now_of:
                now_of[shape] = servers_needed(tracker.free, spec, workers)
            now = now_of[shape]
            if now is None:
                dead.add(shape)  # does not fit: waits, no delay counted (nor after it)
                continue
            if shape not in best_of:
                best_of[shape] = servers_needed(capacity, spec, workers)
            best = best_of[shape]
            delayed = self.delays.get(run.job_id, 0)
            if best is not None and now > best and delayed < self.max_delays:
                self.delays[run.job_id] = delayed + 1
                continue
            if tracker.take(spec, workers, ps):
                decision.set(run.job_id, workers, ps)
                self.delays.pop(run.job_id, None)
                now_of.clear()
            elif ps == 0:
                dead.add(shape)
        return decision


@register(
    "dsif",
    setting="fixed-GPU (sched2, philly, trace)",
    source="SCED² §IV-A",
    description="SIF, delaying a job up to 3 times until it can get its best locality",
)
def _make(_arg: str | None) -> Scheduler:
    return Dsif()
