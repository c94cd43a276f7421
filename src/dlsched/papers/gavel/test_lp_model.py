"""`lp.pass_model` hands HiGHS the same model as the reference `lp.highs_model`, so every
solve (the interior point without crossover, the dual simplex) returns the same floats."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.papers.gavel.lp import Lp, Problem, _columns, highs_model, pass_model
from dlsched.papers.gavel.test_gavel import problems

highspy = pytest.importorskip("highspy")


def _highs(interior: bool) -> object:
    highs = highspy.Highs()
    for key, value in (
        ("output_flag", False),
        ("presolve", "off" if interior else "on"),
        ("simplex_strategy", 1),
        *((("solver", "ipm"), ("run_crossover", "off")) if interior else ()),
    ):
        highs.setOptionValue(key, value)
    return highs


def _model(highs: object) -> list[bytes]:
    lp = highs.getLp()  # type: ignore[attr-defined]
    matrix = lp.a_matrix_
    arrays = (
        lp.col_cost_,
        lp.col_lower_,
        lp.col_upper_,
        lp.row_lower_,
        lp.row_upper_,
        matrix.start_,
        matrix.index_,
        matrix.value_,
    )
    return [np.asarray(a).tobytes() for a in arrays] + [bytes([lp.num_col_, lp.num_row_])]


@settings(max_examples=40, deadline=None)
@given(problem=problems(), seed=st.integers(0, 1000), interior=st.booleans(), z=st.booleans())
def test_pass_model_gives_highs_the_reference_model_and_its_solutions(
    problem: Problem, seed: int, interior: bool, z: bool
) -> None:
    rng = np.random.default_rng(seed)
    lp: Lp = _columns(problem, -problem.rates * rng.uniform(0.5, 2.0, problem.shape), z)
    lp.upper[sum(problem.shape) :] = -rng.uniform(0.0, 0.3, problem.shape[0])
    lp.c[-1] = -1.0 if z else 0.0
    reference, fast = _highs(interior), _highs(interior)
    reference.passModel(highs_model(highspy, lp))  # type: ignore[attr-defined]
    pass_model(highspy, fast, lp)
    assert _model(fast) == _model(reference)
    for highs in (reference, fast):
        highs.run()  # type: ignore[attr-defined]
    assert reference.getModelStatus() == fast.getModelStatus()  # type: ignore[attr-defined]
    got, want = fast.getSolution(), reference.getSolution()  # type: ignore[attr-defined]
    assert np.asarray(got.col_value).tobytes() == np.asarray(want.col_value).tobytes()
    assert np.asarray(got.row_value).tobytes() == np.asarray(want.row_value).tobytes()


def test_pass_model_raises_where_highs_refuses_the_model() -> None:
    start, index = np.array([0, 1], dtype=np.int32), np.array([5], dtype=np.int32)
    lp = Lp(np.zeros(1), start, index, np.ones(1), np.ones(1), np.zeros(1), np.ones(1))
    with pytest.raises(RuntimeError, match="refused"):
        pass_model(highspy, _highs(False), lp)  # row index 5 of a 1-row matrix
