"""One-type answers (`one_type`) against HiGHS's LPs (`lp`) on drawn problems."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.papers.gavel import highs_scale, one_type
from dlsched.papers.gavel.ftf import ftf_allocation
from dlsched.papers.gavel.lp import Array, Problem, check_feasible, feasible_with_floor
from dlsched.papers.gavel.makespan import makespan_allocation
from dlsched.papers.gavel.max_min_fairness import las_allocation, proportional_throughputs


@st.composite
def one_type_problems(draw: st.DrawFn, most: int = 40) -> Problem:
    """Up to ``most`` jobs on one type: scales 1-8, rates in (0, 3] (some 0 where
    ``zero_rates``), 1-64 GPUs (fewer or more GPUs than the jobs ask for)."""
    m = draw(st.integers(1, most))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.05, 3.0, (m, 1))
    if draw(st.booleans()):
        rates[rng.random(m) < 0.15] = 0.0
    scale = rng.choice([1.0, 1.0, 2.0, 4.0, 8.0], m)
    gpus = np.array([float(draw(st.integers(1, 64)))])
    return Problem(rates, scale, gpus)


def _weights(problem: Problem) -> Array:
    """`las_allocation`'s weights: 1 / each job's proportional throughput (0 where none)."""
    proportional = proportional_throughputs(problem)
    weights: Array = np.where(proportional > 0, 1.0 / np.maximum(proportional, 1e-12), 0.0)
    return weights


def _eff(problem: Problem) -> Array:
    """Gavel LAS's normalised throughput per unit of ``X``."""
    eff: Array = _weights(problem) * problem.rates[:, 0] * problem.scale
    return eff


@settings(max_examples=60, deadline=None)
@given(problem=one_type_problems())
def test_water_filled_max_min_is_an_optimum_of_the_lp(problem: Problem) -> None:
    fast = one_type.max_min(problem, _weights(problem))
    assert fast is not None
    highs = las_allocation(problem, lp=True)
    check_feasible(fast, problem, tol=1e-9)
    assert (fast[problem.rates[:, 0] == 0] == 0).all()
    eff = _eff(problem)
    best, got = (eff * highs[:, 0]).min(), (eff * fast[:, 0]).min()
    assert abs(got - best) <= 1e-9 * max(1.0, abs(best)), (got, best)
    # the lexicographic max-min uses every GPU unless every job that can run has all its time
    runs = problem.rates[:, 0] > 0
    used = float((problem.scale * fast[:, 0]).sum())
    assert used >= problem.gpus[0] - 1e-9 or (fast[runs] >= 1.0 - 1e-12).all()


