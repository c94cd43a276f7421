"""SCED² profiling (§III-B): k measured speeds of each arriving job, concentrated to scattered.

SCED² runs every arriving job "for a few mini-batches" under ``k`` placements "from centrated
to scattered" and gives the ``k`` measured numbers to its agent (``k = 4`` suffices, §III-B).
We simulate that measurement: the profiling tool times ``minibatches`` mini-batches of the job on
each placement; each mini-batch's time is the `Locality` model's time with multiplicative noise
``exp(σ·z)`` (σ = ``noise``), and the measured speed is the ratio of the ideal mini-batch time to
the mean measured one. The profile is what a real cluster's profiler would report; it is not the
simulator's noise-free speed, which schedulers never read.

**Placements.** A job of ``g`` GPUs on servers of ``M`` GPUs spans, concentrated to scattered,
``k_best = ceil(g / M)`` servers, then ``2·k_best``, ``4·k_best``, …, each capped at ``g`` (one
GPU per server at most): 8 GPUs on 8-GPU servers → spans 1, 2, 4, 8; 2 GPUs → 1, 2, 2, 2; a
1-GPU job always runs on one server, so its four numbers only differ by measurement noise.

**Numbers in the state.** `JobProfile.times_s` turns the speeds into estimated execution times
(ideal duration over measured speed, seconds) at each placement: one vector that tells the agent
both how long the job is and how much spreading it costs. `JobProfile.estimate_time_s` gives
the time for any span by linear interpolation between the profiled spans (nearest end beyond).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dlsched.core import Allocation, JobSpec
from dlsched.models.locality import Locality

K_PROFILES = 4
"""Placements profiled per job (SCED² §III-B: k = 4)."""
MINIBATCHES = 5
"""Mini-batches timed per placement."""
NOISE = 0.05
"""Relative noise (log-normal σ) of one mini-batch time."""


def profile_spans(num_gpus: int, gpus_per_server: int, k: int = K_PROFILES) -> tuple[int, ...]:
    """Servers spanned by the ``k`` profiled placements, concentrated to scattered.

    Args:
        num_gpus: GPUs of the job (>= 1).
        gpus_per_server: GPUs per server (>= 1).
        k: number of placements.

    Returns:
        ``k`` non-decreasing span counts: ``min(g, k_best · 2^i)`` for ``i = 0..k-1``.
    """
    g = max(1, num_gpus)
    best = math.ceil(g / max(1, gpus_per_server))
    return tuple(min(g, best * 2**i) for i in range(k))


def spread_allocation(num_gpus: int, num_servers: int) -> Allocation:
    """``num_gpus`` GPUs spread as evenly as possible over ``num_servers`` servers (0, 1, …)."""
    base, extra = divmod(num_gpus, num_servers)
    return Allocation.of((s, base + (1 if s < extra else 0)) for s in range(num_servers))


@dataclass(frozen=True)
class JobProfile:
    """A job's profile.

    Attributes:
        spans: servers spanned by each profiled placement.
        speeds: measured speed at each placement (ideal seconds of work per second, ≤ ~1).
        ideal_s: the job's duration at its best placement, seconds (``total_work``).
    """

    spans: tuple[int, ...]
    speeds: tuple[float, ...]
    ideal_s: float

    @property
    def times_s(self) -> tuple[float, ...]:
        """Estimated execution time at each profiled placement, seconds."""
        return tuple(self.ideal_s / max(s, 1e-9) for s in self.speeds)

    def estimate_speed(self, num_servers: int) -> float:
        """Speed on ``num_servers`` servers, interpolated between profiled spans."""
        spans, speeds = self.spans, self.speeds
        if num_servers <= spans[0]:
            return speeds[0]
        for i in range(1, len(spans)):
            if num_servers <= spans[i]:
                lo, hi = spans[i - 1], spans[i]
                if hi == lo:
                    return speeds[i]
                w = (num_servers - lo) / (hi - lo)
                return (1 - w) * speeds[i - 1] + w * speeds[i]
        return speeds[-1]

    def estimate_time_s(self, num_servers: int, work_s: float | None = None) -> float:
        """Estimated seconds to do ``work_s`` (default all of it) spanning ``num_servers``."""
        work = self.ideal_s if work_s is None else work_s
        return work / max(self.estimate_speed(num_servers), 1e-9)


class Profiler:
    """SCED²'s profiling tool, simulated under `Locality` with noisy mini-batch timings.

    Profiles are a pure function of ``(seed, job_id)`` and the job, and are cached.

    Args:
        gpus_per_server: GPUs per server of the cluster.
        k: placements per job.
        minibatches: mini-batches timed per placement.
        noise: log-normal σ of one mini-batch time.
        seed: seed of the measurement noise.
        model: the locality model the profiler's measurements follow (default `Locality`).
    """

    def __init__(
        self,
        gpus_per_server: int,
        *,
        k: int = K_PROFILES,
        minibatches: int = MINIBATCHES,
        noise: float = NOISE,
        seed: int = 0,
        model: Locality | None = None,
    ) -> None:
        if k < 1 or minibatches < 1:
            raise ValueError(f"profiler needs k >= 1 and minibatches >= 1, got {k}, {minibatches}")
        self.gpus_per_server = gpus_per_server
        self.k = k
        self.minibatches = minibatches
        self.noise = noise
        self.seed = seed
        self.model = model or Locality(gpus_per_server=gpus_per_server)
        self._cache: dict[tuple[int, str, int, float], JobProfile] = {}

    def cannot_profile(self, jobs: Sequence[JobSpec]) -> str | None:
        """Why some of ``jobs`` cannot be profiled (a model the locality model does not know,
        e.g. the kubeflow workload's ``tfjob``), or None: the reason SCED² gives for refusing a
        workload (`dlsched.schedulers.base.BaseScheduler.cannot_run`)."""
        known = self.model.sensitivity
        for spec in jobs:
            if spec.model not in known:
                return (
                    f"job {spec.job_id}'s model {spec.model!r} is not one SCED²'s profiler "
                    f"knows ({', '.join(sorted(known))}): it was made for the locality-"
                    "sensitive GPU jobs of the sched2, philly and trace workloads"
                )
        return None

    def profile(self, spec: JobSpec) -> JobProfile:
        """The job's profile (measured once, then cached by job id, model, GPUs and work)."""
        key = (spec.job_id, spec.model, spec.num_workers, spec.total_work)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        if len(self._cache) > 200_000:
            self._cache.clear()
        g = max(1, spec.num_workers)
        spans = profile_spans(g, self.gpus_per_server, self.k)
        known: dict[int, float] = {}  # spans repeat (a 1-GPU job: 1, 1, 1, 1)
        for span in spans:
            if span not in known:
                known[span] = self.model.speed(spec, spread_allocation(g, span))
        true = [known[span] for span in spans]
        rng = np.random.default_rng([self.seed, spec.job_id])
        speeds: list[float]
        if not any(t <= 0 for t in true):
            # every placement's mini-batches at once: the same draws in the same order, and
            # each row's mean is the mean of that placement's times (the same floats as one
            # placement at a time, tested in tests/rl/test_sched2_profiling.py)
            z = rng.standard_normal((len(spans), self.minibatches))
            times = np.exp(self.noise * z) / np.array(true)[:, None]
            speeds = (1.0 / times.mean(axis=1)).tolist()
        else:
            speeds = []
            for t in true:
                if t <= 0:
                    speeds.append(0.0)
                    continue
                row = np.exp(self.noise * rng.standard_normal(self.minibatches)) / t
                speeds.append(float(1.0 / row.mean()))
        prof = JobProfile(spans, tuple(speeds), float(spec.total_work))
        self._cache[key] = prof
        return prof
