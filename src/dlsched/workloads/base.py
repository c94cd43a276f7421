"""`Workload`: the jobs of one experiment together with the cluster and settings they run on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dlsched.core import Cluster, JobSpec, Resources
from dlsched.models.base import ThroughputModel
from dlsched.sim.config import RescaleCost


@dataclass(frozen=True)
class Workload:
    """A generated or loaded workload, ready to simulate.

    Attributes:
        name: registry name with its argument (``"dl2"``, ``"philly:6214e9"``).
        jobs: the jobs, sorted by submission time.
        servers: capacity of each server of the cluster.
        model: the throughput model giving each job's true speed.
        interval_s: periodic scheduling interval in seconds (DL2's time slot), or None.
        on_events: also schedule at every arrival and completion.
        placement: name of the default placement policy (``load_balance``, ``pack``, ``gang``).
        noise: default relative std of interference noise on speed (see `SimConfig.noise`).
        rescale: what resizing and resuming a job cost in this setting (Pollux: a 30 s restart
            at every reallocation); None: `RescaleCost`'s defaults (1 s hot, 30 s restart).
        params: everything that generated it (seed, load, servers, …), for cards and reports.
        server_types: the GPU type of each server (a heterogeneous cluster, see
            `dlsched.core.gpu_types`), or None for one unnamed type.
    """

    name: str
    jobs: tuple[JobSpec, ...]
    servers: tuple[Resources, ...]
    model: ThroughputModel
    interval_s: float | None = None
    on_events: bool = True
    placement: str = "pack"
    noise: float = 0.0
    rescale: RescaleCost | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    server_types: tuple[str, ...] | None = None

    def make_cluster(self) -> Cluster:
        """A fresh, empty cluster of this workload's servers (and their GPU types)."""
        return Cluster(self.servers, self.server_types)
