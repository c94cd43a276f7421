"""Gavel's policies on a cluster of one GPU type, without an LP.

With one type, ``X`` is one column: job ``j`` gets a fraction ``X[j]`` of its ``scale[j]`` GPUs,
``0 <= X[j] <= cap[j]`` (``cap`` 1, or 0 where the job's rate is 0) and ``sum_j scale[j] X[j]
<= G``. Every policy's problem then has an ``O(m log m)`` answer (`water_fill`):

* **max-min fairness** (`max_min`): maximise ``min_j eff[j] X[j]``. Raising a common level
  ``z`` with ``X[j] = min(cap[j], z / eff[j])`` until the GPUs are used up (water-filling)
  gives the lexicographic max-min allocation, whose smallest ``eff[j] X[j]`` is the LP's
  optimum. When the level stays below every cap (more jobs than GPUs, as in a long queue) the
  LP's optimum is unique (``sum_j scale[j] X[j] >= G`` at the optimum forces every
  ``eff[j] X[j]`` to the level) and this is it, up to rounding: HiGHS's floats differ from
  ``z / eff[j]`` in the last bits for some jobs. Otherwise the LP has many optima; the
  policies then solve the LP (few jobs: a cheap solve) and keep HiGHS's vertex.
* **a floor of throughput per job** (the bisections of finish-time fairness and makespan,
  `FloorCheck`): feasible exactly when every floor is within reach (``floor[j] <= rate[j]``)
  and the floors' GPUs fit, ``sum_j scale[j] floor[j] / rate[j] <= G``: a sum and a
  comparison where the LP takes a dual simplex solve. The bisection then asks HiGHS once, at
  the level found, for the allocation, so it is the LP path's allocation whenever the answers
  agree (they can differ only for a level within HiGHS's tolerance, ~1e-7, of the boundary).
  That allocation (`floor_allocation`) is, for HiGHS 1.12 (``highspy`` 1.12.0, its default
  options, as `lp.solve` passes them), ``X[j] = floor[j] / rate[j]`` or 0:

  1. Its presolve (``HPresolve::singletonRow``) drops job ``j``'s floor row as redundant when
     ``0 <= -floor[j] + 1e-7`` (its primal feasibility tolerance), and otherwise turns it into
     the lower bound ``floor[j] / rate[j]`` on ``X[j]`` (when that exceeds ``1e-7 / max(1,
     rate[j])``; else, or within tolerance of 1, HiGHS decides: None). Every column (no
     cost, a positive coefficient in the GPUs' row only) is then fixed at its lower bound and
     the LP reduces to nothing.
  2. After postsolve, HiGHS runs the dual simplex on the original LP *scaled* from the
     postsolved basis. A dropped row whose ``floor[j] * row_scale[j]`` exceeds 1e-7
     (`highs_scale.floor_row_scales`, powers of 2) is violated there: one pivot each brings
     ``X[j]`` in at ``floor[j] / rate[j]``; the other dropped rows leave ``X[j] = 0``. A kept
     row's ``X[j]`` is basic, computed from its floor row alone: the same division (the scale
     factors are powers of 2).

  `floor_allocation` leaves to HiGHS every problem with a floor between the tolerance and a
  bound it does not tighten, a share above ``1 - MARGIN``, a rate of 0, the GPUs short, or a
  scaling `highs_scale` cannot reproduce with certainty. Checked bit for bit against HiGHS
  on every final allocation of two whole ``philly:6214e9`` runs (``gavel-ftf`` and
  ``-het``), on drawn problems with floors set on either side of ``1e-7 / row_scale[j]``,
  and by ``test_one_type.py``.

The LP paths are kept (``gavel-las:lp`` and the like); ``test_one_type.py`` checks these answers
against HiGHS's on drawn problems.
"""

from __future__ import annotations

import numpy as np

from dlsched.papers.gavel import highs_scale
from dlsched.papers.gavel.lp import Array, Problem


