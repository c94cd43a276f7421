"""The `ClusterView` a scheduler gets on Kubernetes: the simulator's, built from the API.

Servers are the Ready nodes, sorted by name, with their allocatable GPUs, cores and GiB less
what other pods bound there take (`dlsched.k8s.pods.other_usage`). A cordoned node keeps the
jobs running on it (Kubernetes' meaning of cordon: no new pods) and offers exactly what they
hold, so nothing new is placed there. A job holds what the controller granted it
(``spec.workers``/``spec.ps`` and the placement annotation) when that grant still fits the
books: every node it names is Ready and the `Cluster` accepts it. A job whose grant cannot be
accounted for (a node lost or NotReady, allocatable shrunk, counts and annotation disagreeing,
no annotation) is *stale*: the controller scales it to zero before deciding, so the books and
the cluster agree. Progress and speed are
what the job reports in its status, never estimated here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from dlsched.core import Allocation, Cluster, ClusterView, JobRun, Resources, Server, Status
from dlsched.k8s.objects import NodeInfo, TrainingJob

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ClusterState:
    """One round's picture of the cluster.

    Attributes:
        view: what the scheduler reads; None when no node is usable (nothing can be decided,
            stale grants are still reclaimed).
        nodes: server id → node.
        cordoned: names of the nodes among them that take no new tasks.
        jobs: job id → job (DLJob or PyTorchJob), every active (not finished) job.
        stale: active jobs holding replicas the books cannot account for, with the reason.
    """

    view: ClusterView | None
    nodes: list[NodeInfo]
    jobs: dict[int, TrainingJob]
    stale: list[tuple[TrainingJob, str]] = field(default_factory=list)
    cordoned: frozenset[str] = frozenset()

    @property
    def cluster(self) -> Cluster:
        if self.view is None:
            raise ValueError("no node is usable: the state has no cluster")
        return self.view.cluster

    def node_ids(self) -> dict[str, int]:
        return {node.name: i for i, node in enumerate(self.nodes)}


def placement_to_allocation(
    placement: dict[str, dict[str, int]], node_ids: dict[str, int]
) -> Allocation | str:
    """The annotation's per-node counts as server ids, or why they name an unusable node."""
    pairs: dict[str, list[tuple[int, int]]] = {"workers": [], "ps": []}
    for role, counts in placement.items():
        for node, n in counts.items():
            if n <= 0:
                continue
            server = node_ids.get(node)
            if server is None:
                return f"node {node} is gone or NotReady"
            pairs[role].append((server, n))
    return Allocation.of(pairs["workers"], pairs["ps"])


def allocation_to_placement(alloc: Allocation, nodes: list[NodeInfo]) -> dict[str, dict[str, int]]:
    """Server ids back to node names, the annotation's form."""
    return {
        "workers": {nodes[s].name: n for s, n in alloc.workers},
        "ps": {nodes[s].name: n for s, n in alloc.ps},
    }


def _refresh(run: JobRun, job: TrainingJob, now_s: float) -> None:
    """Bring ``run`` up to what ``job`` reports."""
    run.progress_s = min(job.progress, job.spec.total_work)
    run.progress_time_s = job.progress_time_s if job.progress_time_s is not None else now_s
    run.first_start_s = job.start_time_s
    run.rate = job.speed if run.running else 0.0
    if run.running and job.speed > 0:
        alloc = run.allocation
        run.observed.append((alloc.num_ps, alloc.num_workers, job.speed))


def build_state(
    nodes: Iterable[NodeInfo],
    jobs: Iterable[TrainingJob],
    runs: dict[int, JobRun],
    *,
    now_s: float,
    interval_s: float | None,
    last_status: dict[int, Status],
    other: dict[str, Resources] | None = None,
) -> ClusterState:
    """This round's `ClusterState`; with no Ready node it has no view, and every active job
    holding replicas is stale (its nodes are all gone or NotReady). ``other``: node name →
    what pods outside the books take there.

    ``runs`` (job id → `JobRun`) keeps what the controller learned across rounds (observed
    speeds); it is updated in place: new jobs added, finished and deleted ones dropped.
    """
    usable = sorted((n for n in nodes if n.ready), key=lambda n: n.name)
    active = sorted((j for j in jobs if not j.done), key=lambda j: (j.spec.submit_time_s, j.name))
    for gone in set(runs) - {j.spec.job_id for j in active}:
        del runs[gone]
    if not usable:
        state = ClusterState(None, [], {j.spec.job_id: j for j in active})
        state.stale = [(j, "no node is Ready") for j in active if j.workers or j.ps]
        return state
    node_ids = {n.name: i for i, n in enumerate(usable)}
    capacity = [_less(n.capacity, (other or {}).get(n.name)) for n in usable]
    cordoned = frozenset(n.name for n in usable if not n.schedulable)
    if cordoned:  # what running jobs hold there is all a cordoned node offers
        probe = Cluster([Server(i, c) for i, c in enumerate(capacity)])
        for job in active:
            _account(job, probe, node_ids)
        free = probe.free_rows()
        for i, n in enumerate(usable):
            if n.name in cordoned:
                capacity[i] = _less(capacity[i], Resources(*free[i]))
    cluster = Cluster([Server(i, c) for i, c in enumerate(capacity)])
    state = ClusterState(
        ClusterView(now_s, cluster, [], [], interval_s, dict(last_status)),
        usable,
        {},
        cordoned=cordoned,
    )
    pending: list[JobRun] = []
    running: list[JobRun] = []
    for job in active:
        job_id = job.spec.job_id
        if job_id in state.jobs:  # two UIDs sharing their first 48 bits: never seen, but cheap
            first = state.jobs[job_id]
            log.error("skipping %s %s: job id %d taken by %s", job.kind, job.key, job_id, first.key)
            continue
        state.jobs[job_id] = job
        run = runs.get(job_id)
        if run is None or run.spec != job.spec:
            run = runs[job_id] = JobRun(job.spec)
        run.allocation = Allocation.EMPTY
        why = _account(job, cluster, node_ids)
        if isinstance(why, Allocation):
            run.allocation = why
        elif why:
            state.stale.append((job, why))
        _refresh(run, job, now_s)
        (running if run.running else pending).append(run)
    state.view = ClusterView(now_s, cluster, pending, tuple(running), interval_s, dict(last_status))
    return state


def _less(have: Resources, taken: Resources | None) -> Resources:
    """``have`` less ``taken``, never below zero."""
    if taken is None:
        return have
    pairs = zip(have.as_tuple(), taken.as_tuple(), strict=True)
    return Resources(*(max(0.0, a - b) for a, b in pairs))


def _account(job: TrainingJob, cluster: Cluster, node_ids: dict[str, int]) -> Allocation | str:
    """Take ``job``'s grant in ``cluster``: the allocation, ``""`` if it holds nothing, or why
    the grant cannot be accounted for."""
    if job.workers == 0 and job.ps == 0:
        return ""
    if job.placement is None:
        return f"holds {job.workers} workers and {job.ps} PS with no placement annotation"
    alloc = placement_to_allocation(job.placement, node_ids)
    if isinstance(alloc, str):
        return alloc
    if alloc.num_workers != job.workers or alloc.num_ps != job.ps:
        return (
            f"spec has {job.workers} workers and {job.ps} PS, its placement "
            f"{alloc.num_workers} and {alloc.num_ps}"
        )
    status = cluster.allocate(job.spec, alloc)
    if not status.ok:
        return f"its grant no longer fits: {status.reason}"
    return alloc
