"""`one_type.centre` (``gavel-makespan:centre``) is inside the floor set and its analytic
centre, at the makespan level the default path finds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.papers.gavel import one_type
from dlsched.papers.gavel.lp import Array, Problem, check_feasible
from dlsched.papers.gavel.makespan import makespan_allocation
from dlsched.papers.gavel.test_one_type import one_type_problems


def _barrier(problem: Problem, floor: Array, x: Array) -> float:
    """The centre's objective: sum of the logs of every slack (-inf outside)."""
    rates, cap = problem.rates[:, 0], np.where(problem.rates[:, 0] > 0, 1.0, 0.0)
    runs = cap > 0
    a = np.where(runs & (floor > 0), floor / np.where(runs, rates, 1.0), 0.0)
    slacks = np.concatenate(
        [x[runs] - a[runs], cap[runs] - x[runs], [problem.gpus[0] - (problem.scale * x).sum()]]
    )
    return -np.inf if (slacks <= 0).any() else float(np.log(slacks).sum())


@settings(max_examples=60, deadline=None)
@given(problem=one_type_problems(most=200), seed=st.integers(0, 1000))
def test_the_centre_is_feasible_and_no_nearby_point_is_more_central(
    problem: Problem, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    remaining = rng.uniform(100.0, 1e5, problem.shape[0])
    level, x = makespan_allocation(problem, remaining, lp=False, centre=True)
    runs = problem.rates[:, 0] > 0
    if runs.all():  # else HiGHS refuses the exact check's level and the default bisects on
        assert level == makespan_allocation(problem, remaining, lp=False)[0]
    floor = remaining / level
    check_feasible(x, problem)
    assert (x[~runs] == 0).all()
    assert (problem.rates[:, 0] * x[:, 0] >= floor * (1 - 1e-9))[runs].all()
    best = _barrier(problem, floor, x[:, 0])
    for _ in range(20):  # small moves along random directions lower the objective
        move = rng.normal(size=problem.shape[0]) * runs * 1e-4 * rng.random()
        assert _barrier(problem, floor, x[:, 0] + move) <= best + 1e-9


def test_the_centre_by_hand() -> None:
    """Two 1-GPU jobs, floors 0 and 1/2 of their time on 2 GPUs: with mu the capacity row's
    multiplier, 1/x - 1/(1-x) = mu and 1/(y-1/2) - 1/(1-y) = mu, 2 - x - y = 1/mu."""
    problem = Problem(np.ones((2, 1)), np.ones(2), np.array([2.0]))
    x, y = one_type.centre(problem, np.array([0.0, 0.5]))[:, 0]
    mu = 1.0 / (2.0 - x - y)
    assert 1 / x - 1 / (1 - x) == pytest.approx(mu, rel=1e-9)
    assert 1 / (y - 0.5) - 1 / (1 - y) == pytest.approx(mu, rel=1e-9)
    assert 0 < x < 1 and 0.5 < y < 1


def test_the_centre_refuses_infeasible_floors() -> None:
    problem = Problem(np.ones((2, 1)), np.ones(2), np.array([1.0]))
    with pytest.raises(ValueError, match="infeasible"):
        one_type.centre(problem, np.array([0.6, 0.6]))


def test_on_several_types_the_variant_is_the_default() -> None:
    rates = np.array([[1.0, 0.5], [2.0, 1.0], [1.0, 3.0]])
    problem = Problem(rates, np.array([1.0, 2.0, 1.0]), np.array([2.0, 2.0]))
    remaining = np.array([1e3, 5e3, 2e4])
    level, x = makespan_allocation(problem, remaining, lp=False, centre=True)
    want_level, want = makespan_allocation(problem, remaining, lp=False)
    assert level == want_level
    assert x.tobytes() == want.tobytes()
