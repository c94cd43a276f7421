"""Cheaper solves of Gavel's LPs: HiGHS kept between solves and started from its last basis.

The bisections of finish-time fairness and minimum makespan (`bisect_floor`) ask whether one
matrix admits ever higher or lower floors: only the right-hand side of the job rows changes. A
HiGHS kept for the whole bisection answers each question by dual simplex from the previous
answer's basis (a zero objective makes every basis dual feasible, so these answers take a few
iterations where a fresh solve takes hundreds). The allocation returned is the one the plain
bisection (`lp.bisect` over `lp.feasible_with_floor`) returns: the same cold solve at the same
final level, so only the yes/no answers come from the kept HiGHS, and the allocations are
equal whenever those answers are (they can differ only for a level within HiGHS's tolerances
of the boundary; the plain bisection is rerun then, see `bisect_floor`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from dlsched.papers.gavel.lp import (
    Array,
    Problem,
    _columns,
    bisect,
    feasible_with_floor,
)

log = logging.getLogger(__name__)


class FloorVerdicts:
    """Whether ``problem`` has a feasible ``X`` giving each job at least a floor of throughput
    (`lp.feasible_with_floor`'s LP), from one HiGHS started from its previous basis.

    Without ``highspy`` (SciPy only) there is no verdict (`feasible` returns None)."""

    def __init__(self, problem: Problem) -> None:
        self._rows = np.arange(sum(problem.shape), sum(problem.shape) + problem.shape[0])
        self._problem = problem
        self._highs: object | None = None

    def _start(self) -> object | None:
        try:
            import highspy
        except ImportError:
            return None
        lp = _columns(self._problem, -self._problem.rates, extra_column=False)
        highs = highspy.Highs()
        for key, value in (
            ("output_flag", False),
            ("log_to_console", False),
            ("simplex_strategy", 1),  # dual simplex
        ):
            highs.setOptionValue(key, value)
        model = highspy.HighsLp()
        model.num_col_, model.num_row_ = len(lp.c), len(lp.upper)
        model.col_cost_, model.col_lower_, model.col_upper_ = lp.c, lp.lower_x, lp.upper_x
        model.row_lower_, model.row_upper_ = np.full(len(lp.upper), -np.inf), lp.upper
        matrix = model.a_matrix_
        matrix.format_ = highspy.MatrixFormat.kColwise
        matrix.num_col_, matrix.num_row_ = model.num_col_, model.num_row_
        matrix.start_, matrix.index_, matrix.value_ = lp.start, lp.index, lp.value
        highs.passModel(model)
        return highs

    def feasible(self, floor: Array) -> bool | None:
        """True if feasible, False if not, None where HiGHS gives no verdict."""
        import highspy

        if self._highs is None:
            self._highs = self._start()
            if self._highs is None:
                return None
        highs = self._highs
        change = highs.changeRowBounds  # type: ignore[attr-defined]
        for row, value in zip(self._rows.tolist(), (-floor).tolist(), strict=True):
            change(row, -np.inf, value)  # highspy 1.12 has no changeRowsBounds
        highs.run()  # type: ignore[attr-defined]
        status = highs.getModelStatus()  # type: ignore[attr-defined]
        if status == highspy.HighsModelStatus.kOptimal:
            return True
        if status == highspy.HighsModelStatus.kInfeasible:
            return False
        return None


def bisect_floor(
    problem: Problem,
    floor_at: Callable[[float], Array | None],
    low: float,
    high: float,
    rel: float,
    where: str,
    interior: bool = False,
) -> tuple[float, Array]:
    """`lp.bisect` of ``v -> feasible_with_floor(problem, floor_at(v), where, interior)``, with
    the same result, from warm-started verdicts and one cold solve.

    ``floor_at(v)`` is the floor at level ``v``, or None where ``v`` is infeasible by itself.
    The bisection's arithmetic is `lp.bisect`'s; each level's feasibility comes from
    `FloorVerdicts`; then the allocation is `lp.feasible_with_floor` at the final level (the
    solve the plain bisection's answer came from). If a verdict is missing, or the final solve
    disagrees with its verdict, the plain bisection runs instead.

    Raises:
        RuntimeError: as `lp.bisect` (nothing feasible up to ``high * 10**12``).
    """

    def plain(v: float) -> Array | None:
        floor = floor_at(v)
        return None if floor is None else feasible_with_floor(problem, floor, where, interior)

    verdicts = FloorVerdicts(problem)
    start = (low, high)

    def verdict(v: float) -> bool | None:
        floor = floor_at(v)
        return False if floor is None else verdicts.feasible(floor)

    ok = verdict(high)
    tries = 0
    while ok is False:
        low, high = high, high * 10.0
        ok = verdict(high)
        tries += 1
        if tries > 12:
            raise RuntimeError(f"no feasible allocation up to {high:g}")
    while ok is not None and high > low * (1.0 + rel):
        mid = (low + high) / 2.0
        ok_mid = verdict(mid)
        if ok_mid is None:
            ok = None
        elif ok_mid:
            high = mid
        else:
            low = mid
    x = None if ok is None else plain(high)
    if x is None:
        log.debug("%s: warm verdicts gave no answer or disagreed; plain bisection", where)
        return bisect(plain, *start, rel=rel)
    return high, x
