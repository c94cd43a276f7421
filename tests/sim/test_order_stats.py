"""`dlsched.sim.order_stats` gives the same floats as ``np.median`` and ``np.percentile``
(a run's ``median_jct_s``, ``p95_jct_s`` and ``p99_jct_s`` must not change)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dlsched.sim.order_stats import median, percentile

_VALUES = arrays(
    np.float64,
    st.integers(1, 300),
    elements=st.one_of(st.floats(0.0, 1e9, allow_nan=False), st.integers(0, 50).map(float)),
)


@settings(max_examples=200, deadline=None)
@given(_VALUES, st.one_of(st.sampled_from([0, 50, 95, 99, 100]), st.floats(0.0, 100.0)))
def test_same_floats_as_numpy(values: np.ndarray, q: float) -> None:
    assert median(values) == float(np.median(values))
    assert percentile(values, q) == float(np.percentile(values, q))


def test_nan_as_numpy() -> None:
    values = np.array([3.0, math.nan, 1.0])
    assert math.isnan(median(values)) and math.isnan(np.median(values))
    assert math.isnan(percentile(values, 95)) and math.isnan(np.percentile(values, 95))


def test_the_input_is_left_as_it_was() -> None:
    values = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    median(values), percentile(values, 95)
    assert values.tolist() == [5.0, 1.0, 4.0, 2.0, 3.0]
