"""`ReplicaScaling`: speed of a job of identical replicas by Amdahl's law (Kubeflow jobs).

The Kubeflow dynamic scheduler (seed 003) scales a TFJob's worker replicas down to its minimum
to admit a higher-priority job and up to its maximum into free resources, so a job's speed must
depend on how many replicas it holds. The seed gives no speed model; we use Amdahl's law with a
serial (non-parallelisable) fraction ``p`` of the work, 0.1 by default (our choice: a job
gains 3.1× from 4 replicas and at most 10×)::

    A(n) = 1 / (p + (1 - p) / n)          speed(n) = A(min(n, max)) / A(num_workers)

Speeds are in ideal seconds of work per second: ``total_work`` is the job's duration in seconds
at its requested replica count ``num_workers``, so that count runs at 1.0, fewer replicas run
slower and more run faster, with diminishing returns. Below ``min_workers`` (the job's minimum
replicas) the job does not train (0.0); replicas beyond ``max(max_workers, num_workers)`` add
nothing. Placement does not matter (replicas exchange little data, and gang placement keeps a
job's replicas on as few nodes as it can). ``p = 0`` is linear scaling; ``p = 1`` makes every
count from the minimum up run at 1.0.
"""

from __future__ import annotations

import math

from dlsched.core import Allocation, JobSpec


def amdahl(n: float, serial_fraction: float) -> float:
    """Speed-up of ``n`` replicas over one under Amdahl's law (``n >= 1``)."""
    return 1.0 / (serial_fraction + (1.0 - serial_fraction) / n)


class ReplicaScaling:
    """Replica-count speed by Amdahl's law (see the module docstring).

    Args:
        serial_fraction: share of the work that does not parallelise, in [0, 1].

    Raises:
        ValueError: ``serial_fraction`` outside [0, 1].
    """

    name = "replica"

    def __init__(self, serial_fraction: float = 0.1) -> None:
        if not (0.0 <= serial_fraction <= 1.0 and math.isfinite(serial_fraction)):
            raise ValueError(f"serial_fraction must be in [0, 1], got {serial_fraction}")
        self.serial_fraction = serial_fraction

    def speed(self, spec: JobSpec, alloc: Allocation) -> float:
        """Ideal seconds of work per second of ``spec`` with ``alloc``'s replicas (0.0 below
        ``min_workers``)."""
        held = alloc.num_workers
        if held < max(spec.min_workers, 1) or spec.num_workers < 1:
            return 0.0
        used = min(held, max(spec.max_workers, spec.num_workers))
        return amdahl(used, self.serial_fraction) / amdahl(spec.num_workers, self.serial_fraction)

    def ideal_speed(self, spec: JobSpec) -> float:
        """1.0: ``total_work`` is the duration in seconds at the requested replica count."""
        return 1.0

    def best_speed(self, spec: JobSpec) -> float:
        """Speed at the most replicas the job can use (Amdahl's law only grows with ``n``)."""
        if spec.num_workers < 1:
            return 0.0
        top = max(spec.max_workers, spec.num_workers)
        return amdahl(top, self.serial_fraction) / amdahl(spec.num_workers, self.serial_fraction)
