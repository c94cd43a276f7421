"""The throughput-model contract: how fast a job trains under an allocation."""

from __future__ import annotations

from typing import Protocol

from dlsched.core import Allocation, JobSpec


class ThroughputModel(Protocol):
    """Noise-free training speed; the simulator multiplies in interference noise.

    Speeds are in the job's work unit per second (epochs/s for PS jobs, ideal-seconds per second
    for all-reduce and replica jobs, so 1.0 means "as fast as its best placement").
    """

    name: str

    def speed(self, spec: JobSpec, alloc: Allocation) -> float:
        """Work units per second of ``spec`` under ``alloc`` (0.0 if it cannot train)."""
        ...

    def ideal_speed(self, spec: JobSpec) -> float:
        """Speed at the job's requested task counts and best placement (for slowdown)."""
        ...

    def best_speed(self, spec: JobSpec) -> float:
        """Highest speed over every allocation the job may hold (its task-count bounds, best
        placement), noise-free: ``total_work / best_speed`` is the job's no-wait lower bound."""
        ...


def no_wait_bound_s(spec: JobSpec, model: ThroughputModel) -> float:
    """The job's completion time (s) if it ran from its arrival at its fastest allocation.

    No queueing, no noise, no rescale: no schedule finishes the job sooner when interference
    noise is off (with noise it bounds the mean). ``inf`` if the job can never train.
    """
    best = model.best_speed(spec)
    return spec.total_work / best if best > 0 else float("inf")
