"""Finish-time fairness's per-job books on arrays (`ftf_clock.IsolatedClock`) against the
plain dict-per-job reference, and the LP handed to HiGHS in one call (`lp.pass_lp`) against
the plain ``HighsLp`` build."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.papers.gavel import lp
from dlsched.papers.gavel.ftf_clock import IsolatedClock, PlainIsolatedClock, job_arrays
from dlsched.papers.gavel.lp import Problem
from dlsched.papers.gavel.test_gavel import problems


@st.composite
def recomputes(draw: st.DrawFn) -> list[tuple[list[int], list[float], list[float], bool]]:
    """Up to 12 recomputes, each: the active jobs' ids (from a pool of 12, any order, jobs
    leaving and coming back), their remaining work and isolated throughputs, and whether the
    allocation got as far as remembering them (False: it raised in between)."""
    steps = []
    for _ in range(draw(st.integers(1, 12))):
        ids = draw(st.lists(st.integers(0, 11), unique=True, max_size=12))
        work = st.floats(0.0, 1e7, allow_subnormal=False)
        left = [draw(work) for _ in ids]
        iso = [draw(st.floats(1e-6, 10.0)) for _ in ids]
        steps.append((ids, left, iso, draw(st.integers(0, 5)) > 0))
    return steps


@settings(max_examples=200, deadline=None)
@given(steps=recomputes())
def test_isolated_clock_gives_the_plain_clocks_floats(
    steps: list[tuple[list[int], list[float], list[float], bool]],
) -> None:
    plain, fast = PlainIsolatedClock(), IsolatedClock()
    for ids, left, iso, remembered in steps:
        keys = np.array(ids, dtype=np.int64)
        remaining, rates = np.array(left, dtype=np.float64), np.array(iso, dtype=np.float64)
        with np.errstate(all="ignore"):
            want, got = plain.advance(keys, remaining), fast.advance(keys, remaining)
        assert want.tobytes() == got.tobytes()  # bit for bit, signs of zeros included
        if remembered:
            plain.remember(keys, remaining, rates)
            fast.remember(keys, remaining, rates)


def test_isolated_clock_adds_the_work_done_over_the_last_isolated_rate() -> None:
    clock = IsolatedClock()
    ids = np.array([7, 3], dtype=np.int64)
    assert clock.advance(ids, np.array([10.0, 4.0])).tolist() == [0.0, 0.0]
    clock.remember(ids, np.array([10.0, 4.0]), np.array([2.0, 0.5]))
    later = np.array([3, 9, 7], dtype=np.int64)  # 9 arrives; 7 and 3 did 4 and 1 units
    assert clock.advance(later, np.array([3.0, 5.0, 6.0])).tolist() == [2.0, 0.0, 2.0]


def test_job_arrays_reads_run_by_run_without_a_fast_path() -> None:
    class Spec:
        def __init__(self, submit: float) -> None:
            self.submit_time_s = submit

    class Run:
        def __init__(self, job_id: int, submit: float, left: float) -> None:
            self.job_id, self.spec, self._left = job_id, Spec(submit), left

        def remaining_work(self, now_s: float) -> float:
            return self._left

    runs = [Run(5, 10.0, 3.0), Run(2, 40.0, 0.0)]
    ids, remaining, since = job_arrays(runs, 100.0)  # type: ignore[arg-type]
    assert (ids.tolist(), remaining.tolist(), since.tolist()) == ([5, 2], [3.0, 0.0], [90.0, 60.0])


@settings(max_examples=40, deadline=None)
@given(problem=problems(), seed=st.integers(0, 1000), extra=st.booleans(), interior=st.booleans())
def test_pass_lp_gives_highs_the_plain_models_lp_and_vertex(
    problem: Problem, seed: int, extra: bool, interior: bool
) -> None:
    highspy = pytest.importorskip("highspy")
    program = lp._columns(problem, -problem.rates, extra_column=extra)
    program.upper[sum(problem.shape) :] = -np.random.default_rng(seed).uniform(
        0.0, 0.3, problem.shape[0]
    )
    if extra:
        program.c[-1] = -1.0
    plain, fast = highspy.Highs(), highspy.Highs()
    for highs in (plain, fast):
        highs.setOptionValue("output_flag", False)
        if interior:
            highs.setOptionValue("solver", "ipm")
            highs.setOptionValue("run_crossover", "off")
            highs.setOptionValue("presolve", "off")
    plain.passModel(lp.highs_model(highspy, program))
    lp.pass_lp(highspy, fast, program)
    want, got = plain.getLp(), fast.getLp()
    for name in ("num_col_", "num_row_", "sense_", "offset_"):
        assert getattr(want, name) == getattr(got, name)
    for name in ("col_cost_", "col_lower_", "col_upper_", "row_lower_", "row_upper_"):
        np.testing.assert_array_equal(getattr(want, name), getattr(got, name))
    for name in ("start_", "index_", "value_"):
        np.testing.assert_array_equal(getattr(want.a_matrix_, name), getattr(got.a_matrix_, name))
    assert set(got.integrality_) <= {highspy.HighsVarType.kContinuous}
    plain.run()
    fast.run()
    assert plain.getModelStatus() == fast.getModelStatus()
    np.testing.assert_array_equal(plain.getSolution().col_value, fast.getSolution().col_value)
    np.testing.assert_array_equal(plain.getSolution().row_value, fast.getSolution().row_value)
