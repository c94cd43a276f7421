"""Kubeflow dynamic scheduler: priority queue, gang scheduling, scale-down and scale-up (seed 003).

The seed describes a DRAGON/OASiS-inspired controller replacing Kubeflow's tf-operator. Every
scheduling point (job arrival or completion) this scheduler runs its scheduling loop on a
scratch copy of the nodes' free resources:

1. **Priority queue (weighting algorithm).** Waiting jobs are ordered by utility
   (``JobSpec.priority``, larger first), then by their CPU + memory request (larger first),
   then by arrival.
2. **Admission with gang scheduling.** In queue order, each waiting job is admitted with the
   replicas its spec asks for (``num_workers``) if all of them can be placed: on one node if
   one node holds them all, otherwise first-fit across nodes in node order; all or none.
3. **Scale-down.** A waiting job that does not fit may take replicas from running jobs of
   strictly lower utility — lowest priority first, node by node, one replica at a time, never
   below a job's minimum replicas (``min_workers``) — until its gang fits. If it still does not
   fit when every lower-priority job is at its minimum, the scale-down fails and nothing is
   taken from anyone.
4. **Scale-up.** Then every running job, highest priority first, gets more replicas one at a
   time, first-fit in node order, while they fit and it is below its maximum replicas
   (``max_workers``). Jobs scaled down in this round are not scaled back up in it.

The decision lists only the jobs it admits or resizes (`Decision.changes_only`), each with an
explicit placement; the other running jobs keep theirs, so replicas never move: scale-down
removes replicas, scale-up and admission add them.

Where the seed's pseudo-code is wrong, this is what we implement instead:

Weighting algorithm
    * Lines 11–12 define ``F`` as the jobs "so that U > u" and ``f`` as those "so that U <= u":
      comparing the new job's utility ``U`` with each queued ``u`` this way puts the *lower*
      priority jobs in front, and drops the CPU + memory tie-break of line 10. Intended (and
      implemented): ``F`` = the jobs before the first queued job that ``J`` outranks, ``f`` =
      that job and the rest.
    * Lines 13–15 append ``F``, ``J`` and ``f`` to ``Q``, which already holds ``F`` and ``f``,
      duplicating every job. Intended: the new queue is ``F + [J] + f``. We keep the queue
      sorted by (utility, CPU + memory) descending, which is what the insertion builds.
    * Line 5 adds CPU cores to memory (GB), so memory decides alone. We add the request's
      *shares* of the cluster's CPU and memory, so both count.

Gang scheduling
    * Lines 9–10 subtract a pod's request from the node only when it does *not* fit (the
      subtraction is inside the ``if``; its ``end if`` belongs before it). Intended: reserve
      the pod when it fits.
    * ``stop`` (line 8, 12) breaks out of the node loop at the first node that cannot hold all
      pods, so later nodes are never tried, and ``oneNodeOk`` (line 14) then describes only
      the last node looked at. Intended: look for any node that holds every pod; if there is
      one, bind them all there, else bind them first-fit "in the first available node(s)" —
      all of them or none.

ScaleDown
    * It loops over every running job (line 1), including ones of higher priority than ``J``.
      Intended, as its description says: only lower-priority jobs, lowest first.
    * Lines 15–17 copy node ``n``'s resources into ``res`` and add ``q``'s request to the copy,
      so nothing is ever freed, and they do so on every node whether ``q`` has a replica there
      or not. Intended: remove one of ``q``'s replicas from a node where it runs, on the
      scratch state that the fit check reads.
    * Line 7 checks whether ``J`` fits in one node ``n``; line 22 uses ``n`` after its loop has
      ended. Intended: after each removal, check whether ``J``'s whole gang fits in the
      cluster (by the gang rule above).
    * ``stop`` (lines 5, 12, 19) is tested after the ``break`` that already left the loop; the
      misplaced ``end for`` makes line 19 dead. Intended: move on to the next job once ``q``
      is at its minimum (``i >= maxDeleteCount``).
    * ``S`` is never set to False, so the failure return is undefined. Intended: False.
    * The pseudo-code commits removals even when ``J`` still cannot be admitted. We take them
      only if the scale-down succeeds (the seed's outcome 2, "failed scale-down", leaves the
      lower-priority jobs as they were).

ScaleUp
    * The subtraction and the "initialize one new worker" (lines 15–17) sit after the replica
      loop's ``end for`` (line 14), so at most one replica is added per job whatever
      ``maxScaleUpNum`` says, and its resources are subtracted even when it did not fit.
      Intended: each replica that fits is reserved and added, up to ``maxScaleUpNum``.
    * ``stop`` is never initialised and, once set by one job's replica, stops scaling for every
      node; ``if S do break`` stops after the first node, and ``return S`` (line 22) sits
      inside the node loop. Intended: every running job, in priority order, is scaled up as far
      as free resources and its maximum allow; the function returns whether anything grew.

Scheduling loop
    * ``h`` is only defined when line 5's test passes, yet line 17 reads it. Intended: ``h``
      is nil unless set.
    * The ``end if`` of line 10 is misplaced: ScaleDown (line 11) runs even after ``h`` was
      admitted, and ``h`` is not admitted after a successful scale-down. Intended: ``if h can
      be scheduled: admit h; else: if ScaleDown(h) succeeds: admit h``.
    * Line 5 compares the best waiting utility with the *best* running one, so a scale-down is
      never tried while any running job ranks at least as high as ``h``, even if others rank
      lower. We try it whenever some running job has strictly lower utility than the waiting
      job (only those are scaled down).
    * Lines 17–23 admit at most one more job and ``return`` before ScaleUp (line 26) runs, and
      skip the other waiting jobs when ``h`` was admitted without a scale-down. Intended: go
      through the whole waiting queue in priority order, admitting (with a scale-down where
      needed) every job that can be, then scale up.

Source: "Dynamic Resource Scheduler for Distributed Deep Learning Training on Kubeflow"
(seed 003), after DRAGON (Lin et al.) and OASiS (Bao et al.).
"""

