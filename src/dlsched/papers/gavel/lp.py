"""The linear programs of Gavel's policies, solved with HiGHS (its own Python wheel, ``highspy``).

Every policy computes an allocation ``X``: ``X[j, t]`` is the fraction of time job ``j`` should
run on GPU type ``t``. A feasible ``X`` (Gavel §3.1) has

* ``X >= 0``;
* ``sum_t X[j, t] <= 1`` for every job (a job runs on one type at a time);
* ``sum_j scale[j] * X[j, t] <= gpus[t]`` for every type (no type over its GPUs).

The variables are ``X`` flattened row by row (``j * n + t``), followed by any auxiliary
variable a formulation adds (the max-min's ``z``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Problem:
    """One round's inputs.

    Attributes:
        rates: ``(m, n)`` estimated throughput of each job on each GPU type (work units/s at
            its size; 0 where it cannot run).
        scale: ``(m,)`` GPUs each job needs.
        gpus: ``(n,)`` GPUs of each type.
    """

    rates: Array
    scale: Array
    gpus: Array

    @property
    def shape(self) -> tuple[int, int]:
        m, n = self.rates.shape
        return m, n


@dataclass(frozen=True)
class Lp:
    """``min c·x`` subject to ``A x <= upper`` and ``lower_x <= x <= upper_x``, with ``A`` in
    compressed sparse column form (HiGHS's own input: ``start``, ``index``, ``value``; row
    indices ascending within a column, zeros kept, as SciPy's ``csc_array`` gives them)."""

    c: Array
    start: npt.NDArray[np.int32]
    index: npt.NDArray[np.int32]
    value: Array
    upper: Array
    lower_x: Array
    upper_x: Array


def _columns(problem: Problem, per_job: Array, extra_column: bool) -> Lp:
    """The LP of ``X`` (and a last variable ``z`` with ``extra_column``) under the capacity
    rows and one row per job: ``sum_t X[j, t] <= 1`` (rows ``0..m-1``), ``sum_j scale[j]
    X[j, t] <= gpus[t]`` (rows ``m..m+n-1``), and row ``m+n+j`` holding ``per_job[j, t]`` on
    ``X[j, t]`` (and 1 on ``z``). Every ``X`` column has these three entries; the caller sets
    the objective and the right-hand side of the job rows. A job cannot be given time on a type
    where its rate is 0 (upper bound 0)."""
    m, n = problem.shape
    cells = m * n
    job_of, type_of = np.divmod(np.arange(cells, dtype=np.int32), np.int32(n))
    index = np.empty((cells, 3), dtype=np.int32)
    index[:, 0], index[:, 1], index[:, 2] = job_of, m + type_of, m + n + job_of
    value = np.empty((cells, 3))
    value[:, 0], value[:, 1], value[:, 2] = 1.0, problem.scale[job_of], per_job.ravel()
    start = np.arange(0, 3 * cells + 1, 3, dtype=np.int32)
    upper_x = np.where(problem.rates.ravel() > 0, 1.0, 0.0)
    index_flat, value_flat = index.ravel(), value.ravel()
    if extra_column:
        start = np.append(start, np.int32(3 * cells + m))
        index_flat = np.concatenate([index_flat, np.arange(m + n, 2 * m + n, dtype=np.int32)])
        value_flat = np.concatenate([value_flat, np.ones(m)])
        upper_x = np.append(upper_x, np.inf)
    columns = cells + int(extra_column)
    upper = np.concatenate([np.ones(m), problem.gpus.astype(np.float64), np.zeros(m)])
    return Lp(np.zeros(columns), start, index_flat, value_flat, upper, np.zeros(columns), upper_x)


_FEASIBILITY_TOL = 10 * 1e-9**0.5
"""How far outside its bounds or rows HiGHS's answer may be and still count as optimal (SciPy's
``linprog`` check of HiGHS's answer, kept so results match SciPy's)."""


def _run_highs(lp: Lp, interior: bool) -> tuple[int, Array | None]:
    """(status as SciPy's ``linprog`` numbers it: 0 optimal, 2 infeasible, else a failure;
    ``x``) of HiGHS on ``lp``, with the options SciPy's ``linprog(method="highs")`` gives it
    (``highs-ipm`` without crossover nor presolve with ``interior``).

    HiGHS's own Python wheel (``highspy``: its import costs ~10 ms where ``scipy.optimize``'s
    costs 0.3-0.6 s of CPU, most of a small run). ``highspy`` 1.12.0 is the HiGHS release that
    SciPy 1.17 bundles: the same vertices as ``linprog`` (checked bit-for-bit on Gavel's runs).
    Without ``highspy``, SciPy's ``linprog`` (`_run_linprog`).
    """
    try:
        import highspy
    except ImportError:  # a machine with SciPy only
        return _run_linprog(lp, interior)

    highs = highspy.Highs()
    for key, value in (
        ("output_flag", False),
        ("log_to_console", False),
        ("presolve", "off" if interior else "on"),
        ("simplex_strategy", 1),  # dual simplex, as SciPy asks
        *((("solver", "ipm"), ("run_crossover", "off")) if interior else ()),
    ):
        highs.setOptionValue(key, value)
    pass_model(highspy, highs, lp)
    highs.run()
    status = highs.getModelStatus()
    if status == highspy.HighsModelStatus.kInfeasible:
        return 2, None
    if status != highspy.HighsModelStatus.kOptimal:
        return 4, None
    solution = highs.getSolution()
    x = np.array(solution.col_value)
    slack = lp.upper - np.array(solution.row_value)
    tol = _FEASIBILITY_TOL
    inside = (x >= lp.lower_x - tol).all() and (x <= lp.upper_x + tol).all()
    return (0, x) if inside and not (slack < -tol).any() else (4, None)


def _run_linprog(lp: Lp, interior: bool) -> tuple[int, Array | None]:
    """`_run_highs` through SciPy's ``linprog`` (SciPy's own copy of HiGHS)."""
    import warnings

    from scipy.optimize import OptimizeWarning, linprog
    from scipy.sparse import csc_array

    a_ub = csc_array((lp.value, lp.index, lp.start), shape=(len(lp.upper), len(lp.c)))
    with warnings.catch_warnings():  # run_crossover goes to HiGHS as it is, with a warning
        warnings.simplefilter("ignore", OptimizeWarning)
        res = linprog(
            lp.c,
            A_ub=a_ub,
            b_ub=lp.upper,
            bounds=np.column_stack([lp.lower_x, lp.upper_x]),
            method="highs-ipm" if interior else "highs",
            options={"run_crossover": "off", "presolve": False} if interior else {},
        )
    if res.status == 0:
        return 0, np.asarray(res.x, dtype=np.float64)
    return (2 if res.status == 2 else 4), None


def pass_model(highspy: Any, highs: Any, lp: Lp) -> None:
    """Give ``highs`` the model `highs_model` builds, from the arrays themselves (``highspy``'s
    ``passModel`` of pointers: the ``HighsLp`` attributes copy each array element by element,
    ~15 ms for Gavel's LP of 20,000 jobs). The same model: every column continuous (an
    all-continuous integrality is HiGHS's LP), the same arrays (``test_lp_model.py`` checks
    both the model and the solutions).

    Raises:
        RuntimeError: HiGHS refused the model.
    """
    cols, rows = len(lp.c), len(lp.upper)
    status = highs.passModel(
        cols,
        rows,
        len(lp.value),
        int(highspy.MatrixFormat.kColwise),
        int(highspy.ObjSense.kMinimize),
        0.0,
        lp.c,
        lp.lower_x,
        lp.upper_x,
        np.full(rows, -np.inf),
        lp.upper,
        lp.start,
        lp.index,
        lp.value,
        np.zeros(cols, dtype=np.int32),  # kContinuous
    )
    if status != highspy.HighsStatus.kOk:
        raise RuntimeError(f"HiGHS refused the model: {status}")


def highs_model(highspy: Any, lp: Lp) -> Any:
    """``lp`` as a ``highspy.HighsLp`` (column-wise matrix, rows bounded above only): the
    reference of `pass_model`."""
    model = highspy.HighsLp()
    model.num_col_, model.num_row_ = len(lp.c), len(lp.upper)
    model.col_cost_, model.col_lower_, model.col_upper_ = lp.c, lp.lower_x, lp.upper_x
    model.row_lower_, model.row_upper_ = np.full(len(lp.upper), -np.inf), lp.upper
    matrix = model.a_matrix_
    matrix.format_ = highspy.MatrixFormat.kColwise
    matrix.num_col_, matrix.num_row_ = model.num_col_, model.num_row_
    matrix.start_, matrix.index_, matrix.value_ = lp.start, lp.index, lp.value
    return model


def solve(lp: Lp, where: str, interior: bool = False) -> Array | None:
    """HiGHS's solution of ``lp`` (dual simplex after presolve), or None if infeasible.

    With ``interior``, HiGHS's interior-point method without crossover (nor presolve): a point
    inside the optimal face, as the interior-point solver Gavel uses (ECOS) returns, where the
    simplex method returns one of its vertices. Where that method fails (a face with no inside,
    as at the edge of feasibility, can stop it), the simplex method's vertex.

    Raises:
        RuntimeError: HiGHS failed otherwise (unbounded, numerical trouble), naming ``where``.
    """
    status, x = _run_highs(lp, interior) if interior else (4, None)
    if status not in (0, 2):
        status, x = _run_highs(lp, False)
    if status == 2:
        return None
    if x is None:
        raise RuntimeError(f"{where}: HiGHS found no optimal solution")
    return x


def clip(x: Array, problem: Problem) -> Array:
    """``x`` reshaped to ``(m, n)`` and clipped to [0, 1] (as Gavel clips its solver's output)."""
    m, n = problem.shape
    return np.clip(x[: m * n].reshape(m, n), 0.0, 1.0)


def max_min(
    problem: Problem, weights: Array, solver: Callable[[Lp], Array | None] | None = None
) -> Array:
    """Maximise ``min_j weights[j] * sum_t rates[j, t] * scale[j] * X[j, t]`` (Gavel's LAS).

    ``solver`` solves the LP (default: `solve`, a fresh HiGHS; `lp_warm.WarmStart` keeps one).

    One LP over ``X`` and the minimum ``z``, as Gavel's. Its optimum is not unique; HiGHS returns
    a vertex of the optimal face where Gavel's interior-point solver (ECOS) returns a point inside
    it. GPUs the allocation leaves idle are filled by the round mechanism, which schedules jobs of
    zero priority where GPUs remain (a second stage maximising the total weighted throughput was
    tried and moved makespans 10-20 % away from Gavel's: `benchmarks/gavel_side_by_side.py`).
    """
    m, n = problem.shape
    if m == 0:
        return np.zeros((0, n))
    eff = problem.rates * problem.scale[:, None] * weights[:, None]  # (m, n)
    lp = _columns(problem, -eff, extra_column=True)  # z - eff·X[j] <= 0
    lp.c[-1] = -1.0
    x = solve(lp, "max-min fairness") if solver is None else solver(lp)
    if x is None:  # cannot happen: X = 0, z = 0 is feasible
        return np.zeros((m, n))
    return clip(x, problem)


def feasible_with_floor(
    problem: Problem, floor: Array, where: str, interior: bool = False
) -> Array | None:
    """A feasible ``X`` giving job ``j`` at least ``floor[j]`` throughput, or None.

    Which one, among many (Gavel maximises a constant and takes its solver's point): HiGHS's
    first vertex, or with ``interior`` a point inside the feasible set (see `solve`). These
    choices came out closest to Gavel's own runs (`benchmarks/gavel_side_by_side.py`):
    ``interior`` for the makespan policy, the vertex for finish-time fairness.
    """
    lp = _columns(problem, -problem.rates, extra_column=False)
    lp.upper[sum(problem.shape) :] = -floor
    x = solve(lp, where, interior)
    return None if x is None else clip(x, problem)


def bisect_level(
    test: Callable[[float], bool | None], low: float, high: float, rel: float = 0.01
) -> float | None:
    """Smallest level ``v`` in ``[low, high]`` (to a relative ``rel``) where ``test(v)`` is True,
    or None as soon as a test has no answer (None).

    ``test`` must be monotone (True at ``v`` means True above it). ``high`` is multiplied by 10
    until True (at most 12 times).

    Raises:
        RuntimeError: still False at ``high * 10**12``.
    """
    ok = test(high)
    tries = 0
    while ok is False:
        low, high = high, high * 10.0
        ok = test(high)
        tries += 1
        if tries > 12:
            raise RuntimeError(f"no feasible allocation up to {high:g}")
    while ok is not None and high > low * (1.0 + rel):
        mid = (low + high) / 2.0
        ok_mid = test(mid)
        if ok_mid is None:
            ok = None
        elif ok_mid:
            high = mid
        else:
            low = mid
    return None if ok is None else high


def bisect(
    feasible: Callable[[float], Array | None], low: float, high: float, rel: float = 0.01
) -> tuple[float, Array]:
    """Smallest ``v`` in ``[low, high]`` (to a relative ``rel``) with ``feasible(v)`` not None,
    and ``feasible(v)`` there (`bisect_level`'s levels).

    Raises:
        RuntimeError: still infeasible at ``high * 10**12``.
    """
    found: dict[float, Array] = {}

    def test(v: float) -> bool:
        x = feasible(v)
        if x is not None:
            found[v] = x
        return x is not None

    level = bisect_level(test, low, high, rel)
    assert level is not None  # test always answers
    return level, found[level]


def check_feasible(x: Array, problem: Problem, tol: float = 1e-6) -> None:
    """Raise AssertionError if ``x`` breaks a capacity constraint (used by tests)."""
    if (x < -tol).any():
        raise AssertionError("negative time fraction")
    if (x.sum(axis=1) > 1.0 + tol).any():
        raise AssertionError(f"a job gets more than all of the time: {x.sum(axis=1).max()}")
    used = (problem.scale[:, None] * x).sum(axis=0)
    if (used > problem.gpus + tol).any():
        raise AssertionError(f"GPU type over capacity: {used} > {problem.gpus}")


__all__ = ["Problem", "bisect", "bisect_level", "check_feasible", "feasible_with_floor", "max_min"]
