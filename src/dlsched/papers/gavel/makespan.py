"""Gavel's minimum makespan: the smallest ``T`` such that every active job can finish its
remaining work within ``T`` (``sum_t rates[j, t] * X[j, t] >= remaining[j] / T``).

``gavel-makespan-het`` is Gavel's ``min_total_duration_perf``; ``gavel-makespan`` its
``min_total_duration``, which rates every type as the job's fastest (Gavel hard-codes the V100,
its fastest type). ``T`` is found by bisection over LP feasibility (HiGHS), from Gavel's range
[100 s, 10**6 s] to within 5 %, the range growing tenfold while nothing is feasible.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from dlsched.core import JobRun
from dlsched.papers.gavel.lp import Array, Problem, bisect, feasible_with_floor
from dlsched.papers.gavel.rounds import SETTING, SOURCE, GavelRounds
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import register


def makespan_allocation(problem: Problem, remaining: Array) -> tuple[float, Array]:
    """``(T, X)``: the smallest makespan found (s) and an allocation meeting it."""

    def meets(t: float) -> Array | None:
        return feasible_with_floor(problem, remaining / t, "min makespan", most_time=True)

    return bisect(meets, 100.0, 1e6, rel=0.05)


def fastest_everywhere(rates: Array) -> Array:
    """Each row's largest rate in every column (Gavel's agnostic policies rate every type as
    the V100, its fastest)."""
    return np.repeat(rates.max(axis=1, keepdims=True), rates.shape[1], axis=1)


class GavelMakespanHet(GavelRounds):
    """Minimum makespan from estimated per-type speeds (``min_total_duration_perf``)."""

    name = "gavel-makespan-het"
    aware: ClassVar[bool] = True

    def policy_rates(self, rates: Array) -> Array:
        """The estimates if aware, else each job's fastest estimate on every type."""
        return rates if self.aware else fastest_everywhere(rates)

    def allocation(self, problem: Problem, runs: Sequence[JobRun], now_s: float) -> Array:
        remaining = np.array([r.remaining_work(now_s) for r in runs])
        return makespan_allocation(problem, remaining)[1]


class GavelMakespan(GavelMakespanHet):
    """Minimum makespan with every type rated as the job's fastest (``min_total_duration``)."""

    name = "gavel-makespan"
    aware: ClassVar[bool] = False


@register(
    "gavel-makespan-het",
    setting=SETTING,
    source=SOURCE,
    description="time fractions that finish the active jobs soonest, per GPU type, in rounds",
)
def _make_het(_arg: str | None) -> Scheduler:
    return GavelMakespanHet()


@register(
    "gavel-makespan",
    setting=SETTING,
    source=SOURCE,
    description="minimum makespan with GPU types treated as the fastest, in rounds",
)
def _make(_arg: str | None) -> Scheduler:
    return GavelMakespan()
