"""One step of the cross-entropy method over a policy's weight vector (`dlsched train example`,
`dlsched train hetero`): draw a population from a diagonal Gaussian, score every vector on the
same fresh training seeds, refit the Gaussian to the ``elite`` best."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float64]


def cross_entropy_step(
    mean: Vector,
    std: Vector,
    rng: np.random.Generator,
    cost: Callable[[Vector, Sequence[int]], float],
    *,
    population: int,
    elite: int,
    min_std: float,
    train_seeds: int,
    seeds_below: int,
) -> tuple[Vector, Vector, float]:
    """The refitted mean and standard deviation (plus ``min_std``, which keeps the search from
    collapsing) and the elite's mean cost. ``cost(weights, seeds)``: lower is better; the
    ``train_seeds`` seeds, drawn after the population and below ``seeds_below`` (where
    validation seeds start), are the same for every vector of the step."""
    samples = mean + std * rng.standard_normal((population, mean.size))
    seeds = [int(s) for s in rng.integers(0, seeds_below, size=train_seeds)]
    costs = np.array([cost(w, seeds) for w in samples])
    best = np.argsort(costs, kind="stable")[:elite]
    return (
        samples[best].mean(axis=0),
        samples[best].std(axis=0) + min_std,
        float(costs[best].mean()),
    )
