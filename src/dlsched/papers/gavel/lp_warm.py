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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dlsched.papers.gavel.lp import (
    _FEASIBILITY_TOL,
    Array,
    Lp,
    Problem,
    _columns,
    bisect,
    bisect_level,
    feasible_with_floor,
    pass_model,
    solve,
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
        highs = _quiet_highs(highspy)
        lp = _columns(self._problem, -self._problem.rates, extra_column=False)
        pass_model(highspy, highs, lp)
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
    verdicts: Callable[[Array], bool | None] | None = None,
    allocate: Callable[[Array], Array | None] | None = None,
) -> tuple[float, Array]:
    """`lp.bisect` of ``v -> feasible_with_floor(problem, floor_at(v), where, interior)``, with
    the same result, from warm-started verdicts (or ``verdicts``: whether a floor is feasible,
    e.g. `one_type.FloorCheck.feasible`) and one cold solve (or ``allocate``: that solve's
    allocation at a floor, None where it cannot tell, e.g. `one_type.floor_allocation`).

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

    feasible = FloorVerdicts(problem).feasible if verdicts is None else verdicts

    def verdict(v: float) -> bool | None:
        floor = floor_at(v)
        return False if floor is None else feasible(floor)

    level = bisect_level(verdict, low, high, rel)
    x = None
    if level is not None and allocate is not None:
        floor = floor_at(level)
        x = None if floor is None else allocate(floor)
    if level is not None and x is None:
        x = plain(level)
    if level is None or x is None:
        log.debug("%s: warm verdicts gave no answer or disagreed; plain bisection", where)
        return bisect(plain, low, high, rel=rel)
    return level, x


class WarmStart:
    """One HiGHS kept across a policy's solves of LPs laid out by `lp._columns` (the jobs'
    columns ``j * n + t``, any extra columns last; rows: each job's time, each type's GPUs,
    each job's own row), each solve started from the last one's basis, mapped job by job.

    A job kept from the last solve keeps the status of its columns and of its two rows; a new
    job starts with its columns at zero and its rows basic; the types' rows and the extra
    columns keep theirs. Where departures leave too few basic variables, job-time rows become
    basic; where too many, basic job columns go to zero (HiGHS's simplex repairs the rest).
    Dual simplex from such a basis takes a few iterations where a fresh solve takes hundreds,
    but on an LP with many optima it can end at another optimal vertex than a fresh solve does:
    the allocation is as optimal and as feasible, not the same point.
    """

    def __init__(self) -> None:
        self._highs: object | None = None
        self._last: tuple[dict[int, int], list[object], list[object], int] | None = None

    def solve(self, lp: Lp, keys: Sequence[int], n: int, where: str) -> Array | None:
        """``lp``'s solution (rows of ``keys``, one per job, in order; ``n`` types), or None
        if infeasible; as `lp.solve` (the simplex) where HiGHS is missing or fails warm.

        Raises:
            RuntimeError: as `lp.solve`.
        """
        try:
            import highspy
        except ImportError:
            return solve(lp, where)
        if self._highs is None:
            self._highs = _quiet_highs(highspy)
        highs = self._highs
        pass_model(highspy, highs, lp)
        if self._last is not None:
            basis = self._mapped(highspy, keys, n, len(lp.c), len(lp.upper))
            highs.setBasis(basis)  # type: ignore[attr-defined]
        highs.run()  # type: ignore[attr-defined]
        x = _checked(highspy, highs, lp)
        if x is None:  # not optimal or outside tolerance warm: the fresh solve decides
            self._last = None
            return solve(lp, where)
        basis = highs.getBasis()  # type: ignore[attr-defined]
        self._last = (
            {key: i for i, key in enumerate(keys)},
            list(basis.col_status),
            list(basis.row_status),
            len(keys),
        )
        return x

    def _mapped(self, highspy: Any, keys: Sequence[int], n: int, cols: int, rows: int) -> object:
        assert self._last is not None
        where, last_cols, last_rows, last_m = self._last
        status = highspy.HighsBasisStatus
        m = len(keys)
        col = [status.kLower] * cols
        row = [status.kBasic] * rows
        for i, key in enumerate(keys):
            p = where.get(key)
            if p is not None:
                col[i * n : (i + 1) * n] = last_cols[p * n : (p + 1) * n]
                row[i] = last_rows[p]
                row[m + n + i] = last_rows[last_m + n + p]
        row[m : m + n] = last_rows[last_m : last_m + n]
        extra = cols - m * n
        if extra:
            col[m * n :] = last_cols[len(last_cols) - extra :]
        basic = col.count(status.kBasic) + row.count(status.kBasic)
        for i in range(m):
            if basic >= rows:
                break
            if row[i] != status.kBasic:
                row[i], basic = status.kBasic, basic + 1
        for j in range(m * n):
            if basic <= rows:
                break
            if col[j] == status.kBasic:
                col[j], basic = status.kLower, basic - 1
        basis = highspy.HighsBasis()
        basis.col_status, basis.row_status, basis.valid = col, row, True
        return basis


def _quiet_highs(highspy: Any) -> object:
    highs = highspy.Highs()
    for key, value in (
        ("output_flag", False),
        ("log_to_console", False),
        ("simplex_strategy", 1),  # dual simplex, as `lp.solve`
    ):
        highs.setOptionValue(key, value)
    return highs


def _checked(highspy: Any, highs: Any, lp: Lp) -> Array | None:
    """HiGHS's ``x`` if optimal and inside `lp._FEASIBILITY_TOL` of every bound and row."""
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    solution = highs.getSolution()
    x = np.array(solution.col_value)
    slack = lp.upper - np.array(solution.row_value)
    tol = _FEASIBILITY_TOL
    inside = (x >= lp.lower_x - tol).all() and (x <= lp.upper_x + tol).all()
    return x if inside and not (slack < -tol).any() else None
