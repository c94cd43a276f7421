"""Interference: multiplicative noise on a job's training speed, per job and interval.

Jobs sharing servers, switches and storage slow each other down in ways no throughput model
captures. DL2 §2.2 (Fig. 4) measured it on 898 production jobs: the standard deviation of a
job's completion time across its runs, divided by the mean, averaged 27.3 % (and exceeded 100 %
for 3.5 % of jobs). The simulator models it by multiplying a job's noise-free speed by a factor
drawn afresh for every job at every scheduling interval (and at every allocation change).

How the knob maps to that figure. ``level`` is the relative standard deviation of the speed
factor within one interval. Progress per interval is then unbiased, and a job that needs ``n``
intervals at a fixed allocation sees independent factors, so its completion time varies with a
coefficient of variation of about ``level / sqrt(n)`` (`completion_cv`); conversely
`level_for_completion_cv` gives the level that would produce a target variation. The default,
`DL2_LEVEL` = 0.273, puts DL2's figure on each interval's speed: a one-interval job varies by
27.3 %, the average DL2 job (147 min ≈ 7.35 intervals of 1,200 s) by about 10 % from
interference alone. The rest of the production figure comes from queueing and allocation
changes, which the simulator models explicitly; putting all of it on speed would need
``level ≈ 0.74`` (0.273·√7.35), where about 4 % of intervals would run below a quarter of their
noise-free speed — too much for a knob whose job is interference.

The factor is log-normal with mean exactly 1 and standard deviation exactly ``level``, so it is
positive by construction; it is further clipped below at `MIN_FACTOR` as a guard.
"""

from __future__ import annotations

import math

import numpy as np

DL2_LEVEL = 0.273
"""Default relative std of the speed factor: DL2 §2.2's 27.3 % average completion-time
variation, applied per interval (see the module docstring)."""

MIN_FACTOR = 0.05
"""Smallest factor ever returned: a job never trains slower than 5 % of its noise-free speed."""


def completion_cv(level: float, intervals: float) -> float:
    """Approximate coefficient of variation of a job's completion time from speed noise alone.

    Args:
        level: relative std of the per-interval speed factor.
        intervals: scheduling intervals the job needs at a fixed allocation (≥ 1).
    """
    return level / math.sqrt(max(intervals, 1.0))


def level_for_completion_cv(cv: float, intervals: float) -> float:
    """Per-interval level giving completion-time variation ``cv`` to a job of ``intervals``."""
    return cv * math.sqrt(max(intervals, 1.0))


class Interference:
    """Draws multiplicative speed factors with mean 1 and relative std ``level``.

    Args:
        level: relative standard deviation of the factor (0 disables noise: factor is 1.0).
        min_factor: lower clip of the factor, > 0.

    Raises:
        ValueError: negative ``level`` or non-positive ``min_factor``.
    """

    def __init__(self, level: float = DL2_LEVEL, min_factor: float = MIN_FACTOR) -> None:
        if level < 0 or not math.isfinite(level):
            raise ValueError(f"noise level must be a finite number >= 0, got {level}")
        if min_factor <= 0:
            raise ValueError(f"min_factor must be > 0, got {min_factor}")
        self.level = float(level)
        self.min_factor = float(min_factor)
        # log-normal: exp(N(mu, sigma^2)) has mean 1 and std `level` for these mu, sigma
        self._sigma = math.sqrt(math.log1p(self.level**2))
        self._mu = -0.5 * self._sigma**2

    def factor(self, rng: np.random.Generator) -> float:
        """One factor (dimensionless, > 0), drawn only from ``rng``.

        With ``level == 0`` it returns 1.0 without touching ``rng``.
        """
        if self.level == 0.0:
            return 1.0
        return max(self.min_factor, math.exp(self._mu + self._sigma * rng.standard_normal()))

    def factors(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` factors at once (same distribution as `factor`)."""
        if self.level == 0.0:
            return np.ones(size)
        draws = np.exp(self._mu + self._sigma * rng.standard_normal(size))
        return np.maximum(draws, self.min_factor)

    def __repr__(self) -> str:
        return f"Interference(level={self.level:g})"
