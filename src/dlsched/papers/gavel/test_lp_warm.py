"""The warm-started solves of Gavel's LPs against the plain ones they replace."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.papers.gavel import lp_warm
from dlsched.papers.gavel.lp import Array, Problem, bisect, check_feasible, feasible_with_floor
from dlsched.papers.gavel.test_gavel import problems


def _plain(problem: Problem, floor_at, interior: bool):  # type: ignore[no-untyped-def]
    def meets(v: float) -> Array | None:
        floor = floor_at(v)
        return None if floor is None else feasible_with_floor(problem, floor, "t", interior)

    return meets


@settings(max_examples=40, deadline=None)
@given(
    problem=problems(),
    seed=st.integers(0, 1000),
    interior=st.booleans(),
    ftf_like=st.booleans(),
)
def test_bisect_floor_returns_the_plain_bisections_level_and_allocation(
    problem: Problem, seed: int, interior: bool, ftf_like: bool
) -> None:
    rng = np.random.default_rng(seed)
    remaining = rng.uniform(100.0, 1e5, problem.shape[0])
    since = rng.uniform(0.0, 1e4, problem.shape[0])
    expected = rng.uniform(1e3, 1e5, problem.shape[0])

    def floor_at(v: float) -> Array | None:
        if not ftf_like:
            return remaining / v
        slack = v * expected - since
        return None if (slack <= 0).any() else remaining / slack

    low, high, rel = (0.05, 1.0, 0.01) if ftf_like else (100.0, 1e6, 0.05)
    want = bisect(_plain(problem, floor_at, interior), low, high, rel)
    got = lp_warm.bisect_floor(problem, floor_at, low, high, rel, "t", interior)
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])
    check_feasible(got[1], problem)


def test_bisect_floor_falls_back_to_the_plain_bisection_without_verdicts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    problem = Problem(np.array([[1.0, 2.0], [3.0, 1.0]]), np.ones(2), np.ones(2))
    remaining = np.array([100.0, 200.0])

    def floor_at(v: float) -> Array:
        return remaining / v

    want = bisect(_plain(problem, floor_at, False), 100.0, 1e6, 0.05)
    monkeypatch.setattr(lp_warm.FloorVerdicts, "feasible", lambda self, floor: None)
    got = lp_warm.bisect_floor(problem, floor_at, 100.0, 1e6, 0.05, "t")
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])


def test_a_wrong_verdict_is_caught_by_the_final_solve(monkeypatch: pytest.MonkeyPatch) -> None:
    # verdicts that call everything feasible end the bisection at the lowest level, where the
    # final solve finds nothing: the plain bisection's answer is returned instead
    problem = Problem(np.ones((2, 1)), np.ones(2), np.array([1.0]))
    remaining = np.array([100.0, 200.0])

    def floor_at(v: float) -> Array:
        return remaining / v

    monkeypatch.setattr(lp_warm.FloorVerdicts, "feasible", lambda self, floor: True)
    t, x = lp_warm.bisect_floor(problem, floor_at, 100.0, 1e6, 0.05, "t")
    assert 300.0 <= t <= 315.0
    check_feasible(x, problem)


@st.composite
def job_sequences(draw: st.DrawFn) -> tuple[int, list[list[tuple[int, float, float]]]]:
    """GPU types, and successive job sets (id, scale, rate key) where a few jobs leave and
    arrive between solves, as between Gavel's rounds."""
    n = draw(st.integers(1, 3))
    steps = []
    jobs: list[tuple[int, float, float]] = []
    next_id = 0
    for _ in range(draw(st.integers(2, 6))):
        keep = [j for j in jobs if draw(st.booleans()) or draw(st.booleans())]
        for _ in range(draw(st.integers(0 if keep else 1, 4))):
            scale = float(draw(st.sampled_from([1, 2, 4, 8])))
            keep.append((next_id, scale, float(draw(st.integers(0, 10_000)))))
            next_id += 1
        draw(st.randoms()).shuffle(keep)
        jobs = keep
        steps.append(list(jobs))
    return n, steps


def _rates(job: tuple[int, float, float], n: int) -> list[float]:
    rng = np.random.default_rng(int(job[2]))
    row = rng.choice([0.0, 0.5, 1.0, 2.5, 7.0], n)
    row[0] = max(row[0], 0.5)  # every job runs somewhere
    return list(row)


def _min_share(problem: Problem, x: Array) -> float:
    from dlsched.papers.gavel.max_min_fairness import proportional_throughputs

    prop = proportional_throughputs(problem)
    return float(((problem.rates * x).sum(axis=1) * problem.scale / prop).min())


@settings(max_examples=40, deadline=None)
@given(sequence=job_sequences(), gpus=st.integers(4, 16))
def test_warm_started_las_is_as_optimal_and_feasible_as_a_fresh_solve(
    sequence: tuple[int, list[list[tuple[int, float, float]]]], gpus: int
) -> None:
    from dlsched.papers.gavel.max_min_fairness import las_allocation

    n, steps = sequence
    warm = lp_warm.WarmStart()
    for jobs in steps:
        problem = Problem(
            np.array([_rates(j, n) for j in jobs]).reshape(len(jobs), n),
            np.array([j[1] for j in jobs]),
            np.full(n, float(gpus)),
        )
        fresh = las_allocation(problem)
        ours = las_allocation(problem, warm, [j[0] for j in jobs])
        check_feasible(ours, problem)
        assert (ours[problem.rates <= 0] == 0).all()
        # the same optimum (max-min share), possibly at another vertex
        assert _min_share(problem, ours) == pytest.approx(_min_share(problem, fresh), rel=1e-6)
        if n == 1:  # one type: always the fresh solve, the same point
            np.testing.assert_array_equal(ours, fresh)
