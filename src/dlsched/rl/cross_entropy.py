"""One step of the cross-entropy method over a policy's weight vector (`dlsched train example`,
`dlsched train hetero`): draw a population from a diagonal Gaussian, score every vector on the
same fresh training seeds, refit the Gaussian to the ``elite`` best."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import torch

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


class SearchConfig(Protocol):
    """The fields of a paper's config that a cross-entropy search reads."""

    seed: int
    population: int
    elite: int
    min_std: float
    train_seeds: int


class CrossEntropySearch:
    """The state of a cross-entropy search (mean, standard deviation, iterations done) with
    its step and what ``--resume`` saves; a paper's learner adds its cost and validation."""

    def __init__(self, config: SearchConfig, mean: Vector, init_std: float) -> None:
        if not 1 <= config.elite <= config.population:
            raise ValueError(f"--elite must be in [1, --population], got {config.elite}")
        self.mean = mean
        self.std = np.full(mean.size, init_std)
        self.iteration = 0

    def search_step(
        self, config: SearchConfig, cost: Callable[[Vector, Sequence[int]], float], seeds_below: int
    ) -> float:
        """One `cross_entropy_step` (the draws depend on ``config.seed`` and the iteration
        only, so a resumed run needs no generator state); the elite's mean cost."""
        rng = np.random.default_rng([config.seed, self.iteration])
        self.mean, self.std, elite_cost = cross_entropy_step(
            self.mean,
            self.std,
            rng,
            cost,
            population=config.population,
            elite=config.elite,
            min_std=config.min_std,
            train_seeds=config.train_seeds,
            seeds_below=seeds_below,
        )
        self.iteration += 1
        return elite_cost

    def state_dict(self) -> dict[str, Any]:
        mean, std = torch.tensor(self.mean), torch.tensor(self.std)
        return {"mean": mean, "std": std, "iteration": self.iteration}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.mean, self.std = state["mean"].numpy().copy(), state["std"].numpy().copy()
        self.iteration = int(state["iteration"])
