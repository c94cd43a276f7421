"""Heterogeneous clusters: a GPU type per server, written as a spec like ``v100:4x8,k80:2x4``.

A spec lists groups of identical servers, ``TYPE:SERVERSxGPUS`` separated by commas: ``v100:4x8``
is four servers of eight V100 GPUs each. Type names are lower-case letters, digits, ``_`` and
``-`` (``a100-80gb``). The order of the groups is the order of the servers (server ids 0..N-1),
and the first group's type is the cluster's reference type (`ClusterSpec.reference`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from dlsched.core.job import JobSpec
from dlsched.core.resources import Resources

_GROUP = re.compile(r"^([a-z][a-z0-9_-]{0,31}):(\d{1,5})x(\d{1,4})$")
MAX_SPEC_SERVERS = 100_000
"""Most servers a cluster spec may describe (all groups together)."""


@dataclass(frozen=True, slots=True)
class ServerGroup:
    """Identical servers of one GPU type.

    Attributes:
        gpu_type: the GPU type's name (``"v100"``).
        servers: how many servers.
        gpus_per_server: GPUs in each.
    """

    gpu_type: str
    servers: int
    gpus_per_server: int


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """A parsed cluster spec: its groups of servers, in server order."""

    groups: tuple[ServerGroup, ...]

    @staticmethod
    def parse(text: str, where: str = "cluster") -> ClusterSpec:
        """Parse ``"v100:4x8,p100:4x8,k80:4x8"``.

        Raises:
            ValueError: one line naming ``where`` and the group that is wrong.
        """
        groups: list[ServerGroup] = []
        seen: set[str] = set()
        for part in str(text).split(","):
            match = _GROUP.match(part.strip().lower())
            if match is None:
                raise ValueError(
                    f"{where}: {part.strip()!r} is not TYPE:SERVERSxGPUS (e.g. v100:4x8)"
                )
            gpu_type, servers, gpus = match.group(1), int(match.group(2)), int(match.group(3))
            if servers < 1 or gpus < 1:
                raise ValueError(f"{where}: {part.strip()!r} needs at least 1 server of 1 GPU")
            if gpu_type in seen:
                raise ValueError(f"{where}: type {gpu_type!r} is listed twice")
            seen.add(gpu_type)
            groups.append(ServerGroup(gpu_type, servers, gpus))
        spec = ClusterSpec(tuple(groups))
        if spec.num_servers > MAX_SPEC_SERVERS:
            raise ValueError(
                f"{where}: {spec.num_servers:,} servers, more than {MAX_SPEC_SERVERS:,}"
            )
        return spec

    @property
    def num_servers(self) -> int:
        return sum(g.servers for g in self.groups)

    @property
    def types(self) -> tuple[str, ...]:
        """GPU types in spec order."""
        return tuple(g.gpu_type for g in self.groups)

    @property
    def reference(self) -> str:
        """The first group's type."""
        return self.groups[0].gpu_type

    def gpus_of(self, gpu_type: str) -> int:
        """GPUs of ``gpu_type`` in all (0 if the cluster has none)."""
        return sum(g.servers * g.gpus_per_server for g in self.groups if g.gpu_type == gpu_type)

    def server_types(self) -> tuple[str, ...]:
        """The GPU type of each server, in server order."""
        return tuple(g.gpu_type for g in self.groups for _ in range(g.servers))

    def servers(self, cpu_per_gpu: float, mem_gb_per_gpu: float) -> tuple[Resources, ...]:
        """Each server's capacity: its GPUs, and ``cpu_per_gpu`` cores and ``mem_gb_per_gpu``
        GB of memory per GPU."""
        return tuple(
            Resources(
                g.gpus_per_server,
                cpu_per_gpu * g.gpus_per_server,
                mem_gb_per_gpu * g.gpus_per_server,
            )
            for g in self.groups
            for _ in range(g.servers)
        )

    def __str__(self) -> str:
        return ",".join(f"{g.gpu_type}:{g.servers}x{g.gpus_per_server}" for g in self.groups)


class TypeSpeeds:
    """What a scheduler may know of each job's speed on each GPU type: estimates, not truth.

    The estimates are what profiling the job's kind gives (Gavel's premise: a throughput matrix
    measured offline per job type and size), work units per second at the job's requested size,
    one entry per GPU type of the cluster. They are built from the estimate table alone and keep
    no reference to the throughput model, so a policy reading them cannot reach true speeds
    (`ClusterView.oracle_speed` is the only way to those, for oracles).

    Args:
        estimates: job id -> GPU type -> estimated work units per second.
        types: the cluster's GPU types, in the cluster's order.
    """

    __slots__ = ("_estimates", "types")

    def __init__(
        self, estimates: Mapping[int, Mapping[str, float]], types: tuple[str, ...]
    ) -> None:
        self._estimates = {j: MappingProxyType(dict(row)) for j, row in estimates.items()}
        self.types = types

    def of(self, spec: JobSpec) -> Mapping[str, float]:
        """Estimated speed (work units/s) of ``spec`` on each GPU type at its requested size;
        0.0 for a type it cannot run on; KeyError for a job the table does not know."""
        return self._estimates[spec.job_id]
