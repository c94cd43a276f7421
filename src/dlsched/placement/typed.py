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
        # (type, worker demand) -> tasks that fit on each of the type's servers, in order
        self.rooms: dict[tuple[str, tuple[float, float, float]], list[int]] = {}
        self.position = {s: i for servers in servers_of.values() for i, s in enumerate(servers)}

    def fit(self, spec: JobSpec, t: str) -> Allocation | None:
        """Where ``spec``'s workers go on the servers of type ``t`` (`_fit_counted`), or None."""
        demand = spec.worker_demand.as_tuple()
        want = scale_of(spec)
        shape = (t, demand, want)
        if self.failed.get(shape) == self.changes.get(t, 0):
            return None
        servers = self.servers_of.get(t, [])
        if demand[0] > 0 or demand[1] > 0 or demand[2] > 0:
            key = (t, demand)
            counts = self.rooms.get(key)
            if counts is None:
                cap, used = self.cap, self.used
                counts = self.rooms[key] = [_room(demand, cap[s], used[s]) for s in servers]
        else:
            counts = [want] * len(servers)
        new = _fit_counted(counts, servers, want)
        if new is None:
            self.failed[shape] = self.changes.get(t, 0)
        return new

    def take(self, spec: JobSpec, alloc: Allocation, sign: float) -> None:
        """`_add` (``sign`` 1: take, -1: give back), noting the types it touched."""
        _add(self.used, spec, alloc, sign)
        for s, _ in (*alloc.workers, *alloc.ps):
            t = self.server_types[s]
            self.changes[t] = self.changes.get(t, 0) + 1
            for (kind, demand), counts in self.rooms.items():
                if kind == t:
                    counts[self.position[s]] = _room(demand, self.cap[s], self.used[s])


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
    room = []
    best: tuple[int, int] | None = None  # the fullest single server: (tasks that fit, server)
    for n, s in zip(counts, servers, strict=True):
        if n > 0:
            room.append((n, s))
            if n >= want and (best is None or n < best[0]):
                best = (n, s)
    if best is not None:
        return Allocation.of([(best[1], want)])
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