def water_fill(need: Array, scale: Array, cap: Array, gpus: float) -> Array:
    """``X[j] = min(cap[j], level * need[j])`` for the largest ``level`` with ``sum_j scale[j]
    X[j] <= gpus`` (every ``X[j] = cap[j]`` if they all fit).

    Args:
        need: ``(m,)`` how fast each job's share grows with the level (>= 0; 0 gets nothing).
        scale: ``(m,)`` GPUs each job needs.
        cap: ``(m,)`` largest time fraction of each job (0 or 1).
        gpus: GPUs of the type.
    """
    m = len(need)
    cap = np.where(need > 0, cap, 0.0)
    if float((scale * cap).sum()) <= gpus:
        return cap.copy()
    # Each job stops growing at level cap / need. With the stops sorted, the GPUs used at the
    # i-th stop are (the first i jobs' caps) + stop_i * (the rest's scale * need): nondecreasing,
    # so the level that uses them up lies after the last stop where they still fit.
    with np.errstate(divide="ignore", invalid="ignore"):
        stop = np.where(need > 0, cap / need, np.inf)
    order = np.argsort(stop, kind="stable")
    stop_sorted = stop[order]
    capped = np.concatenate([[0.0], np.cumsum((scale * cap)[order])])
    rest = np.concatenate([np.cumsum((scale * need)[order][::-1])[::-1], [0.0]])
    finite = stop_sorted < np.inf
    used = capped[:m][finite] + stop_sorted[finite] * rest[:m][finite]
    k = int(np.searchsorted(used, gpus, side="right"))
    z = (gpus - capped[k]) / rest[k] if rest[k] > 0 else 0.0
    return np.minimum(cap, z * need)


def _caps(problem: Problem) -> tuple[Array, Array]:
    """(the one column's rates, each job's cap: 1 where its rate is above 0, else 0)."""
    rates = problem.rates[:, 0]
    return rates, np.where(rates > 0, 1.0, 0.0)


def max_min(problem: Problem, weights: Array, unique_only: bool = False) -> Array | None:
    """`lp.max_min` on a one-type problem: the lexicographic max-min allocation of
    ``eff[j] = weights[j] * rates[j] * scale[j]`` (an optimum of Gavel's LP). With
    ``unique_only``, None where the LP's optimum is not unique (every job gets all of its time
    before the GPUs run out, or a job cannot run): there the LP's vertex is another optimum."""
    m, n = problem.shape
    assert n == 1, "one GPU type"
    if m == 0:
        return np.zeros((0, 1))
    rates, cap = _caps(problem)
    eff = weights * rates * problem.scale
    if unique_only and not (eff > 0).all():
        return None
    with np.errstate(divide="ignore"):
        need = np.where(eff > 0, 1.0 / eff, 0.0)
    x = water_fill(need, problem.scale, cap, float(problem.gpus[0]))
    if unique_only and not (x < cap).all():
        return None
    return x[:, None]


PRIMAL_TOL = 1e-7
"""HiGHS's primal feasibility tolerance (its default): a floor at or below it is dropped by
presolve, and restored by the simplex where its scaled violation exceeds it."""
MARGIN = 1e-6
"""Shares above ``1 - MARGIN`` go to HiGHS (`floor_allocation`): within ``1e-7 / coefficient``
of 1 its presolve may fix the share at 1."""


def floor_allocation(problem: Problem, floor: Array) -> Array | None:
    """HiGHS's allocation for `lp.feasible_with_floor` on a one-type problem (see the module
    doc): ``X[j] = floor[j] / rate[j]``, or 0 where HiGHS drops job ``j``'s floor and leaves it
    dropped (``(m, 1)``); None where HiGHS must say (a floor it neither drops nor turns into a
    bound, a share above ``1 - MARGIN``, a rate of 0 or out of ``[1e-6, 1e6]``, the GPUs
    short, a scaling `highs_scale.floor_row_scales` cannot tell)."""
    rates, scale = problem.rates[:, 0], problem.scale
    if not (np.isfinite(floor).all() and (rates >= 1e-6).all() and (rates <= 1e6).all()):
        return None
    if not ((floor >= 0).all() and ((floor == 0) | (floor >= 1e-200)).all()):
        return None  # no floor so small that a scaled one would be subnormal
    if not ((scale >= 1e-6).all() and (scale <= 1e6).all()):
        return None
    x = floor / rates
    if (x > 1.0 - MARGIN).any() or float((scale * x).sum()) > float(problem.gpus[0]):
        return None
    dropped = floor <= PRIMAL_TOL  # `0 <= -floor + tol` in singletonRow: the same test
    if (~dropped & ~(x > PRIMAL_TOL / np.maximum(1.0, rates))).any():
        return None  # kept but no bound: HiGHS's path not modelled
    if (dropped & (floor > 0)).any():
        row_scale = highs_scale.floor_row_scales(rates, scale)
        if row_scale is None:
            return None
        x = np.where(dropped & ~(floor * row_scale > PRIMAL_TOL), 0.0, x)
    return x[:, None]


