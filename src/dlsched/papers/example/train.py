"""``dlsched train example``: cross-entropy search over the example policy's weights.

One learning step (`CemLearner.step`): draw ``population`` weight vectors from a Gaussian,
score each by the average slowdown (DeepRM's objective) it gives on ``train_seeds`` fresh
``deeprm`` jobsets, and refit the Gaussian to the ``elite`` best. Everything else — the budget,
validation on held-out seeds, keeping the best policy, ``OUT/policy.pt`` + ``card.json``,
``train_log.csv``, TensorBoard, ``--resume`` — is the shared training run
(`dlsched.rl.training.train`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import torch

from dlsched.papers.example.config import VALIDATION_SEED0, ExampleConfig
from dlsched.papers.example.policy import ALGORITHM, FEATURES, LinearOrder, weights_state
from dlsched.rl.checkpoint import PolicyCard
from dlsched.rl.run_options import RunOptions, every
from dlsched.rl.training import Budget, RunResult, Validation, train
from dlsched.runner import simulate
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import make_scheduler


class CemLearner:
    """The learning step for `dlsched.rl.training.train` (its `Learner` protocol)."""

    columns: Sequence[str] = ("iteration", "elite_slowdown", "std", "avg_slowdown", "wall_s")

    def __init__(self, config: ExampleConfig) -> None:
        if not 1 <= config.elite <= config.population:
            raise ValueError(f"--elite must be in [1, --population], got {config.elite}")
        self.config = config
        self.mean = np.zeros(len(FEATURES))  # arrival order
        self.std = np.full(len(FEATURES), config.init_std)
        self.iteration = 0
        self.validation_seeds = [VALIDATION_SEED0 + i for i in range(config.validation_seeds)]
        seeds = self.validation_seeds
        self.baselines = {
            "arrival_order_avg_slowdown": self.slowdown(LinearOrder(self.mean.tolist()), seeds),
            "sjf_avg_slowdown": self.slowdown(make_scheduler("sjf"), seeds),
        }
        self.last: dict[str, float] = {}

    def slowdown(self, scheduler: Scheduler, seeds: Sequence[int]) -> float:
        """Average slowdown of ``scheduler`` over the workloads of ``seeds``."""
        c = self.config
        total = 0.0
        for seed in seeds:
            result = simulate(c.workload, scheduler, seed, load=c.load)
            total += float(result.summary()["avg_slowdown"])
        return total / len(seeds)

    def step(self) -> dict[str, object]:
        c = self.config
        rng = np.random.default_rng([c.seed, self.iteration])  # resumable: no generator state
        samples = self.mean + self.std * rng.standard_normal((c.population, len(FEATURES)))
        seeds = [int(s) for s in rng.integers(0, VALIDATION_SEED0, size=c.train_seeds)]
        costs = np.array([self.slowdown(LinearOrder(w.tolist()), seeds) for w in samples])
        elite = samples[np.argsort(costs, kind="stable")[: c.elite]]
        self.mean = elite.mean(axis=0)
        self.std = elite.std(axis=0) + c.min_std
        self.iteration += 1
        return {
            "iteration": self.iteration,
            "elite_slowdown": round(float(np.sort(costs)[: c.elite].mean()), 4),
            "std": round(float(self.std.mean()), 4),
        }

    def validate(self) -> Validation:
        slowdown = self.slowdown(LinearOrder(self.mean.tolist()), self.validation_seeds)
        self.last = {"avg_slowdown": slowdown}
        return Validation((slowdown,), {"avg_slowdown": round(slowdown, 4)})

    def policy_files(self) -> tuple[Mapping[str, torch.Tensor], PolicyCard]:
        c = self.config
        card = PolicyCard(
            algorithm=ALGORITHM,
            workload=c.workload,
            workload_params={"load": c.load},
            shapes={"features": len(FEATURES)},
            seeds={"search": [c.seed], "validation": self.validation_seeds},
            steps={"iterations": self.iteration},
            validation={**self.last, **self.baselines},
            hyperparams=asdict(c),
            notes=(
                f"cross-entropy search over {len(FEATURES)} weights of {', '.join(FEATURES)}; "
                "validation: average slowdown on the held-out seeds, beside arrival order (zero "
                "weights) and SJF on the same jobsets; durations known on arrival (DeepRM §2)"
            ),
            trained_setting={"workload": c.workload, "params": {"load": c.load}},
        )
        return weights_state(self.mean.tolist()), card

    def state_dict(self) -> dict[str, Any]:
        return {
            "mean": torch.tensor(self.mean),
            "std": torch.tensor(self.std),
            "iteration": self.iteration,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.mean = state["mean"].numpy().copy()
        self.std = state["std"].numpy().copy()
        self.iteration = int(state["iteration"])


def train_example(config: ExampleConfig, run: RunOptions, progress: Any = None) -> RunResult:
    """Run the search for ``config.iterations`` steps (or until ``run.max_minutes``), writing
    the shared training run's files into ``run.out`` (validated after every step)."""

    def make(_budget: Budget) -> CemLearner:
        return CemLearner(config)

    settings = run.settings(
        config.iterations, validate_when=every(1), step_column="iteration", name=ALGORITHM
    )
    return train(make, settings, progress)
