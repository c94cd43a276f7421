"""Gavel's minimum makespan: the smallest ``T`` such that every active job can finish its
remaining work within ``T`` (``sum_t rates[j, t] * X[j, t] >= remaining[j] / T``).

``gavel-makespan-het`` is Gavel's ``min_total_duration_perf``; ``gavel-makespan`` its
``min_total_duration``, which rates every type as the V100 (Gavel hard-codes it: the type job
durations are drawn for; some jobs run faster on a P100 or K80) or, on a cluster without V100s,
as the job's fastest. ``T`` is found by bisection over LP feasibility (HiGHS; a point inside
the feasible set, as Gavel's interior-point solver returns for its constant objective: see
`lp.solve`), from Gavel's range [100 s, 10**6 s] to within 5 %, the range growing tenfold while
nothing is feasible (the feasibility answers from one HiGHS started from its last basis, the
allocation from the interior solve at the final ``T``: `lp_warm.bisect_floor`).

``:centre`` (a variant, not the default: other results) takes on one GPU type, at the same
``T``, the analytic centre of the feasible set in closed form (`one_type.centre`) instead of
HiGHS's interior point: another point inside the same set, ~1-2 ms where HiGHS's interior
point takes ~0.1 s at 20,000 waiting jobs (``philly:6214e9`` makes ~4,000 such allocations).
On several GPU types it is the default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from dlsched.core import JobRun
from dlsched.papers.gavel import one_type
from dlsched.papers.gavel.books import remaining_works
from dlsched.papers.gavel.lp import Array, Problem, bisect_level
from dlsched.papers.gavel.lp_warm import bisect_floor
from dlsched.papers.gavel.rounds import SETTING, SOURCE, GavelRounds, lp_argument
from dlsched.papers.gavel.workload import REFERENCE_TYPE
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import register


def makespan_allocation(
    problem: Problem, remaining: Array, lp: bool = True, centre: bool = False
) -> tuple[float, Array]:
    """``(T, X)``: the smallest makespan found (s) and an allocation meeting it; on one GPU
    type without ``lp``, each level's feasibility answered exactly (`one_type.FloorCheck`)
    rather than by HiGHS: the same level and allocation unless a level lies within HiGHS's
    tolerance of the boundary; and with ``centre`` too, the allocation at that level is the
    analytic centre (`one_type.centre`: the ``:centre`` variant) rather than HiGHS's point."""

    def floor_at(t: float) -> Array:
        return remaining / t

    exact = one_type.FloorCheck(problem).feasible if problem.shape[1] == 1 and not lp else None
    if exact is not None and centre:
        level = bisect_level(lambda t: exact(floor_at(t)), 100.0, 1e6, 0.05)
        assert level is not None  # the exact check always answers
        return level, one_type.centre(problem, floor_at(level))
    where = "min makespan"
    return bisect_floor(problem, floor_at, 100.0, 1e6, 0.05, where, True, verdicts=exact)


def as_reference_everywhere(rates: Array, types: tuple[str, ...]) -> Array:
    """Each row's rate on the V100 in every column (Gavel's agnostic FTF and makespan policies
    hard-code it), or its largest rate where the types have no V100."""
    column = (
        rates[:, [types.index(REFERENCE_TYPE)]]
        if REFERENCE_TYPE in types
        else rates.max(axis=1, keepdims=True)
    )
    return np.repeat(column, rates.shape[1], axis=1)


class GavelMakespanHet(GavelRounds):
    """Minimum makespan from estimated per-type speeds (``min_total_duration_perf``)."""

    name = "gavel-makespan-het"
    round_core: ClassVar[str | None] = "Gavel makespan"
    aware: ClassVar[bool] = True

    def __init__(self, lp_one_type: bool = False, centre: bool = False) -> None:
        self.lp_one_type = lp_one_type
        """On one-type clusters, bisect over HiGHS's answers (``:lp``, as before 2026-11-27)
        rather than `one_type.FloorCheck`'s exact ones (the same results but at a level
        within HiGHS's tolerance of the boundary)."""
        self.centre = centre
        """On one-type clusters, the analytic centre at the level found (``:centre``, a
        variant with other results: `one_type.centre`) rather than HiGHS's interior point."""
        super().__init__()

    def policy_rates(self, rates: Array, types: tuple[str, ...]) -> Array:
        """The estimates if aware, else each job's V100 estimate on every type."""
        return rates if self.aware else as_reference_everywhere(rates, types)

    def allocation(self, problem: Problem, runs: Sequence[JobRun], now_s: float) -> Array:
        remaining = remaining_works(runs, now_s)
        return makespan_allocation(problem, remaining, self.lp_one_type, self.centre)[1]


class GavelMakespan(GavelMakespanHet):
    """Minimum makespan with every type rated as the V100 (``min_total_duration``)."""

    name = "gavel-makespan"
    round_core: ClassVar[str | None] = "Gavel makespan"
    aware: ClassVar[bool] = False


def _argument(name: str, arg: str) -> None:
    """The check of the argument: ``lp`` (`lp_argument`) or ``centre`` (the variant)."""
    if arg != "centre":
        lp_argument(name, arg)


@register(
    "gavel-makespan-het",
    setting=SETTING,
    source=SOURCE,
    description="time fractions that finish the active jobs soonest, per GPU type, in rounds",
    argument=("centre | lp", _argument),
)
def _make_het(arg: str | None) -> Scheduler:
    return GavelMakespanHet(lp_one_type=arg == "lp", centre=arg == "centre")


@register(
    "gavel-makespan",
    setting=SETTING,
    source=SOURCE,
    description="minimum makespan with GPU types treated as the V100, in rounds",
    argument=("centre | lp", _argument),
)
def _make(arg: str | None) -> Scheduler:
    return GavelMakespan(lp_one_type=arg == "lp", centre=arg == "centre")
