"""The linear programs of Gavel's policies, solved with SciPy's HiGHS (`scipy.optimize.linprog`).

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
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

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


def capacity_rows(problem: Problem, extra: int = 0) -> tuple[csr_matrix, Array]:
    """``A_ub, b_ub`` of the two capacity constraints, over ``X`` and ``extra`` more variables.

    A job cannot be given time on a type where its rate is 0 (bounds, see `bounds`).
    """
    from scipy.sparse import csr_matrix  # SciPy on first use: `-s fifo` must not load it

    m, n = problem.shape
    cells = np.arange(m * n)
    job_of, type_of = np.divmod(cells, n)
    rows = np.concatenate([job_of, m + type_of])  # sum_t X[j, t] <= 1; sum_j scale X[j, t] <= gpus
    vals = np.concatenate([np.ones(m * n), problem.scale[job_of].astype(np.float64)])
    a = csr_matrix((vals, (rows, np.concatenate([cells, cells]))), shape=(m + n, m * n + extra))
    b = np.concatenate([np.ones(m), problem.gpus.astype(np.float64)])
    return a, b


def _per_job(coef: Array) -> csr_matrix:
    """The ``(m, m*n)`` matrix whose row ``j`` is ``coef[j]`` on job ``j``'s variables."""
    from scipy.sparse import csr_matrix

    m, n = coef.shape
    cells = np.arange(m * n)
    return csr_matrix((coef.ravel(), (cells // n, cells)), shape=(m, m * n))


def bounds(problem: Problem, extra: list[tuple[float | None, float | None]]) -> list:
    """``0 <= X[j, t] <= 1`` (0 where the job's rate on the type is 0), then ``extra``."""
    upper = np.where(problem.rates.ravel() > 0, 1.0, 0.0)
    return [(0.0, float(u)) for u in upper] + extra


def solve(
    c: Array, a_ub: csr_matrix, b_ub: Array, var_bounds: list, where: str, interior: bool = False
) -> Array | None:
    """``linprog(..., method="highs")``'s solution, or None if infeasible.

    With ``interior``, HiGHS's interior-point method without crossover (nor presolve): a point
    inside the optimal face, as the interior-point solver Gavel uses (ECOS) returns, where the
    simplex method returns one of its vertices. Where that method fails (a face with no inside,
    as at the edge of feasibility, can stop it), the simplex method's vertex.

    Raises:
        RuntimeError: HiGHS failed otherwise (unbounded, numerical trouble), naming ``where``.
    """
    import warnings

    from scipy.optimize import OptimizeWarning, linprog

    res = None
    if interior:
        with warnings.catch_warnings():  # run_crossover goes to HiGHS as it is, with a warning
            warnings.simplefilter("ignore", OptimizeWarning)
            res = linprog(
                c,
                A_ub=a_ub,
                b_ub=b_ub,
                bounds=var_bounds,
                method="highs-ipm",
                options={"run_crossover": "off", "presolve": False},
            )
    if res is None or res.status not in (0, 2):
        res = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=var_bounds, method="highs")
    if res.status == 2:
        return None
    if res.status != 0:
        raise RuntimeError(f"{where}: HiGHS: {res.message}")
    return np.asarray(res.x, dtype=np.float64)


def clip(x: Array, problem: Problem) -> Array:
    """``x`` reshaped to ``(m, n)`` and clipped to [0, 1] (as Gavel clips its solver's output)."""
    m, n = problem.shape
    return np.clip(x[: m * n].reshape(m, n), 0.0, 1.0)


def max_min(problem: Problem, weights: Array) -> Array:
    """Maximise ``min_j weights[j] * sum_t rates[j, t] * scale[j] * X[j, t]`` (Gavel's LAS).

    One LP over ``X`` and the minimum ``z``, as Gavel's. Its optimum is not unique; HiGHS returns
    a vertex of the optimal face where Gavel's interior-point solver (ECOS) returns a point inside
    it. GPUs the allocation leaves idle are filled by the round mechanism, which schedules jobs of
    zero priority where GPUs remain (a second stage maximising the total weighted throughput was
    tried and moved makespans 10-20 % away from Gavel's: `benchmarks/gavel_side_by_side.py`).
    """
    from scipy.sparse import csr_matrix, hstack, vstack

    m, n = problem.shape
    if m == 0:
        return np.zeros((0, n))
    eff = problem.rates * problem.scale[:, None] * weights[:, None]  # (m, n)
    a_cap, b_cap = capacity_rows(problem, extra=1)
    a_z = hstack([_per_job(-eff), csr_matrix(np.ones((m, 1)))]).tocsr()  # z - eff·X[j] <= 0
    a_ub = vstack([a_cap, a_z]).tocsr()
    b_ub = np.concatenate([b_cap, np.zeros(m)])
    c = np.zeros(m * n + 1)
    c[-1] = -1.0
    x = solve(c, a_ub, b_ub, bounds(problem, [(0.0, None)]), "max-min fairness")
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
    from scipy.sparse import vstack

    m, n = problem.shape
    a_cap, b_cap = capacity_rows(problem)
    a_ub = vstack([a_cap, _per_job(-problem.rates)]).tocsr()
    b_ub = np.concatenate([b_cap, -floor])
    x = solve(np.zeros(m * n), a_ub, b_ub, bounds(problem, []), where, interior)
    return None if x is None else clip(x, problem)


def bisect(
    feasible: Callable[[float], Array | None], low: float, high: float, rel: float = 0.01
) -> tuple[float, Array]:
    """Smallest ``v`` in ``[low, high]`` (to a relative ``rel``) with ``feasible(v)`` not None.

    ``feasible`` must be monotone (feasible at ``v`` means feasible above it). ``high`` is
    multiplied by 10 until feasible (at most 12 times).

    Raises:
        RuntimeError: still infeasible at ``high * 10**12``.
    """
    best = feasible(high)
    tries = 0
    while best is None:
        low, high = high, high * 10.0
        best = feasible(high)
        tries += 1
        if tries > 12:
            raise RuntimeError(f"no feasible allocation up to {high:g}")
    while high > low * (1.0 + rel):
        mid = (low + high) / 2.0
        x = feasible(mid)
        if x is None:
            low = mid
        else:
            high, best = mid, x
    return high, best


def check_feasible(x: Array, problem: Problem, tol: float = 1e-6) -> None:
    """Raise AssertionError if ``x`` breaks a capacity constraint (used by tests)."""
    if (x < -tol).any():
        raise AssertionError("negative time fraction")
    if (x.sum(axis=1) > 1.0 + tol).any():
        raise AssertionError(f"a job gets more than all of the time: {x.sum(axis=1).max()}")
    used = (problem.scale[:, None] * x).sum(axis=0)
    if (used > problem.gpus + tol).any():
        raise AssertionError(f"GPU type over capacity: {used} > {problem.gpus}")


__all__ = ["Problem", "bisect", "capacity_rows", "check_feasible", "feasible_with_floor", "max_min"]