@settings(max_examples=40, deadline=None)
@given(problem=one_type_problems(most=200))
def test_where_the_lp_optimum_is_unique_it_is_highs_point(problem: Problem) -> None:
    eff = _eff(problem)
    runs = eff > 0
    level = problem.gpus[0] / float((problem.scale[runs] / eff[runs]).sum()) if runs.any() else 0
    weights = _weights(problem)
    unique = runs.all() and level < float(eff.min()) * (1 - 1e-9)
    if not runs.all() or level > float(eff.min()) * (1 + 1e-9):  # many optima
        assert one_type.max_min(problem, weights, unique_only=True) is None
    if not unique:
        return
    assert one_type.max_min(problem, weights, unique_only=True) is not None
    fast = las_allocation(problem, lp=False)
    highs = las_allocation(problem, lp=True)
    np.testing.assert_allclose(fast, highs, rtol=1e-9, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(problem=one_type_problems(), seed=st.integers(0, 1000), load=st.floats(0.9, 1.1))
def test_floor_check_answers_as_highs(problem: Problem, seed: int, load: float) -> None:
    """Floors whose GPUs are ``load`` times the type's (near the boundary, where a sloppy
    answer would show)."""
    rng = np.random.default_rng(seed)
    runs = problem.rates[:, 0] > 0
    rate = np.where(runs, problem.rates[:, 0], 1.0)
    floor = np.where(runs, rng.uniform(0.0, 1.0, problem.shape[0]), 0.0)
    used = float((problem.scale * floor / rate).sum())
    if used > 0:
        floor *= load * problem.gpus[0] / used
    need = np.where(runs, floor / rate, 0.0)
    margin = min(abs(float((problem.scale * need).sum()) - problem.gpus[0]), *abs(need - 1.0))
    if margin > 1e-6:  # away from the boundary, where HiGHS's tolerance decides
        highs = feasible_with_floor(problem, floor, "test")
        assert one_type.FloorCheck(problem).feasible(floor) == (highs is not None)


@settings(max_examples=150, deadline=None)
@given(
    problem=one_type_problems(most=120),
    seed=st.integers(0, 2**31),
    low=st.sampled_from([1e-9, 1e-7, 1e-6, 1e-3, 0.5]),
    load=st.floats(0.5, 1.0),
    rate_scale=st.sampled_from([1e-3, 1.0, 1e3]),
)
def test_floor_allocation_is_highs_vertex_where_it_answers(
    problem: Problem, seed: int, low: float, load: float, rate_scale: float
) -> None:
    """Floors of ``low`` to 1 of each job's rate (some 0, some at 1), up to ``load`` of the
    GPUs: where `one_type.floor_allocation` answers, HiGHS's vertex bit for bit."""
    rng = np.random.default_rng(seed)
    rates = problem.rates * rate_scale
    problem = Problem(rates, problem.scale, problem.gpus)
    m = problem.shape[0]
    share = np.exp(rng.uniform(np.log(low), 0.0, m)) * np.where(rng.random(m) < 0.1, 0.0, 1.0)
    share[rng.random(m) < 0.05] = 1.0 - 10.0 ** rng.uniform(-12, -3)
    used = float((problem.scale * share).sum())
    if used > load * problem.gpus[0]:
        share *= load * problem.gpus[0] / used
    floor = share * rates[:, 0]
    got = one_type.floor_allocation(problem, floor)
    if got is None:
        return
    highs = feasible_with_floor(problem, floor, "test")
    assert highs is not None
    assert got.tobytes() == highs.tobytes()


def test_floor_allocation_by_hand() -> None:
    problem = Problem(np.array([[1.0], [2.5], [0.3]]), np.array([1.0, 4.0, 2.0]), np.array([4.0]))
    floor = np.array([0.2, 0.0, 0.1])
    got = one_type.floor_allocation(problem, floor)
    assert got is not None and got[:, 0].tolist() == [0.2, 0.0, 0.1 / 0.3]
    highs = feasible_with_floor(problem, floor, "test")
    assert highs is not None and got.tobytes() == highs.tobytes()
    floor = np.array([0.2, 0.0, 0.3 * (1 - 1e-9)])
    assert one_type.floor_allocation(problem, floor) is None  # HiGHS's tolerances decide


def test_floor_allocation_of_floors_within_highs_tolerance() -> None:
    """Philly's shape (rate 1; 1, 4 and 8 GPUs): the floor rows of 1, 4 and 8 GPUs are scaled
    by 1/2, 2 and 4, so of floors below 1e-7 (dropped by presolve) HiGHS's simplex restores
    those above 2e-7 / 5e-8 / 2.5e-8 at ``floor / rate`` and leaves the others at 0 (the
    9.6e-8 -> 0 and 9.99999999999547e-08 -> floor of the whole 6214e9 run)."""
    scale = np.array([1.0, 4.0, 8.0, 8.0, 4.0, 4.0, 1.0])
    problem = Problem(np.ones((7, 1)), scale, np.array([40.0]))
    np.testing.assert_array_equal(
        highs_scale.floor_row_scales(np.ones(7), scale), [0.5, 2.0, 4.0, 4.0, 2.0, 2.0, 0.5]
    )
    floor = np.array([9.6e-8, 9.6e-8, 9.99999999999547e-08, 2.5e-8, 5e-8, 0.3, 0.1])
    floor[3] = np.nextafter(2.5e-8, 1.0)  # just above 1e-7 / 4
    got = one_type.floor_allocation(problem, floor)
    expect = [0.0, floor[1], floor[2], floor[3], 0.0, 0.3, 0.1]  # 5e-8 * 2 is not above 1e-7
    assert got is not None and got[:, 0].tolist() == expect
    highs = feasible_with_floor(problem, floor, "test")
    assert highs is not None and got.tobytes() == highs.tobytes()


@settings(max_examples=150, deadline=None)
@given(
    problem=one_type_problems(most=120),
    seed=st.integers(0, 2**31),
    rate_scale=st.sampled_from([1e-3, 0.3, 1.0, 7.0, 1e3]),
    philly=st.booleans(),
)
def test_floor_allocation_near_highs_tolerance(
    problem: Problem, seed: int, rate_scale: float, philly: bool
) -> None:
    """Floors from 1e-10 to 1 of the rate, many set within an ulp or two of 1e-7 (presolve's
    test) and of ``1e-7 / row_scale`` (the scaled simplex's), jobs in a random order: where
    `one_type.floor_allocation` answers, HiGHS's vertex bit for bit; and it answers wherever
    every share is below ``1 - MARGIN`` and the GPUs suffice."""
    rng = np.random.default_rng(seed)
    m = problem.shape[0]
    rates = np.maximum(problem.rates[:, 0], 0.05) * rate_scale
    scale = problem.scale * (rng.choice([1.0, 2.0]) if philly else rng.choice([1.0, 0.75, 1.5]))
    if philly:
        rates = np.ones(m)
    floor = np.exp(rng.uniform(np.log(1e-10), 0.0, m)) * rates * 0.5
    floor[rng.random(m) < 0.1] = 0.0
    near = rng.random(m) < 0.5
    ulps = rng.integers(-2, 3, m).astype(float)
    row_scale = highs_scale.floor_row_scales(rates, scale)
    assert row_scale is not None
    tol = np.where(rng.random(m) < 0.5, 1e-7, 1e-7 / row_scale)
    edge = tol * (1.0 + ulps * 2.0**-52) * np.where(rng.random(m) < 0.2, 0.5, 1.0)
    floor = np.where(near, np.minimum(edge, 0.5 * rates), floor)
    order = rng.permutation(m)
    problem = Problem(rates[order, None], scale[order], np.array([float(scale.sum())]))
    floor = floor[order]
    got = one_type.floor_allocation(problem, floor)
    if ((floor > 1e-7) & ~(floor / rates[order] > 1e-7 / np.maximum(1.0, rates[order]))).any():
        return  # a bound presolve would not tighten: left to HiGHS
    assert got is not None
    highs = feasible_with_floor(problem, floor, "test")
    assert highs is not None
    assert got.tobytes() == highs.tobytes()


@settings(max_examples=30, deadline=None)
@given(problem=one_type_problems(), seed=st.integers(0, 1000), ftf_like=st.booleans())
def test_exact_answers_give_the_lp_bisections_level_and_allocation(
    problem: Problem, seed: int, ftf_like: bool
) -> None:
    if (problem.rates == 0).any():
        problem = Problem(np.maximum(problem.rates, 0.5), problem.scale, problem.gpus)
    rng = np.random.default_rng(seed)
    m = problem.shape[0]
    remaining = rng.uniform(100.0, 1e5, m)
    if ftf_like:
        since, isolated = rng.uniform(0.0, 1e4, m), rng.uniform(0.0, 1e3, m)
        exact = ftf_allocation(problem, remaining, since, isolated, lp=False)
        highs = ftf_allocation(problem, remaining, since, isolated, lp=True)
    else:
        exact = makespan_allocation(problem, remaining, lp=False)
        highs = makespan_allocation(problem, remaining, lp=True)
    assert exact[0] == highs[0]
    np.testing.assert_array_equal(exact[1], highs[1])


def test_water_fill_by_hand() -> None:
    one = np.ones(3)
    # 3 GPUs, the third job twice as big and half as needy: one level 1 fills them exactly
    x = one_type.water_fill(np.array([1.0, 1.0, 0.5]), np.array([1.0, 1.0, 2.0]), one, 3.0)
    np.testing.assert_allclose(x, [1.0, 1.0, 0.5])
    # 5 GPUs: the first two reach their cap (level 2 would give them 2), the third gets 3/4
    x = one_type.water_fill(np.array([1.0, 1.0, 0.25]), np.array([1.0, 1.0, 4.0]), one, 5.0)
    np.testing.assert_allclose(x, [1.0, 1.0, 0.75])
    # all fit: every cap; a job of need 0 gets nothing
    x = one_type.water_fill(np.array([1.0, 0.0, 2.0]), np.array([1.0, 1.0, 1.0]), one, 8.0)
    np.testing.assert_allclose(x, [1.0, 0.0, 1.0])


def test_one_type_policies_leave_the_lp_on_several_types() -> None:
    rates = np.array([[1.0, 2.0], [3.0, 0.5], [1.0, 1.0]])
    problem = Problem(rates, np.array([1.0, 2.0, 1.0]), np.array([2.0, 2.0]))
    np.testing.assert_array_equal(
        las_allocation(problem, lp=False), las_allocation(problem, lp=True)
    )