from __future__ import annotations

from typing import ClassVar

from dlsched.core import Allocation, ClusterView, Decision, JobRun, JobSpec, Resources, Target
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.common import RoomCounts, tasks_that_fit
from dlsched.schedulers.ordered import requested_size
from dlsched.schedulers.pending_queue import PendingQueue, Shape
from dlsched.schedulers.registry import register

_EPS = 1e-9
_DEFAULT_UTILITY = 0.0
"""`JobSpec.priority` of workloads without utilities (Philly, trace replays)."""

Free = list[list[float]]
Placement = dict[int, int]
"""node id → replicas of one job on it."""


def request_share(spec: JobSpec, total: Resources) -> float:
    """CPU share + memory share of the cluster that the job's requested replicas take."""
    demand = spec.demand(spec.num_workers)
    cpu = demand.cpu / total.cpu if total.cpu > 0 else 0.0
    mem = demand.mem / total.mem if total.mem > 0 else 0.0
    return cpu + mem


def priority_key(run: JobRun, total: Resources) -> tuple[float, float, float, int]:
    """Sort key of the weighting algorithm: utility, then CPU + memory share, both descending."""
    spec = run.spec
    return (-spec.priority, -request_share(spec, total), spec.submit_time_s, run.job_id)


def _take(free: Free, node: int, need: tuple[float, float, float], n: int) -> None:
    row = free[node]
    for r in range(3):
        row[r] -= need[r] * n


