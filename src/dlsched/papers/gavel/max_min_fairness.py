"""Gavel's LAS: max-min fairness over time fractions, heterogeneity-aware or agnostic.

``gavel-las-het`` is Gavel's ``max_min_fairness_perf``: maximise the smallest normalised
effective throughput ``sum_t rates[j, t] * scale[j] * X[j, t] / proportional[j]``, where
``proportional[j]`` is the job's throughput under an equal share of every type (Gavel's
``ProportionalPolicy``). ``gavel-las`` is Gavel's ``max_min_fairness``: the same with every rate
1.0 (types look alike). Solved by `dlsched.papers.gavel.lp.max_min` (one LP, HiGHS), through
Gavel's round-based mechanism (`GavelRounds`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from dlsched.core import JobRun
from dlsched.papers.gavel.lp import Array, Problem, max_min
from dlsched.papers.gavel.rounds import SETTING, SOURCE, GavelRounds
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import register


def proportional_throughputs(problem: Problem) -> Array:
    """Each job's throughput with an equal share of each type: ``X[j, t] = gpus[t] / m``,
    scaled so the largest row sums to 1 (Gavel's ``ProportionalPolicy``)."""
    m = problem.shape[0]
    share = np.tile(problem.gpus / max(m, 1), (m, 1))
    share /= max(share.sum(axis=1).max(), 1e-12)
    return (problem.rates * share).sum(axis=1)


def las_allocation(problem: Problem) -> Array:
    """Gavel's max-min fairness allocation of ``problem`` (priority weights all 1)."""
    proportional = proportional_throughputs(problem)
    weights = np.where(proportional > 0, 1.0 / np.maximum(proportional, 1e-12), 0.0)
    return max_min(problem, weights)


class GavelLasHet(GavelRounds):
    """Heterogeneity-aware LAS (Gavel's ``max_min_fairness_perf``), in rounds."""

    name = "gavel-las-het"
    aware: ClassVar[bool] = True

    def allocation(self, problem: Problem, runs: Sequence[JobRun], now_s: float) -> Array:
        return las_allocation(problem)


class GavelLas(GavelLasHet):
    """Heterogeneity-agnostic LAS (Gavel's ``max_min_fairness``): every type rated 1.0."""

    name = "gavel-las"
    aware: ClassVar[bool] = False


@register(
    "gavel-las-het",
    setting=SETTING,
    source=SOURCE,
    description="max-min fair time fractions over GPU types from estimated speeds, in rounds",
)
def _make_het(_arg: str | None) -> Scheduler:
    return GavelLasHet()


@register(
    "gavel-las",
    setting=SETTING,
    source=SOURCE,
    description="max-min fair time fractions, GPU types treated alike, in rounds",
)
def _make(_arg: str | None) -> Scheduler:
    return GavelLas()
