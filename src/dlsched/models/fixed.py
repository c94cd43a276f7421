"""`FixedDuration`: DeepRM's job model — a fixed duration at a fixed allocation (DeepRM §3.1).

DeepRM assumes "no preemption and a fixed allocation profile (i.e., no malleability)": a job
needs its whole resource vector from start to finish and then runs for exactly its duration
``T_j``. Speeds are in ideal seconds of work per second, so a job holding the ``num_workers``
tasks it asked for runs at 1.0 (``total_work`` seconds after it starts) and any smaller
allocation does not train. Holding more tasks than asked gains nothing (still 1.0). Placement
does not matter: DeepRM treats the cluster as one pool of resources.
"""

from __future__ import annotations

from dlsched.core import Allocation, JobSpec


class FixedDuration:
    """Speed 1.0 with at least the requested workers, else 0.0 (DeepRM §3.1)."""

    name = "fixed"

    def speed(self, spec: JobSpec, alloc: Allocation) -> float:
        """1.0 if ``alloc`` holds at least ``spec.num_workers`` workers (and one), else 0.0."""
        held = alloc.num_workers
        return 1.0 if held >= max(spec.num_workers, 1) else 0.0

    def ideal_speed(self, spec: JobSpec) -> float:
        """1.0: ``total_work`` is the job's duration in seconds."""
        return 1.0

    def best_speed(self, spec: JobSpec) -> float:
        """1.0: more tasks than asked gain nothing."""
        return 1.0
