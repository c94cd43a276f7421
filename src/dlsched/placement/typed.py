"""Placing jobs chosen to run on GPU types of a heterogeneous cluster (Gavel's round mechanism,
`dlsched.papers.gavel.rounds`, and the learned `hetero-score`, `dlsched.papers.hetero`).

A round-based policy says which jobs run and on which GPU type; `place_on_types` gives them
servers: a job keeps its servers where it ran on the same type with its full size (no placement:
the executor keeps what it gave), others get servers of their type (one server if one fits
them, else the emptiest first). Jobs are placed in an order the executor can apply (jobs moving
between servers first, each on room free at its turn, then jobs starting), so no target fails
for want of room another target would free; a job that finds no room is left out this round.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dlsched.core import Allocation, Arch, ClusterView, Decision, JobRun, JobSpec, Target
from dlsched.core.cluster import _EPS, _UNBOUNDED


def not_fixed_gpu_jobs(name: str, jobs: Sequence[JobSpec]) -> str | None:
    """Why ``name``, placing fixed-size GPU jobs on types, cannot run ``jobs`` (None: it can):
    a job with parameter servers or without a GPU (a scheduler's ``cannot_run``)."""
    for spec in jobs:
        if spec.arch is Arch.PS or spec.worker_demand.gpu <= 0:
            return f"{name} schedules fixed-size GPU jobs; job {spec.job_id} " + (
                "has parameter servers" if spec.arch is Arch.PS else "uses no GPU"
            )
    return None


def place_on_types(
    view: ClusterView, server_types: Sequence[str], chosen: list[tuple[JobRun, str]]
) -> Decision:
    """Servers for the chosen jobs, in an order the executor applies without conflicts."""
    cluster = view.cluster
    chosen_ids = {run.job_id for run, _ in chosen}
    # what is held once the jobs not chosen are suspended (the executor does that first)
    used = [[0.0, 0.0, 0.0] for _ in range(cluster.num_servers)]
    for run in view.running:
        if run.job_id in chosen_ids:
            _add(used, run.spec, run.allocation, 1.0)
    cap = cluster.capacity_rows
    servers_of: dict[str, list[int]] = {}
    for s, t in enumerate(server_types):
        servers_of.setdefault(t, []).append(s)
    targets: dict[int, Target] = {}
    movers: list[tuple[JobRun, str]] = []
    starters: list[tuple[JobRun, str]] = []
    for run, t in sorted(chosen, key=lambda c: -scale_of(c[0].spec)):
        alloc = run.allocation
        same_type = all(server_types[s] == t for s, _ in alloc.workers)
        if alloc.workers and same_type and alloc.num_workers == scale_of(run.spec):
            # no placement: the executor keeps what it gave without checking it again
            targets[run.job_id] = Target(alloc.num_workers, alloc.num_ps)
            continue
        (movers if alloc.workers else starters).append((run, t))
    fits = Fits(server_types, servers_of, cap, used)
    pending = movers
    while pending:  # a mover goes where there is room now; its old room frees up after
        later = []
        for run, t in pending:
            new = fits.fit(run.spec, t)
            if new is None:
                later.append((run, t))
                continue
            fits.take(run.spec, run.allocation, -1.0)
            fits.take(run.spec, new, 1.0)
            targets[run.job_id] = Target(new.num_workers, new.num_ps, new)
        if len(later) == len(pending):
            break  # left out this round (suspended)
        pending = later
    for run, t in starters:
        new = fits.fit(run.spec, t)
        if new is not None:
            fits.take(run.spec, new, 1.0)
            targets[run.job_id] = Target(new.num_workers, new.num_ps, new)
    return Decision(targets)


def place_changes(
    view: ClusterView, server_types: Sequence[str], chosen: list[tuple[JobRun, str]]
) -> Decision | None:
    """`place_on_types`' decision stated as changes only, where that is provably the same;
    None elsewhere (then call `place_on_types`).

    Where every capacity and every amount ever held is a whole number
    (`Cluster.whole_usage`), what the chosen running jobs hold is the cluster's usage less what
    the other running jobs hold: sums of whole numbers, exact in any order, so the same floats
    as `place_on_types` sums job by job. A chosen job that keeps its servers is not listed (the
    executor skips it in a whole-state decision too), the moves and starts are listed in
    `place_on_types`' order and with its placements, and every running job left without a
    place is listed as ``Target(0, 0)`` (the executor suspends those first, in running order,
    either way). The executor then makes the same changes in the same order, and the round
    costs what changes, not every running job (a round of Gavel's keeps most of them)."""
    cluster = view.cluster
    if not cluster.whole_usage():
        return None
    placed: set[int] = set()  # chosen running jobs: kept or moving
    movers: list[_Item] = []
    starters: list[_Item] = []
    for run, t in chosen:
        alloc = run.allocation
        if alloc.ps:
            return None
        want = run.spec.num_workers  # `scale_of` inlined (every chosen job, every round)
        if want < 1:
            want = 1
        workers = alloc.workers
        if not workers:
            starters.append((-want, run, t, (t, run.spec.worker_demand.as_tuple(), want)))
            continue
        placed.add(run.job_id)
        if alloc.num_workers != want or (
            server_types[workers[0][0]] != t
            if len(workers) == 1
            else any(server_types[s] != t for s, _ in workers)
        ):
            movers.append((-want, run, t, (t, run.spec.worker_demand.as_tuple(), want)))
    suspended = [run for run in view.running if run.job_id not in placed]
    targets: dict[int, Target] = {}
    if movers or starters:
        movers.sort(key=_first)  # stable: `place_on_types`' order by size
        starters.sort(key=_first)
        cap = cluster.capacity_rows
        used = [
            [c[0] - f[0], c[1] - f[1], c[2] - f[2]]
            for c, f in zip(cap, cluster.free_rows(), strict=True)
        ]
        fits = Fits(server_types, _servers_of(server_types), cap, used)
        for run in suspended:
            fits.take(run.spec, run.allocation, -1.0)
        _fit_in_order(fits, movers, starters, targets)
    suspend = Target(0, 0)
    for run in suspended:
        targets[run.job_id] = suspend
    for _, run, _, _ in movers:  # a mover that found no room is left out this round
        if run.job_id not in targets:
            targets[run.job_id] = suspend
    return Decision(targets, changes_only=True)


_Item = tuple[int, JobRun, str, tuple[str, tuple[float, float, float], int]]
"""A job to place: minus its size (the sort key), its run, its type, its shape."""


def _first(item: _Item) -> int:
    return item[0]


_SERVERS_OF: dict[tuple[str, ...], dict[str, list[int]]] = {}


def _fit_in_order(
    fits: Fits, movers: list[_Item], starters: list[_Item], targets: dict[int, Target]
) -> None:
    """`place_changes`' moves, then its starts, into ``targets`` as `place_on_types` places
    them: the movers retried while any of them found room, then each starter once."""
    failed, changes = fits.failed, fits.changes
    pending = movers
    while pending:  # as `place_on_types`
        later = []
        for item in pending:
            shape = item[3]
            if failed.get(shape) == changes.get(item[2], 0):
                later.append(item)  # no room since it last found none (`Fits.fit_shape`)
                continue
            new = fits.fit_shape(*shape)
            if new is None:
                later.append(item)
                continue
            run = item[1]
            fits.take(run.spec, run.allocation, -1.0)
            fits.take(run.spec, new, 1.0)
            targets[run.job_id] = Target(new.num_workers, new.num_ps, new)
        if len(later) == len(pending):
            break
        pending = later
    for _, run, _, shape in starters:
        new = fits.fit_shape(*shape)
        if new is not None:
            fits.take(run.spec, new, 1.0)
            targets[run.job_id] = Target(new.num_workers, new.num_ps, new)


def _servers_of(server_types: Sequence[str]) -> dict[str, list[int]]:
    """The servers of each type, ascending (kept per cluster layout; read-only)."""
    key = tuple(server_types)
    got = _SERVERS_OF.get(key)
    if got is None:
        if len(_SERVERS_OF) > 64:
            _SERVERS_OF.clear()
        got = _SERVERS_OF[key] = {}
        for s, t in enumerate(key):
            got.setdefault(t, []).append(s)
    return got


def scale_of(spec: JobSpec) -> int:
    """GPUs a fixed-size job runs on (Gavel's scale factor): its requested workers."""
    return max(spec.num_workers, 1)


class Fits:
    """The fits of a round's jobs on its books, remembering failures and room: a job's fit
    depends only on its shape (demand, size) and on what is held on its type's servers, so a
    shape that found no room on a type finds none again until something is taken or given back
    there (the same answers as scanning again: movers are retried pass after pass, most of them
    in vain); and the tasks of a demand that fit on each server are counted once a round and
    counted again only on the servers a take or give-back touched (the same floats: `_room`)."""

    def __init__(
        self,
        server_types: Sequence[str],
        servers_of: dict[str, list[int]],
        cap: list[list[float]],
        used: list[list[float]],
    ) -> None:
        self.server_types, self.servers_of, self.cap, self.used = (
            server_types, servers_of, cap, used,
        )  # fmt: skip
        self.changes = dict.fromkeys(servers_of, 0)  # per type: takes and give-backs so far
        self.failed: dict[tuple[str, tuple[float, float, float], int], int] = {}
        # type -> worker demand -> tasks that fit on each of the type's servers, in order
        self.rooms: dict[str, dict[tuple[float, float, float], list[int]]] = {}
        self.position = {s: i for servers in servers_of.values() for i, s in enumerate(servers)}

    def fit(self, spec: JobSpec, t: str) -> Allocation | None:
        """Where ``spec``'s workers go on the servers of type ``t`` (`_fit_counted`), or None."""
        demand = spec.worker_demand.as_tuple()
        want = spec.num_workers  # `scale_of`
        return self.fit_shape(t, demand, want if want > 1 else 1)

    def fit_shape(self, t: str, demand: tuple[float, float, float], want: int) -> Allocation | None:
        """`fit` of ``want`` workers of ``demand`` each (``want``: `scale_of` the job)."""
        shape = (t, demand, want)
        changes = self.changes.get(t, 0)
        if self.failed.get(shape) == changes:
            return None
        servers = self.servers_of.get(t, [])
        if demand[0] > 0 or demand[1] > 0 or demand[2] > 0:
            of_type = self.rooms.get(t)
            if of_type is None:
                of_type = self.rooms[t] = {}
            counts = of_type.get(demand)
            if counts is None:
                cap, used = self.cap, self.used
                counts = of_type[demand] = [_room(demand, cap[s], used[s]) for s in servers]
        else:
            counts = [want] * len(servers)
        new = _fit_counted(counts, servers, want)
        if new is None:
            self.failed[shape] = changes
        return new

    def take(self, spec: JobSpec, alloc: Allocation, sign: float) -> None:
        """`_add` (``sign`` 1: take, -1: give back), noting the types it touched."""
        used = self.used
        g, c, m = spec.worker_demand.as_tuple()
        for server, n in alloc.workers:  # `_add` inlined: the same operations
            row = used[server]
            row[0] += sign * g * n
            row[1] += sign * c * n
            row[2] += sign * m * n
        if alloc.ps:
            g, c, m = spec.ps_demand.as_tuple()
            for server, n in alloc.ps:
                row = used[server]
                row[0] += sign * g * n
                row[1] += sign * c * n
                row[2] += sign * m * n
        types, changes, rooms, cap = self.server_types, self.changes, self.rooms, self.cap
        for s, _ in (*alloc.workers, *alloc.ps) if alloc.ps else alloc.workers:
            t = types[s]
            changes[t] = changes.get(t, 0) + 1
            of_type = rooms.get(t)
            if of_type:
                k = self.position[s]
                for demand, counts in of_type.items():
                    counts[k] = _room(demand, cap[s], used[s])


def _room(demand: tuple[float, float, float], have: list[float], took: list[float]) -> int:
    """Tasks of ``demand`` (not all zero) that fit on a server of capacity ``have`` holding
    ``took`` (`tasks_that_fit` inlined, the same floating-point operations: this runs for
    every placed job of every round)."""
    g, c, m = demand
    n = math.floor((have[0] - took[0] + _EPS) / g) if g > 0 else _UNBOUNDED
    if c > 0:
        n = min(n, math.floor((have[1] - took[1] + _EPS) / c))
    if m > 0:
        n = min(n, math.floor((have[2] - took[2] + _EPS) / m))
    return n


def _fit_counted(counts: list[int], servers: list[int], want: int) -> Allocation | None:
    """The job's ``want`` workers on ``servers`` (those of its GPU type, ascending), given how
    many fit on each (``counts``, `_room`): the fullest single server that fits them all, else
    the emptiest servers first; None if they do not fit."""
    best_n, best = 0, -1  # the fullest single server that fits them all: tasks, server
    for n, s in zip(counts, servers, strict=True):
        if n >= want and (best < 0 or n < best_n):
            best_n, best = n, s
    if best >= 0:  # `Allocation.of([(best, want)])`, want > 0: already normal
        return Allocation(((best, want),))
    room = [(n, s) for n, s in zip(counts, servers, strict=True) if n > 0]
    placed: list[tuple[int, int]] = []
    total = 0
    for n, s in sorted(room, key=lambda r: (-r[0], r[1])):
        take = min(n, want - total)
        placed.append((s, take))
        total += take
        if total == want:
            return Allocation.of(placed)
    return None


def _add(used: list[list[float]], spec: JobSpec, alloc: Allocation, sign: float) -> None:
    for tasks, demand in ((alloc.workers, spec.worker_demand), (alloc.ps, spec.ps_demand)):
        g, c, m = demand.as_tuple()
        for server, n in tasks:
            row = used[server]
            row[0] += sign * g * n
            row[1] += sign * c * n
            row[2] += sign * m * n
