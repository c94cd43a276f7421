"""``dlsched train example``'s learning step: cross-entropy search over the policy's weights.

`CemLearner.step` draws ``population`` weight vectors from a Gaussian, scores each by the average
slowdown (DeepRM's objective) on ``train_seeds`` fresh jobsets and refits the Gaussian to the
``elite`` best. The budget, validation, keeping the best, ``policy.pt`` + ``card.json``, the CSV
and TensorBoard logs and ``--resume`` are the shared run's (`dlsched.rl.training.train`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import torch

from dlsched.papers.example.config import VALIDATION_SEED0, ExampleConfig
from dlsched.papers.example.policy import ALGORITHM, FEATURES, LinearOrder
from dlsched.rl.checkpoint import PolicyCard
from dlsched.rl.cross_entropy import CrossEntropySearch
from dlsched.rl.run_options import RunOptions, every
from dlsched.rl.training import Budget, RunResult, Validation, train
from dlsched.runner import simulate
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import make_scheduler


class CemLearner(CrossEntropySearch):
    """The learning step for `dlsched.rl.training.train` (its `Learner` protocol)."""

    columns: Sequence[str] = ("iteration", "elite_slowdown", "std", "avg_slowdown", "wall_s")

    def __init__(self, config: ExampleConfig) -> None:
        super().__init__(config, np.zeros(len(FEATURES)), config.init_std)  # arrival order
        self.config = config
        self.seeds = [VALIDATION_SEED0 + i for i in range(config.validation_seeds)]
        self.baselines = {  # on the validation seeds, for the card
            "arrival_order_avg_slowdown": self.slowdown(LinearOrder(self.mean.tolist())),
            "sjf_avg_slowdown": self.slowdown(make_scheduler("sjf")),
        }
        self.last: dict[str, float] = {}

    def slowdown(self, scheduler: Scheduler, seeds: Sequence[int] | None = None) -> float:
        """Average slowdown of ``scheduler`` over the workloads of ``seeds`` (validation's)."""
        c = self.config
        runs = [simulate(c.workload, scheduler, s, load=c.load) for s in seeds or self.seeds]
        return sum(float(r.summary()["avg_slowdown"]) for r in runs) / len(runs)

    def step(self) -> dict[str, object]:
        elite_cost = self.search_step(
            self.config,
            lambda w, seeds: self.slowdown(LinearOrder(w.tolist()), seeds),
            VALIDATION_SEED0,
        )
        return {
            "iteration": self.iteration,
            "elite_slowdown": round(elite_cost, 4),
            "std": round(float(self.std.mean()), 4),
        }

    def validate(self) -> Validation:
        slowdown = self.slowdown(LinearOrder(self.mean.tolist()))
        self.last = {"avg_slowdown": slowdown}
        return Validation((slowdown,), {"avg_slowdown": round(slowdown, 4)})

    def policy_files(self) -> tuple[Mapping[str, torch.Tensor], PolicyCard]:
        c = self.config
        card = PolicyCard(
            algorithm=ALGORITHM,
            workload=c.workload,
            workload_params={"load": c.load},
            shapes={"features": len(FEATURES)},
            seeds={"search": [c.seed], "validation": self.seeds},
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
        return {"weights": torch.tensor(self.mean.tolist(), dtype=torch.float64)}, card


def train_example(config: ExampleConfig, run: RunOptions, progress: Any = None) -> RunResult:
    """Run the search for ``config.iterations`` steps (or until ``run.max_minutes``) into
    ``run.out``, validating after every step."""

    def make(_budget: Budget) -> CemLearner:
        return CemLearner(config)

    settings = run.settings(
        config.iterations, validate_when=every(1), step_column="iteration", name=ALGORITHM
    )
    return train(make, settings, progress)
