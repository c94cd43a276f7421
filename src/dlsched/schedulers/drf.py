"""DRF as DL2 runs it (§6.2): bundles go to the job with the lowest dominant share.

Every point reallocates from scratch: all active jobs start at a share of 0 and are popped in
arrival order; each gets its first bundle if it fits, and from then on bundles go to the lowest
share. When no active job could take a second bundle (fixed-size jobs, as on Philly: minimum =
maximum workers and no PS to add), the growing phase pops each job that got its bundle once and
does nothing, so the decision is only the first pass: every active job in arrival order takes
its first bundle on a scratch copy of the cluster with every running job given back. `Drf` then
walks a `PendingQueue` kept in arrival order between points (thousands of jobs wait on a busy
Philly virtual cluster) merged with the running jobs, skipping the whole rest of a shape once a
job of that shape without PS did not fit (whether ``take`` succeeds depends only on the shape
and what is free, which only shrinks during the walk), instead of sorting and visiting every
active job: the same decision (`Drf.decide_plain` is the reference, tested equal point by point).
"""

from __future__ import annotations

import heapq
from typing import ClassVar

from dlsched.core import Arch, ClusterView, Decision, JobRun, JobSpec, Target
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.common import FreeTracker
from dlsched.schedulers.count_walk import count_walk_split
from dlsched.schedulers.ordered import _tasks_free
from dlsched.schedulers.pending_queue import Key, PendingQueue, Shape, shape_of
from dlsched.schedulers.registry import register


def next_bundle(spec: JobSpec, workers: int, ps: int) -> tuple[int, int] | None:
    """The next (workers, PS) to add to a job holding ``workers``/``ps``, or None at its caps.

    A job first gets its minimum (workers, plus one PS for PS jobs); after that one worker and,
    for PS jobs below their PS cap, one PS at a time.
    """
    if workers == 0:
        return spec.min_workers, 1 if spec.arch is Arch.PS and spec.max_ps > 0 else 0
    add_w = 1 if workers < spec.max_workers else 0
    add_p = 1 if spec.arch is Arch.PS and ps < spec.max_ps else 0
    if add_w == 0 and add_p == 0:
        return None
    return add_w, add_p


def first_bundle(run: JobRun) -> tuple[int, int]:
    """The (workers, PS) a job gets first: its minimum (`next_bundle` from nothing)."""
    bundle = next_bundle(run.spec, 0, 0)
    assert bundle is not None  # from nothing there is always a first bundle
    return bundle


def grows(run: JobRun) -> bool:
    """Whether the job could get more than its first bundle (or its first bundle holds no
    worker, which the plain path treats as holding nothing)."""
    workers, ps = first_bundle(run)
    return workers <= 0 or next_bundle(run.spec, workers, ps) is not None


def arrival_key(run: JobRun, _now_s: float) -> Key:
    """`ClusterView.jobs`' order: submission time, then job id."""
    return (run.spec.submit_time_s, run.spec.job_id)


class Drf(BaseScheduler):
    """Dominant Resource Fairness, elastic: every round, reallocate from scratch.

    Repeatedly give a worker+PS bundle to the active job with the lowest dominant share until
    nothing more fits. Ties go to the earlier arrival.

    Args:
        fast: walk the kept arrival-order queue when no active job can grow (module
            docstring); False: `decide_plain` at every point.
    """

    name = "drf"
    preemptive: ClassVar[bool] = True

    def __init__(self, fast: bool = True) -> None:
        self.fast = fast
        self.queue = PendingQueue(arrival_key, first_bundle, flag=grows)
        self._shapes: dict[int, tuple[JobSpec, Shape, bool]] = {}  # running jobs' first bundles

    def reset(self) -> None:
        self.queue.clear()
        self._shapes = {}

    def decide(self, view: ClusterView) -> Decision:
        if self.fast:
            decision = self.decide_fixed(view)
            if decision is not None:
                return decision
        return self.decide_plain(view)

    def decide_plain(self, view: ClusterView) -> Decision:
        """The rule itself: every active job reallocated from scratch through the share heap."""
        total = view.cluster.total
        tracker = FreeTracker(view.cluster, release=list(view.running))
        jobs = view.jobs()
        counts = {run.job_id: (0, 0) for run in jobs}
        heap = [(0.0, i, run.spec) for i, run in enumerate(jobs)]
        heapq.heapify(heap)
        while heap:
            _, order, spec = heapq.heappop(heap)
            workers, ps = counts[spec.job_id]
            bundle = next_bundle(spec, workers, ps)
            if bundle is None or not tracker.take(spec, *bundle):
                continue
            workers, ps = workers + bundle[0], ps + bundle[1]
            counts[spec.job_id] = (workers, ps)
            heapq.heappush(heap, (spec.demand(workers, ps).dominant_share(total), order, spec))
        return Decision.from_counts({j: c for j, c in counts.items() if c[0] > 0})

    def decide_fixed(self, view: ClusterView) -> Decision | None:
        """`decide_plain`'s decision by the first pass alone, or None where some active job
        could grow (then the plain path decides). The queue follows every point either way."""
        queue = self.queue.update(view)
        if queue.flagged:
            return None
        running = []
        shapes = self._shapes
        for run in view.running:
            known = shapes.get(run.job_id)
            if known is None or known[0] is not run.spec:
                workers, ps = first_bundle(run)
                known = shapes[run.job_id] = (
                    run.spec,
                    shape_of(run.spec, workers, ps),
                    grows(run),
                )
                queue.uniform.note(known[1])
            if known[2]:
                return None
            running.append((arrival_key(run, 0.0), run, known[1]))
        if len(shapes) > 2 * len(running) + 64:  # forget jobs no longer running
            ids = {run.job_id for run in view.running}
            self._shapes = {job: v for job, v in shapes.items() if job in ids}
        running.sort()
        tasks = _tasks_free(view, queue)
        if tasks is not None:  # one task demand, whole numbers: count instead of placing
            starting, left_out = count_walk_split(queue.lanes(), running, tasks)
            decision = Decision(changes_only=True)
            targets = decision.targets
            for run in starting:
                workers, ps = first_bundle(run)
                targets[run.job_id] = Target(workers, ps)
            for run in left_out:
                targets[run.job_id] = _SUSPEND
            return decision
        tracker = FreeTracker(view.cluster, release=view.running)
        decision = Decision()
        targets = decision.targets
        dead: set[Shape] = set()
        for run, shape in queue.candidates(dead, running):
            workers, ps = shape[2], shape[3]
            if tracker.take(run.spec, workers, ps):
                targets[run.job_id] = Target(workers, ps)
            elif ps == 0:  # no later job of this shape fits at this point
                dead.add(shape)
        return decision


_SUSPEND = Target(0, 0)


@register(
    "drf",
    setting="elastic PS (dl2); any",
    source="DL2 §6.2 (Ghodsi et al. 2011)",
    description="worker+PS bundles to the lowest dominant share, re-decided every slot",
)
def _make(_arg: str | None) -> Scheduler:
    return Drf()
