"""`TypedSpeed`: a job's speed on a heterogeneous cluster, per GPU type.

A job's speed is its inner model's speed (task counts, placement) times its rate on the GPU type
it runs on. A job whose workers sit on servers of several types runs at the rate of the slowest
of them (synchronous training waits for the slowest worker). Parameter servers are CPU tasks:
their servers' types do not matter.

The true rates may differ from the estimates a scheduler sees (`estimates`, built from the
profiled table only): a real job deviates from its kind's profile.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence

import numpy as np

from dlsched.core import Allocation, JobSpec
from dlsched.core.gpu_types import TypeSpeeds
from dlsched.models.base import ThroughputModel


class TypedSpeed:
    """``inner``'s speed times the job's rate on the slowest GPU type its workers use.

    Args:
        inner: speed from task counts and placement (`FixedDuration` for Gavel's fixed-size
            jobs: 1.0 at the requested size).
        server_types: the GPU type of each server.
        rates: job id -> GPU type -> true rate (a multiplier of ``inner``'s speed; for the
            ``gavel`` workload, steps per second).
        estimated: job id -> GPU type -> the rate a scheduler may know (None: ``rates``).

    Raises:
        ValueError: a job has no rate for one of the cluster's types.
    """

    def __init__(
        self,
        inner: ThroughputModel,
        server_types: Sequence[str],
        rates: Mapping[int, Mapping[str, float]],
        estimated: Mapping[int, Mapping[str, float]] | None = None,
    ) -> None:
        self.inner = inner
        self.name = f"typed({getattr(inner, 'name', type(inner).__name__)})"
        self.server_types = tuple(server_types)
        types = tuple(dict.fromkeys(self.server_types))
        for job_id, row in rates.items():
            missing = [t for t in types if t not in row]
            if missing:
                raise ValueError(f"job {job_id} has no rate on GPU type {missing[0]!r}")
        self._rates = {j: {t: float(row[t]) for t in types} for j, row in rates.items()}
        shown = rates if estimated is None else estimated
        self.estimates = TypeSpeeds(
            {j: {t: float(row.get(t, 0.0)) for t in types} for j, row in shown.items()}, types
        )
        """The per-type speeds a scheduler may read (the estimates, never ``rates``)."""

    def with_inner(self, inner: ThroughputModel) -> TypedSpeed:
        """A copy with another inner model (same rates and estimates)."""
        typed = copy.copy(self)
        typed.inner = inner
        typed.name = f"typed({getattr(inner, 'name', type(inner).__name__)})"
        return typed

    def rate(self, spec: JobSpec, gpu_type: str) -> float:
        """True rate of ``spec`` on ``gpu_type`` (0.0 for a type it has none for)."""
        return self._rates[spec.job_id].get(gpu_type, 0.0)

    def speed(self, spec: JobSpec, alloc: Allocation) -> float:
        """``inner``'s speed times the rate on the slowest type among the workers' servers."""
        if not alloc.workers:
            return 0.0
        base = self.inner.speed(spec, alloc)
        if base <= 0.0:
            return 0.0
        row = self._rates[spec.job_id]
        types = self.server_types
        workers = alloc.workers
        if len(workers) == 1:  # the min of one rate (most jobs, every move)
            return base * row[types[workers[0][0]]]
        return base * min(row[types[server]] for server, _ in workers)

    def ideal_speed(self, spec: JobSpec) -> float:
        """``inner``'s ideal speed on the job's fastest type."""
        return self.inner.ideal_speed(spec) * max(self._rates[spec.job_id].values())

    def best_speed(self, spec: JobSpec) -> float:
        """``inner``'s best speed on the job's fastest type."""
        return self.inner.best_speed(spec) * max(self._rates[spec.job_id].values())


def spread_rates(
    profile: Mapping[str, float], spread: float, rng: np.random.Generator
) -> dict[str, float]:
    """``profile`` times a mean-one log-normal factor per type, relative std ``spread`` (a real
    job's deviation from its kind's profiled speeds); ``profile`` itself for 0."""
    if spread <= 0.0:
        return dict(profile)
    sigma = math.sqrt(math.log1p(spread * spread))
    return {t: r * float(rng.lognormal(-sigma * sigma / 2, sigma)) for t, r in profile.items()}