class FloorCheck:
    """Whether a one-type problem has an ``X`` giving job ``j`` at least ``floor[j]``
    throughput (`lp.feasible_with_floor`'s question), answered exactly."""

    def __init__(self, problem: Problem) -> None:
        assert problem.shape[1] == 1, "one GPU type"
        self._rates, self._cap = _caps(problem)
        self._scale = problem.scale
        self._gpus = float(problem.gpus[0])

    def _fractions(self, floor: Array) -> Array | None:
        """Each job's smallest time fraction for its floor, or None where one exceeds 1.

        A job whose rate is 0 is left out (0): no level meets its floor, where the LP accepts
        the level at which the floor falls within HiGHS's tolerance (~1e-7); such a job can
        run nowhere, and the run stalls either way."""
        with np.errstate(divide="ignore", invalid="ignore"):
            need = np.where((floor > 0) & (self._cap > 0), floor / self._rates, 0.0)
        return None if (need > 1.0).any() else need

    def feasible(self, floor: Array) -> bool:
        need = self._fractions(floor)
        return need is not None and float((self._scale * need).sum()) <= self._gpus


def centre(problem: Problem, floor: Array, tol: float = 1e-13) -> Array:
    """The analytic centre of a one-type problem's floor set: the ``X`` maximising
    ``sum_j [log(X[j] - a[j]) + log(cap[j] - X[j])] + log(G - sum_j scale[j] X[j])``, with
    ``a[j] = floor[j] / rate[j]`` the smallest time fraction meeting job ``j``'s floor
    (`FloorCheck`'s; jobs that cannot run get 0). A point inside the feasible set as the
    interior-point solve is (`lp.feasible_with_floor` with ``interior``), but another one:
    that solver's point is not this centre (the ``gavel-makespan:centre`` variant, not the
    default).

    Given the capacity row's multiplier ``mu`` (``1 / (G - sum_j scale[j] X[j])``), each
    job's optimality condition ``1/d - 1/(h - d) = mu scale[j]`` (``d = X[j] - a[j]``, ``h =
    cap[j] - a[j]``) is a quadratic with one root in ``[0, h]``; ``mu`` is the root of an
    increasing convex function of one variable, found by Newton's method from the right
    (monotone) to a relative ``tol``.

    Raises:
        ValueError: the floors are infeasible (`FloorCheck.feasible` is False).
    """
    assert problem.shape[1] == 1, "one GPU type"
    check = FloorCheck(problem)
    a = check._fractions(floor)
    if a is None or not check.feasible(floor):
        raise ValueError("centre: the floors are infeasible")
    scale, h = problem.scale, np.maximum(check._cap - a, 0.0)
    room = check._gpus - float((scale * a).sum())  # sums without BLAS: its threads vary
    sh = scale * h
    count = int(np.count_nonzero(sh > 0))
    if count == 0 or room <= 0:
        return a[:, None]

    def step(mu: float) -> tuple[float, Array]:
        q = mu * sh
        root = np.sqrt(q * q + 4.0)
        d = 2.0 * h / (q + 2.0 + root)
        left = room - float((scale * d).sum())
        # phi(mu) = mu * left - 1; its derivative: left - mu * sum(scale * dd/dmu)
        slope = left + mu * float((2.0 * sh * sh * (1.0 + q / root) / (q + 2.0 + root) ** 2).sum())
        return mu - (mu * left - 1.0) / slope, d

    mu = (count + 1) / room  # phi >= 0 here (each d <= 1 / (mu scale)): right of the root
    for _ in range(100):
        nxt, d = step(mu)
        if not nxt < mu * (1.0 - tol):  # converged (Newton from the right only decreases)
            break
        mu = nxt
    return (a + d)[:, None]
