"""Interference: mean 1, std = level, positive, seeded only by the passed generator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dlsched.models.noise import (
    DL2_LEVEL,
    MIN_FACTOR,
    Interference,
    completion_cv,
    level_for_completion_cv,
)


@pytest.mark.parametrize("level", [0.05, DL2_LEVEL, 0.5])
def test_mean_one_and_std_level(level: float) -> None:
    noise = Interference(level)
    rng = np.random.default_rng(123)
    draws = np.array([noise.factor(rng) for _ in range(40_000)])
    assert draws.mean() == pytest.approx(1.0, abs=0.01)
    assert draws.std() == pytest.approx(level, rel=0.03)
    assert draws.min() >= MIN_FACTOR


def test_vectorised_draws_match_the_distribution() -> None:
    draws = Interference(DL2_LEVEL).factors(np.random.default_rng(5), 100_000)
    assert draws.mean() == pytest.approx(1.0, abs=0.005)
    assert draws.std() == pytest.approx(DL2_LEVEL, rel=0.02)


def test_same_generator_seed_same_draws() -> None:
    noise = Interference(0.3)
    a = [noise.factor(np.random.default_rng(9)) for _ in range(3)]
    r1, r2 = np.random.default_rng(9), np.random.default_rng(9)
    assert [noise.factor(r1) for _ in range(5)] == [noise.factor(r2) for _ in range(5)]
    assert len(set(a)) == 1


def test_zero_level_is_exactly_one_and_leaves_rng_alone() -> None:
    rng = np.random.default_rng(1)
    state = rng.bit_generator.state
    assert Interference(0.0).factor(rng) == 1.0
    assert rng.bit_generator.state == state


def test_huge_level_is_clipped_positive() -> None:
    draws = Interference(5.0).factors(np.random.default_rng(0), 10_000)
    assert draws.min() == MIN_FACTOR
    assert np.all(draws > 0)


def test_rejects_bad_levels() -> None:
    with pytest.raises(ValueError):
        Interference(-0.1)
    with pytest.raises(ValueError):
        Interference(float("nan"))
    with pytest.raises(ValueError):
        Interference(0.2, min_factor=0.0)


def test_documented_mapping_to_completion_time_variation() -> None:
    """A job needing n intervals of noise-free work, with a fresh factor per interval."""
    level, n = DL2_LEVEL, 7.35
    factors = Interference(level).factors(np.random.default_rng(42), 200_000 * 12)
    factors = factors.reshape(-1, 12)
    done = np.cumsum(factors, axis=1)
    k = np.argmax(done >= n, axis=1)  # interval in which the job finishes
    before = np.where(k > 0, done[np.arange(len(k)), k - 1], 0.0)
    times = k + (n - before) / factors[np.arange(len(k)), k]
    cv = times.std() / times.mean()
    assert cv == pytest.approx(completion_cv(level, n), rel=0.15)
    assert times.mean() == pytest.approx(n, rel=0.02)  # progress is unbiased
    assert level_for_completion_cv(completion_cv(level, n), n) == pytest.approx(level)
    assert completion_cv(level, 1.0) == level
    assert math.isclose(level_for_completion_cv(0.273, 7.35), 0.273 * math.sqrt(7.35))
