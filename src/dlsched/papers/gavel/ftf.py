"""Gavel's finish-time fairness (Themis' metric): minimise the largest ratio ``rho[j]`` of a
job's expected finish time under the allocation to its finish time on an isolated share.

``rho[j] = (since_start[j] + remaining[j] / y[j]) / (isolated_time[j] + remaining[j] / iso[j])``
with ``y[j] = sum_t rates[j, t] * X[j, t]``, ``iso[j]`` the job's throughput on a ``1/m`` share
of every type (Gavel's ``IsolatedPolicy``) and ``isolated_time[j]`` the time its work so far
would have taken on such a share (accumulated at every recompute). For a fixed ``rho`` the
constraint is linear (``y[j] >= remaining[j] / (rho * c[j] - since_start[j])``), so the smallest
``rho`` is found by bisection over LP feasibility (HiGHS) to within 1 %, where Gavel hands the
convex program to cvxpy (the feasibility answers from one HiGHS started from its last basis, the
allocation from a fresh solve at the final ``rho``: `lp_warm.bisect_floor`).
``gavel-ftf-het`` is ``finish_time_fairness_perf``; ``gavel-ftf`` is
``finish_time_fairness``, which rates every type as the V100 (as ``gavel-makespan``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from dlsched.core import JobRun
from dlsched.papers.gavel import one_type
from dlsched.papers.gavel.ftf_clock import Clock, IsolatedClock, PlainIsolatedClock, job_arrays
from dlsched.papers.gavel.lp import Array, Problem
from dlsched.papers.gavel.lp_warm import bisect_floor
from dlsched.papers.gavel.makespan import as_reference_everywhere
from dlsched.papers.gavel.rounds import SETTING, SOURCE, GavelRounds, lp_argument
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import register


def isolated_throughputs(problem: Problem) -> Array:
    """Each job's throughput on ``gpus[t] / m`` GPUs of every type, as time fractions of its
    scale, each row scaled to sum to at most 1 (Gavel's ``IsolatedPolicy``)."""
    m, _ = problem.shape
    share = np.tile(problem.gpus / max(m, 1), (m, 1)) / problem.scale[:, None]
    share /= np.maximum(share.sum(axis=1), 1.0)[:, None]
    return (problem.rates * share).sum(axis=1)


def ftf_allocation(
    problem: Problem,
    remaining: Array,
    since_start: Array,
    isolated_time: Array,
    lp: bool = True,
    iso: Array | None = None,
) -> tuple[float, Array]:
    """``(rho, X)``: the smallest largest finish-time ratio found and an allocation meeting it;
    on one GPU type without ``lp``, each level's feasibility answered exactly
    (`one_type.FloorCheck`) rather than by HiGHS: the same level and allocation unless a
    level lies within HiGHS's tolerance of the boundary. ``iso``: `isolated_throughputs`
    of ``problem`` where the caller has them.

    Raises:
        ValueError: a job has no throughput on an isolated share (it can run nowhere).
    """
    iso = isolated_throughputs(problem) if iso is None else iso
    if (iso <= 0).any():
        raise ValueError("finish-time fairness: a job has no throughput on any GPU type")
    expected = isolated_time + remaining / iso

    def floor_at(rho: float) -> Array | None:
        slack = rho * expected - since_start
        return None if (slack <= 0).any() else remaining / slack

    low = max(float((since_start / expected).max()), 1e-3)
    where = "finish-time fairness"
    if problem.shape[1] != 1 or lp:
        return bisect_floor(problem, floor_at, low, max(2.0 * low, 1.0), 0.01, where)
    exact = one_type.FloorCheck(problem).feasible

    def allocate(floor: Array) -> Array | None:
        return one_type.floor_allocation(problem, floor)

    high = max(2.0 * low, 1.0)
    return bisect_floor(
        problem, floor_at, low, high, 0.01, where, verdicts=exact, allocate=allocate
    )


class GavelFtfHet(GavelRounds):
    """Finish-time fairness from estimated per-type speeds (``finish_time_fairness_perf``)."""

    name = "gavel-ftf-het"
    round_core: ClassVar[str | None] = "Gavel FTF"
    aware: ClassVar[bool] = True

    def __init__(self, lp_one_type: bool = False) -> None:
        self.lp_one_type = lp_one_type
        """On one-type clusters, bisect over HiGHS's answers (``:lp``, as before 2026-11-27)
        rather than `one_type.FloorCheck`'s exact ones (the same results but at a level
        within HiGHS's tolerance of the boundary)."""
        super().__init__()

    def reset(self) -> None:
        super().reset()
        self._clock: Clock | None = None  # chosen at the first allocation (`plain` may change)

    def policy_rates(self, rates: Array, types: tuple[str, ...]) -> Array:
        """The estimates if aware, else each job's V100 estimate on every type."""
        return rates if self.aware else as_reference_everywhere(rates, types)

    def allocation(self, problem: Problem, runs: Sequence[JobRun], now_s: float) -> Array:
        ids, remaining, since = job_arrays(runs, now_s, plain=self.plain)
        if self._clock is None:
            self._clock = PlainIsolatedClock() if self.plain else IsolatedClock()
        isolated = self._clock.advance(ids, remaining)
        iso = isolated_throughputs(problem)
        _, x = ftf_allocation(problem, remaining, since, isolated, lp=self.lp_one_type, iso=iso)
        self._clock.remember(ids, remaining, iso)
        return x


class GavelFtf(GavelFtfHet):
    """Finish-time fairness with every type rated as the V100 (``finish_time_fairness``)."""

    name = "gavel-ftf"
    round_core: ClassVar[str | None] = "Gavel FTF"
    aware: ClassVar[bool] = False


_SOURCE = f"{SOURCE}; Themis (Mahajan et al., NSDI 2020)"


@register(
    "gavel-ftf-het",
    setting=SETTING,
    source=_SOURCE,
    description="minimise the worst finish-time ratio to an isolated share, per GPU type",
    argument=("lp", lp_argument),
)
def _make_het(arg: str | None) -> Scheduler:
    return GavelFtfHet(lp_one_type=arg is not None)


@register(
    "gavel-ftf",
    setting=SETTING,
    source=_SOURCE,
    description="finish-time fairness with GPU types treated as the V100, in rounds",
    argument=("lp", lp_argument),
)
def _make(arg: str | None) -> Scheduler:
    return GavelFtf(lp_one_type=arg is not None)
