"""OptimusFit: recovers known θ, stays non-negative, falls back to a scaled prior."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.models.optimus_fit import MIN_CONFIGS, OptimusFit, features

M = 32.0
THETA = np.array([0.002, 0.05, 0.03, 0.004, 0.002])


def true_speed(p: int, w: int, theta: np.ndarray = THETA) -> float:
    return 1.0 / float(features(M, p, w) @ theta)


def test_recovers_known_theta() -> None:
    fit = OptimusFit(M)
    for p in range(1, 7):
        for w in range(1, 9):
            assert fit.add(p, w, true_speed(p, w))
    assert fit.fit()
    np.testing.assert_allclose(fit.theta, THETA, rtol=1e-6, atol=1e-9)
    for p, w in [(1, 1), (3, 7), (10, 12), (16, 16)]:  # also outside the sampled grid
        assert fit.predict(p, w) == pytest.approx(true_speed(p, w), rel=1e-6)


def test_recovers_zero_components() -> None:
    theta = np.array([0.003, 0.0, 0.05, 0.0, 0.0])
    fit = OptimusFit(M)
    for p, w in [(1, 1), (1, 2), (2, 1), (2, 4), (4, 2), (3, 3), (1, 5)]:
        fit.add(p, w, true_speed(p, w, theta))
    assert fit.fit()
    np.testing.assert_allclose(fit.theta, theta, atol=1e-9)


def test_noisy_samples_predict_within_a_few_percent() -> None:
    rng = np.random.default_rng(7)
    fit = OptimusFit(M)
    for _ in range(400):
        p, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        fit.add(p, w, true_speed(p, w) * (1.0 + 0.05 * rng.standard_normal()))
    assert fit.fit()
    for p, w in [(1, 1), (4, 4), (8, 2)]:
        assert fit.predict(p, w) == pytest.approx(true_speed(p, w), rel=0.05)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 16), st.integers(1, 16), st.floats(1e-3, 1e3)),
        min_size=1,
        max_size=30,
    )
)
def test_theta_and_predictions_are_non_negative(samples: list[tuple[int, int, float]]) -> None:
    fit = OptimusFit(M)
    for p, w, s in samples:
        fit.add(p, w, s)
    fit.fit()
    assert np.all(fit.theta >= 0.0)
    for p in (1, 4, 16):
        for w in (1, 4, 16):
            speed = fit.predict(p, w)
            assert np.isfinite(speed)
            assert speed > 0.0


def test_without_samples_uses_the_prior() -> None:
    fit = OptimusFit(M)
    assert not fit.fit()
    assert not fit.fitted
    assert fit.predict(1, 1) == pytest.approx(0.8)  # step 1/w + 0.25·w/p = 1.25
    assert fit.predict(2, 2) > fit.predict(1, 1)


def test_few_samples_scale_the_prior_to_them() -> None:
    fit = OptimusFit(M)
    fit.add(2, 2, 3.0)
    assert not fit.fit()
    assert fit.predict(2, 2) == pytest.approx(3.0)  # one sample: the prior goes through it
    for p, w in [(1, 1), (1, 2), (2, 1)]:
        fit.add(p, w, true_speed(p, w))
    assert fit.num_configs == MIN_CONFIGS - 1
    assert not fit.fit()
    fit.add(3, 5, true_speed(3, 5))
    fit.add(3, 5, true_speed(3, 5))  # a repeat adds no configuration
    assert fit.num_configs == MIN_CONFIGS
    assert fit.fit()


def test_predict_refits_lazily() -> None:
    fit = OptimusFit(M)
    fit.add(1, 1, 2.0)
    assert fit.predict(1, 1) == pytest.approx(2.0)
    fit.add(1, 1, 4.0)  # least squares on step times: between 1/2 and 1/4
    assert 2.0 < fit.predict(1, 1) < 4.0


def test_invalid_samples() -> None:
    fit = OptimusFit(M)
    with pytest.raises(ValueError):
        fit.add(0, 1, 1.0)
    with pytest.raises(ValueError):
        fit.add(1, 0, 1.0)
    assert not fit.add(1, 1, 0.0)
    assert not fit.add(1, 1, float("nan"))
    assert fit.num_samples == 0
    assert fit.predict(0, 4) == 0.0
    assert fit.predict(4, 0) == 0.0
    with pytest.raises(ValueError):
        OptimusFit(0.0)
