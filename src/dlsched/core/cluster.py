"""Servers and the cluster: capacity, what is free, and who runs where.

The cluster is the single place where resources are taken and given back; it refuses any
allocation that would put a server over its capacity, so over-allocation cannot happen.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dlsched.core.decision import Allocation, Holder, Status
from dlsched.core.job import Arch, JobSpec
from dlsched.core.resources import Resources

_EPS = 1e-9
_UNBOUNDED = 1 << 30
_EXACT_LIMIT = 2.0**40
"""Whole amounts below this add up exactly in float64 (up to 2**13 servers)."""
_MAX_CACHED_SHAPES = 64
"""`Cluster.fits` keeps counts for at most this many task shapes (then starts afresh)."""


def tasks_that_fit(free: Sequence[float], need: tuple[float, float, float]) -> int:
    """How many tasks of ``need`` fit in one server's ``free`` (gpu, cpu, mem).

    ``floor((free + 1e-9) / need)`` over the resources ``need`` uses, the smallest, at least 0;
    a huge number (2**30) if ``need`` is all zeros. The same floating-point operations as
    `capacity_for`, one server at a time.
    """
    g, c, m = need
    best = math.floor((free[0] + _EPS) / g) if g > 0 else _UNBOUNDED
    if c > 0:
        n = math.floor((free[1] + _EPS) / c)
        if n < best:
            best = n
    if m > 0:
        n = math.floor((free[2] + _EPS) / m)
        if n < best:
            best = n
    return best if best > 0 else 0


def capacity_for(free: npt.ArrayLike, need: tuple[float, float, float]) -> npt.NDArray[np.int64]:
    """`tasks_that_fit` for every server at once: ``free`` is ``(N, 3)`` (array or rows)."""
    rows = np.asarray(free, dtype=np.float64)
    demand = np.asarray(need, dtype=np.float64)
    used = demand > 0
    if not used.any():
        return np.full(rows.shape[0], _UNBOUNDED, dtype=np.int64)
    fits = np.floor((rows[:, used] + _EPS) / demand[used]).min(axis=1)
    return np.maximum(fits, 0).astype(np.int64)


@dataclass(frozen=True, slots=True)
class Server:
    """One machine of the cluster.

    Attributes:
        server_id: index of the server in its cluster (0..N-1).
        capacity: what it has.
    """

    server_id: int
    capacity: Resources


_ZERO = (0.0, 0.0, 0.0)
_SUCCESS = Status.success()


def _usage_rows(spec: JobSpec, alloc: Allocation) -> dict[int, tuple[float, float, float]]:
    """`usage` as plain (gpu, cpu, mem) tuples (the engine's hot path)."""
    rows: dict[int, tuple[float, float, float]] = {}
    for tasks, demand in ((alloc.workers, spec.worker_demand), (alloc.ps, spec.ps_demand)):
        if not tasks:
            continue
        g, c, m = demand.as_tuple()
        for server, n in tasks:
            have = rows.get(server, _ZERO)
            rows[server] = (have[0] + g * n, have[1] + c * n, have[2] + m * n)
    return rows


def _whole(rows: dict[int, tuple[float, float, float]]) -> bool:
    """True if every amount is a whole number small enough to add up exactly in float64."""
    for need in rows.values():
        for x in need:
            if not (x.is_integer() and -_EXACT_LIMIT < x < _EXACT_LIMIT):
                return False
    return True


def usage(spec: JobSpec, alloc: Allocation) -> dict[int, Resources]:
    """Resources that ``alloc`` takes on each server for job ``spec``."""
    per_server: dict[int, Resources] = {}
    for server, n in alloc.workers:
        per_server[server] = per_server.get(server, Resources()) + spec.worker_demand * n
    for server, n in alloc.ps:
        per_server[server] = per_server.get(server, Resources()) + spec.ps_demand * n
    return per_server


class Cluster:
    """Capacity and current usage of every server, and each job's allocation.

    Usage is held per server as plain ``[gpu, cpu, mem]`` lists (the engine changes it thousands
    of times a run, a few servers at a time, where NumPy's per-call cost would dominate); read
    it as ``(N, 3)`` arrays through `free_array` / `capacity_array` (placement policies scanning
    servers with NumPy), as lists through `free_rows`, or as per-server task counts through
    `fits`. Change it only with `allocate` and `release` (the engine does).

    Attributes:
        version: counts changes of usage; equal versions mean nothing was taken or given back.
        server_types: the GPU type of each server (``"v100"``), or None for a cluster of one
            unnamed type (every cluster before heterogeneous ones; see `dlsched.core.gpu_types`).
    """

    def __init__(
        self, servers: Iterable[Server | Resources], types: Sequence[str] | None = None
    ) -> None:
        self.servers: tuple[Server, ...] = tuple(
            s if isinstance(s, Server) else Server(i, s) for i, s in enumerate(servers)
        )
        if not self.servers:
            raise ValueError("a cluster needs at least one server")
        if types is not None and len(types) != len(self.servers):
            raise ValueError(f"{len(types)} GPU types for {len(self.servers)} servers")
        self.server_types: tuple[str, ...] | None = None if types is None else tuple(types)
        self._capacity = np.array([s.capacity.as_tuple() for s in self.servers], dtype=np.float64)
        self._capacity.flags.writeable = False
        self._cap_rows: list[list[float]] = self._capacity.tolist()
        self._used: list[list[float]] = [[0.0, 0.0, 0.0] for _ in self.servers]
        self._free: list[list[float]] = [list(row) for row in self._cap_rows]
        # task shape -> tasks of that shape that fit on each server, and servers to recount
        self._fits: dict[tuple[float, float, float], list[int]] = {}
        self._stale: dict[tuple[float, float, float], set[int]] = {}
        self._allocations: dict[int, Allocation] = {}
        # job id -> what its allocation takes per server, and whether those are whole amounts
        self._held: dict[int, tuple[dict[int, tuple[float, float, float]], bool]] = {}
        # Usage summed over servers, kept up to date while every amount taken or given back is
        # a whole number: such sums are exact in any order, so they equal `used_total`'s.
        self._used_sum = [0.0, 0.0, 0.0]
        self._sum_exact = True
        self.total = Resources(*(float(x) for x in self._capacity.sum(axis=0)))
        self.version = 0
        self._cap_tuples: list[tuple[float, ...]] = [tuple(row) for row in self._cap_rows]
        self._cap_whole = _whole({i: (r[0], r[1], r[2]) for i, r in enumerate(self._cap_rows)})

    @staticmethod
    def homogeneous(num_servers: int, capacity: Resources) -> Cluster:
        """``num_servers`` identical servers."""
        if num_servers < 1:
            raise ValueError(f"num_servers must be >= 1, got {num_servers}")
        return Cluster([capacity] * num_servers)

    @property
    def num_servers(self) -> int:
        return len(self.servers)

    @property
    def gpu_types(self) -> tuple[str, ...]:
        """The GPU types of the cluster, in order of first server; ``()`` if it names none."""
        return () if self.server_types is None else tuple(dict.fromkeys(self.server_types))

    def gpus_by_type(self) -> dict[str, int]:
        """GPUs of each type (whole GPUs of the servers' capacity); ``{}`` if it names none."""
        counts: dict[str, int] = {}
        for gpu_type, row in zip(self.server_types or (), self._cap_rows, strict=False):
            counts[gpu_type] = counts.get(gpu_type, 0) + int(row[0])
        return counts

    @property
    def capacity_array(self) -> npt.NDArray[np.float64]:
        """Read-only ``(N, 3)`` array of capacities (gpu, cpu, mem)."""
        return self._capacity

    @property
    def capacity_rows(self) -> list[list[float]]:
        """Capacity ``[gpu, cpu, mem]`` of each server as plain lists, read-only."""
        return self._cap_rows

    @property
    def free_array(self) -> npt.NDArray[np.float64]:
        """``(N, 3)`` array of free resources (a fresh copy)."""
        return np.array(self._free, dtype=np.float64)

    def free_rows(self) -> list[list[float]]:
        """Free ``[gpu, cpu, mem]`` of each server, read-only: copy a row before changing it.

        The outer list is a fresh copy, so a caller may replace its rows (copy-on-write).
        """
        return list(self._free)

    def free(self, server_id: int) -> Resources:
        return Resources(*self._free[server_id])

    def fits(self, need: tuple[float, float, float]) -> list[int]:
        """Tasks of shape ``need`` (gpu, cpu, mem) that fit on each server now, read-only.

        `tasks_that_fit` of every server's free resources, kept per shape and recounted only on
        the servers whose usage changed since the last call.
        """
        counts = self._fits.get(need)
        if counts is None:
            if len(self._fits) >= _MAX_CACHED_SHAPES:
                self._fits.clear()
                self._stale.clear()
            counts = self._fits[need] = [tasks_that_fit(row, need) for row in self._free]
            self._stale[need] = set()
            return counts
        stale = self._stale[need]
        if stale:
            free = self._free
            for server in stale:
                counts[server] = tasks_that_fit(free[server], need)
            stale.clear()
        return counts

    def used_total(self) -> Resources:
        """Resources in use, summed over servers in server order."""
        if self._sum_exact:
            return Resources(*self._used_sum)
        gpu = cpu = mem = 0.0
        for row in self._used:
            gpu += row[0]
            cpu += row[1]
            mem += row[2]
        return Resources(gpu, cpu, mem)

    def used_gpu_cpu(self) -> tuple[float, float]:
        """GPUs and cores in use, summed over servers: `used_total`'s first two, cheaper."""
        if self._sum_exact:
            return self._used_sum[0], self._used_sum[1]
        used = self.used_total()
        return used.gpu, used.cpu

    def whole_usage(self) -> bool:
        """Whether every capacity and every amount ever taken or given back is a whole number
        (below 2**53): then every sum of usage is exact in any order."""
        return self._cap_whole and self._sum_exact

    def emptied_rows(self, holders: Sequence[Holder]) -> list[tuple[float, ...]] | None:
        """The capacities, as ``(gpu, cpu, mem)`` tuples, if they are exactly what giving back
        every job of ``holders`` in turn would leave free (float for float); else None.

        That holds when ``holders`` are every job holding resources, each with the allocation
        this cluster holds for it, and every capacity and every amount ever taken or given back
        is a whole number (then every sum involved is exact). A preemptive policy's choosing
        walk starts from that state at every point (`dlsched.schedulers.ordered`).
        """
        if not (self._cap_whole and self._sum_exact) or len(holders) != len(self._allocations):
            return None
        allocations = self._allocations
        for run in holders:
            if allocations.get(run.job_id) is not run.allocation:
                return None
        return list(self._cap_tuples)

    def allocation_of(self, job_id: int) -> Allocation:
        return self._allocations.get(job_id, Allocation.EMPTY)

    @property
    def allocations(self) -> Mapping[int, Allocation]:
        """Job id → allocation of every job holding resources."""
        return self._allocations

    def check(self, spec: JobSpec, alloc: Allocation) -> Status:
        """Whether ``alloc`` would fit, once the job's current allocation is given back."""
        current = self._allocations.get(spec.job_id)
        return self._check(spec, _usage_rows(spec, alloc), current)

    def _check(
        self,
        spec: JobSpec,
        rows: dict[int, tuple[float, float, float]],
        current: Allocation | None,
    ) -> Status:
        held = self._held.get(spec.job_id) if current is not None else None
        back_rows = held[0] if held is not None else {}
        num_servers = len(self.servers)
        for server, need in rows.items():
            if not 0 <= server < num_servers:
                return Status.invalid(f"job {spec.job_id}: no server {server}")
            back = back_rows.get(server, _ZERO)
            cap = self._cap_rows[server]
            used = self._used[server]
            if (
                need[0] > cap[0] - used[0] + back[0] + _EPS
                or need[1] > cap[1] - used[1] + back[1] + _EPS
                or need[2] > cap[2] - used[2] + back[2] + _EPS
            ):
                free = np.asarray(self._free[server]) + back
                return Status.unschedulable(
                    f"job {spec.job_id}: server {server} has {_fmt(free)} free, "
                    f"needs {Resources(*need)}"
                )
        return Status.success()

    def allocate(self, spec: JobSpec, alloc: Allocation) -> Status:
        """Give ``spec`` the allocation ``alloc`` in place of what it holds; all or nothing."""
        if not alloc.workers and not alloc.ps:  # a suspension: what follows, minus no-ops
            self.release(spec)
            self.version += 1
            return _SUCCESS
        rows = _usage_rows(spec, alloc)
        current = self._allocations.get(spec.job_id)
        status = self._check(spec, rows, current)
        if status is not _SUCCESS:
            return status
        if current is not None:  # else nothing to give back (a start)
            self.release(spec)
        whole = _whole(rows)
        self._add_to_sum(rows, whole, 1.0)
        used, cap_rows, free, stales = self._used, self._cap_rows, self._free, self._stale
        for server, need in rows.items():
            row = used[server]
            row[0] += need[0]
            row[1] += need[1]
            row[2] += need[2]
            cap = cap_rows[server]  # `_changed` inlined (every move of every round)
            free[server] = [cap[0] - row[0], cap[1] - row[1], cap[2] - row[2]]
            for stale in stales.values():
                stale.add(server)
        self._allocations[spec.job_id] = alloc
        self._held[spec.job_id] = (rows, whole)
        self.version += 1
        return status

    def release(self, spec: JobSpec) -> None:
        """Give back everything ``spec`` holds (nothing if it holds nothing)."""
        alloc = self._allocations.pop(spec.job_id, None)
        if alloc is None:
            return
        rows, whole = self._held.pop(spec.job_id)
        used, cap_rows, free, stales = self._used, self._cap_rows, self._free, self._stale
        for server, need in rows.items():
            row = used[server]
            if row[0] < need[0] or row[1] < need[1] or row[2] < need[2]:
                self._sum_exact = False  # the clamp below changes amounts; sum afresh
            # float drift never shows as negative use (`max(x, 0.0)`: the same value, -0.0 and
            # NaN included, without the call)
            g, c, m = row[0] - need[0], row[1] - need[1], row[2] - need[2]
            row[0] = 0.0 if g < 0.0 else g
            row[1] = 0.0 if c < 0.0 else c
            row[2] = 0.0 if m < 0.0 else m
            cap = cap_rows[server]  # `_changed` inlined
            free[server] = [cap[0] - row[0], cap[1] - row[1], cap[2] - row[2]]
            for stale in stales.values():
                stale.add(server)
        self._add_to_sum(rows, whole, -1.0)
        self.version += 1

    def _add_to_sum(
        self, rows: dict[int, tuple[float, float, float]], whole: bool, sign: float
    ) -> None:
        """Add ``sign`` times ``rows`` to the running sum, or stop keeping it if not exact."""
        if not self._sum_exact:
            return
        if not whole:
            self._sum_exact = False
            return
        total = self._used_sum
        for g, c, m in rows.values():
            total[0] += sign * g
            total[1] += sign * c
            total[2] += sign * m

    def check_fits(self, specs: Iterable[JobSpec]) -> None:
        """Raise ValueError naming the first job that needs more than the whole cluster at its
        smallest size (its fewest workers, one PS if it has any), before a run."""
        limit = (self.capacity_array.sum(axis=0) + 1e-9).tolist()
        fit: set[tuple[Resources, Resources, int, int]] = set()  # smallest sizes known to fit
        for spec in specs:
            ps = min(spec.num_ps, 1) if spec.arch is Arch.PS else 0
            key = (spec.worker_demand, spec.ps_demand, spec.min_workers, ps)
            if key in fit:
                continue
            need = spec.demand(spec.min_workers, ps)
            if need.gpu <= limit[0] and need.cpu <= limit[1] and need.mem <= limit[2]:
                fit.add(key)
            else:
                raise ValueError(
                    f"job {spec.job_id} needs {need} at its smallest, more than the whole cluster"
                )

    def assert_consistent(self) -> None:
        """Raise AssertionError if any server is over capacity (used by tests)."""
        for server, (used, cap) in enumerate(zip(self._used, self._cap_rows, strict=True)):
            if any(u > c + 1e-6 for u, c in zip(used, cap, strict=True)):
                raise AssertionError(f"server {server} over-allocated: used {used}, capacity {cap}")


def _fmt(vec: npt.NDArray[np.float64]) -> str:
    return f"(gpu={vec[0]:g}, cpu={vec[1]:g}, mem={vec[2]:g})"
