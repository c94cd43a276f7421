"""Servers and the cluster: capacity, what is free, and who runs where.

The cluster is the single place where resources are taken and given back; it refuses any
allocation that would put a server over its capacity, so over-allocation cannot happen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dlsched.core.decision import Allocation, Status
from dlsched.core.job import JobSpec
from dlsched.core.resources import Resources

_EPS = 1e-9


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


def _usage_rows(spec: JobSpec, alloc: Allocation) -> dict[int, tuple[float, float, float]]:
    """`usage` as plain (gpu, cpu, mem) tuples (the engine's hot path)."""
    rows: dict[int, tuple[float, float, float]] = {}
    for tasks, demand in ((alloc.workers, spec.worker_demand), (alloc.ps, spec.ps_demand)):
        g, c, m = demand.as_tuple()
        for server, n in tasks:
            have = rows.get(server, _ZERO)
            rows[server] = (have[0] + g * n, have[1] + c * n, have[2] + m * n)
    return rows


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

    Usage is held as an ``(N, 3)`` array of (gpu, cpu, mem) so that placement policies can scan
    servers with NumPy. Read it through `free_array` / `capacity_array`; change it only with
    `allocate` and `release` (the engine does).

    Attributes:
        version: counts changes of usage; equal versions mean nothing was taken or given back.
    """

    def __init__(self, servers: Iterable[Server | Resources]) -> None:
        self.servers: tuple[Server, ...] = tuple(
            s if isinstance(s, Server) else Server(i, s) for i, s in enumerate(servers)
        )
        if not self.servers:
            raise ValueError("a cluster needs at least one server")
        self._capacity = np.array([s.capacity.as_tuple() for s in self.servers], dtype=np.float64)
        self._used = np.zeros_like(self._capacity)
        self._allocations: dict[int, Allocation] = {}
        self.total = Resources(*(float(x) for x in self._capacity.sum(axis=0)))
        self.version = 0

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
    def capacity_array(self) -> npt.NDArray[np.float64]:
        """Read-only ``(N, 3)`` array of capacities (gpu, cpu, mem)."""
        view = self._capacity.view()
        view.flags.writeable = False
        return view

    @property
    def free_array(self) -> npt.NDArray[np.float64]:
        """``(N, 3)`` array of free resources (a fresh copy)."""
        return self._capacity - self._used

    def free(self, server_id: int) -> Resources:
        return Resources(*(float(x) for x in self._capacity[server_id] - self._used[server_id]))

    def used_total(self) -> Resources:
        return Resources(*self._used.sum(axis=0).tolist())

    def allocation_of(self, job_id: int) -> Allocation:
        return self._allocations.get(job_id, Allocation.EMPTY)

    @property
    def allocations(self) -> Mapping[int, Allocation]:
        """Job id → allocation of every job holding resources."""
        return self._allocations

    def check(self, spec: JobSpec, alloc: Allocation) -> Status:
        """Whether ``alloc`` would fit, once the job's current allocation is given back."""
        current = _usage_rows(spec, self.allocation_of(spec.job_id))
        for server, need in _usage_rows(spec, alloc).items():
            if not 0 <= server < self.num_servers:
                return Status.invalid(f"job {spec.job_id}: no server {server}")
            back = current.get(server, _ZERO)
            cap = self._capacity[server].tolist()
            used = self._used[server].tolist()
            if any(need[r] > cap[r] - used[r] + back[r] + _EPS for r in range(3)):
                free = self._capacity[server] - self._used[server] + back
                return Status.unschedulable(
                    f"job {spec.job_id}: server {server} has {_fmt(free)} free, "
                    f"needs {Resources(*need)}"
                )
        return Status.success()

    def allocate(self, spec: JobSpec, alloc: Allocation) -> Status:
        """Give ``spec`` the allocation ``alloc`` in place of what it holds; all or nothing."""
        status = self.check(spec, alloc)
        if not status.ok:
            return status
        self.release(spec)
        for server, need in _usage_rows(spec, alloc).items():
            self._used[server] += need
        if not alloc.is_empty:
            self._allocations[spec.job_id] = alloc
        self.version += 1
        return status

    def release(self, spec: JobSpec) -> None:
        """Give back everything ``spec`` holds (nothing if it holds nothing)."""
        alloc = self._allocations.pop(spec.job_id, None)
        if alloc is None:
            return
        for server, need in _usage_rows(spec, alloc).items():
            row = self._used[server]
            row -= need
            np.maximum(row, 0.0, out=row)  # float drift never shows as negative use
        self.version += 1

    def assert_consistent(self) -> None:
        """Raise AssertionError if any server is over capacity (used by tests)."""
        over = self._used > self._capacity + 1e-6
        if np.any(over):
            server = int(np.argwhere(over)[0][0])
            raise AssertionError(
                f"server {server} over-allocated: used {self._used[server]}, "
                f"capacity {self._capacity[server]}"
            )


def _fmt(vec: npt.NDArray[np.float64]) -> str:
    return f"(gpu={vec[0]:g}, cpu={vec[1]:g}, mem={vec[2]:g})"