def gang_fit(
    free: Free, spec: JobSpec, replicas: int, rooms: list[int] | None = None
) -> Placement | None:
    """Where ``replicas`` replicas of ``spec`` go (seed's gang rule, corrected); None if not all.

    One node if a node holds them all (the first such node), else first-fit across nodes in
    node order. ``free`` is not changed. ``rooms``: each node's count of ``spec``'s replicas
    in ``free``, if the caller has them (not changed); None: counted here.
    """
    if rooms is None:
        need = spec.worker_demand.as_tuple()
        rooms = [tasks_that_fit(row, need) for row in free]
    for node, room in enumerate(rooms):
        if room >= replicas:
            return {node: replicas}
    placement: Placement = {}
    left = replicas
    for node, room in enumerate(rooms):
        if room > 0 and left > 0:
            placement[node] = min(room, left)
            left -= placement[node]
    return placement if left == 0 else None


class KubeflowDynamic(BaseScheduler):
    """The seed's dynamic scheduler, its pseudo-code's intent (module docstring)."""

    name = "kubeflow-dynamic"
    preemptive: ClassVar[bool] = True

    def __init__(self) -> None:
        # waiting jobs kept in queue order between points; used while no scale-down can
        # happen (flag: the waiting jobs with a utility other than the default)
        self.queue = PendingQueue(self._key, requested_size, flag=_has_utility)
        self._total: Resources | None = None
        self._keys: dict[int, tuple[float, float, float, int]] = {}

    def reset(self) -> None:
        self.queue.clear()
        self._total = None
        self._keys = {}

    def _key(self, run: JobRun, _now_s: float) -> tuple[float, float, float, int]:
        """`priority_key` for the cluster of the last `decide` (it never changes for a job)."""
        key = self._keys.get(run.job_id)
        if key is None:
            assert self._total is not None
            key = self._keys[run.job_id] = priority_key(run, self._total)
        return key

    def decide(self, view: ClusterView) -> Decision:
        total = view.cluster.total
        if total != self._total:  # keys depend on the cluster's size
            self.reset()
            self._total = total
        queue = self.queue.update(view)
        free: Free = view.cluster.free_array.tolist()
        # the placements of the jobs admitted or resized at this point (`_placement`: the
        # others hold their allocation's)
        placements: dict[int, Placement] = {}
        by_id = {run.job_id: run for run in view.running}
        changed: list[int] = []
        scaled_down: set[int] = set()
        if not queue.flagged and all(r.spec.priority >= _DEFAULT_UTILITY for r in view.running):
            # No job can be scaled down for a waiting one (none has a lower utility), so the
            # free resources only shrink: once a job's gang does not fit, none of its shape
            # will (first-fit across nodes fails only when the nodes' room adds up to less).
            dead: set[Shape] = set()
            rooms = RoomCounts(free)
            for run, shape in queue.candidates(dead):
                spec = run.spec
                need = spec.worker_demand.as_tuple()
                gang = gang_fit(free, spec, spec.num_workers, rooms.of(need))
                if gang is None:
                    dead.add(shape)
                    continue
                self._admit(free, placements, by_id, changed, run, gang)
                rooms.recount(gang)
        else:
            for run in sorted(view.pending, key=lambda r: self._key(r, 0.0)):
                spec = run.spec
                gang = gang_fit(free, spec, spec.num_workers)
                if gang is None:
                    gang = self._scale_down(
                        free, placements, by_id, run, total, changed, scaled_down
                    )
                if gang is None:
                    continue
                self._admit(free, placements, by_id, changed, run, gang)
        self._scale_up(free, placements, by_id, total, changed, scaled_down)
        return self._decision(placements, changed)

    @staticmethod
    def _admit(
        free: Free,
        placements: dict[int, Placement],
        by_id: dict[int, JobRun],
        changed: list[int],
        run: JobRun,
        gang: Placement,
    ) -> None:
        need = run.spec.worker_demand.as_tuple()
        for node, n in gang.items():
            _take(free, node, need, n)
        placements[run.job_id] = dict(gang)
        by_id[run.job_id] = run
        changed.append(run.job_id)

    def _scale_down(
        self,
        free: Free,
        placements: dict[int, Placement],
        by_id: dict[int, JobRun],
        run: JobRun,
        total: Resources,
        changed: list[int],
        scaled_down: set[int],
    ) -> Placement | None:
        """Take replicas from lower-utility jobs until ``run``'s gang fits; commit only then."""
        utility = run.spec.priority
        victims = sorted(
            (r for r in by_id.values() if r.spec.priority < utility),
            key=lambda r: priority_key(r, total),
            reverse=True,
        )
        trial_free = [row[:] for row in free]
        trial = {r.job_id: dict(_placement(placements, r)) for r in victims}
        for victim in victims:
            spec = victim.spec
            where = trial[victim.job_id]
            need = spec.worker_demand.as_tuple()
            for node in sorted(where):
                while where.get(node, 0) > 0 and sum(where.values()) > spec.min_workers:
                    where[node] -= 1
                    if where[node] == 0:
                        del where[node]
                    _take(trial_free, node, need, -1)
                    gang = gang_fit(trial_free, run.spec, run.spec.num_workers)
                    if gang is not None:
                        free[:] = trial_free
                        for job_id, placement in trial.items():
                            if placement != _placement(placements, by_id[job_id]):
                                placements[job_id] = placement
                                changed.append(job_id)
                                scaled_down.add(job_id)
                        return gang
        return None

    def _scale_up(
        self,
        free: Free,
        placements: dict[int, Placement],
        by_id: dict[int, JobRun],
        total: Resources,
        changed: list[int],
        scaled_down: set[int],
    ) -> None:
        """Add replicas to running jobs, highest priority first, up to their maximum (only
        the jobs below it are visited: the others cannot grow)."""
        growable = [
            run
            for run in by_id.values()
            if run.spec.max_workers > _replicas(placements, run) and run.job_id not in scaled_down
        ]
        for run in sorted(growable, key=lambda r: self._key(r, 0.0)):
            spec = run.spec
            where = placements[run.job_id] = _placement(placements, run)
            need = spec.worker_demand.as_tuple()
            grown = False
            while sum(where.values()) < spec.max_workers:
                fits = (i for i, row in enumerate(free) if tasks_that_fit(row, need) > 0)
                node = next(fits, None)
                if node is None:
                    break
                _take(free, node, need, 1)
                where[node] = where.get(node, 0) + 1
                grown = True
            if grown and run.job_id not in changed:
                changed.append(run.job_id)

    @staticmethod
    def _decision(placements: dict[int, Placement], changed: list[int]) -> Decision:
        """Only what changes (`Decision.changes_only`): the running jobs not listed keep what
        they hold, as the whole-state decision that listed them at their counts did."""
        decision = Decision(changes_only=True)
        for job_id in changed:
            if job_id in decision.targets:
                continue
            alloc = Allocation.of(placements[job_id].items())
            decision.targets[job_id] = Target(alloc.num_workers, 0, alloc)
        return decision


def _placement(placements: dict[int, Placement], run: JobRun) -> Placement:
    """``run``'s placement at this point so far (its allocation's if not changed yet)."""
    placement = placements.get(run.job_id)
    return dict(run.allocation.workers) if placement is None else placement


def _replicas(placements: dict[int, Placement], run: JobRun) -> int:
    """``run``'s replicas at this point so far."""
    placement = placements.get(run.job_id)
    return run.allocation.num_workers if placement is None else sum(placement.values())


def _has_utility(run: JobRun) -> bool:
    return run.spec.priority != _DEFAULT_UTILITY


@register(
    "kubeflow-dynamic",
    setting="replica (kubeflow)",
    source="Kubeflow dynamic scheduler (seed 003)",
    description="utility priority queue, gang, scale-down to min / scale-up to max replicas",
)
def _make(_arg: str | None) -> Scheduler:
    return KubeflowDynamic()
