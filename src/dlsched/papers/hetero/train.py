"""``dlsched train hetero``'s learning step: cross-entropy search over the policy's weights.

`CemLearner.step` draws ``population`` weight vectors from a Gaussian, scores each by the mean
average JCT on fresh ``gavel`` workloads (``train_seeds`` per input rate, the same ones for every
vector of the step, drawn below `VALIDATION_SEED0`) and refits the Gaussian to the ``elite``
best. Validation scores the mean weights on held-out seeds (`VALIDATION_SEED0` on) beside Gavel's
heterogeneity-aware LAS and FIFO on the same workloads. The budget, keeping the best,
``policy.pt`` + ``card.json``, the CSV and TensorBoard logs and ``--resume`` are the shared run's
(`dlsched.rl.training.train`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import torch

from dlsched.papers.hetero.config import VALIDATION_SEED0, HeteroConfig
from dlsched.papers.hetero.features import FEATURES
from dlsched.papers.hetero.policy import ALGORITHM, HAND_WEIGHTS, TypeScore
from dlsched.rl.checkpoint import PolicyCard
from dlsched.rl.cross_entropy import CrossEntropySearch
from dlsched.rl.run_options import RunOptions, every
from dlsched.rl.training import Budget, RunResult, Validation, train
from dlsched.runner import simulate
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import make_scheduler

BASELINES = ("gavel-las-het", "gavel-fifo-het")
"""Gavel's heterogeneity-aware policies scored on the validation workloads, for the card."""


class CemLearner(CrossEntropySearch):
    """The learning step for `dlsched.rl.training.train` (its `Learner` protocol)."""

    columns: Sequence[str] = ("iteration", "elite_avg_jct_s", "std", "avg_jct_s", "wall_s")

    def __init__(self, config: HeteroConfig) -> None:
        if not config.rates:
            raise ValueError("--rates needs at least one input job rate")
        start = np.array(HAND_WEIGHTS if config.start == "hand" else [0.0] * len(FEATURES))
        super().__init__(config, start, config.init_std)
        self.config = config
        self.seeds = [VALIDATION_SEED0 + i for i in range(config.validation_seeds)]
        self.baselines = {  # on the validation workloads, for the card
            f"{name}_avg_jct_s": self.avg_jct(make_scheduler(name)) for name in BASELINES
        }
        self.baselines["hand_rule_avg_jct_s"] = self.avg_jct(TypeScore(HAND_WEIGHTS))
        self.last: dict[str, float] = {}

    def avg_jct(self, scheduler: Scheduler, seeds: Sequence[int] | None = None) -> float:
        """Mean over the config's rates and ``seeds`` (validation's) of each run's average JCT,
        seconds."""
        c = self.config
        jcts = [
            float(
                simulate(
                    c.workload,
                    scheduler,
                    s,
                    num_jobs=c.num_jobs,
                    jobs_per_hour=rate,
                    multi_gpu=c.multi_gpu,
                ).summary()["avg_jct_s"]
            )
            for rate in c.rates
            for s in seeds or self.seeds
        ]
        return sum(jcts) / len(jcts)

    def step(self) -> dict[str, object]:
        elite_cost = self.search_step(
            self.config,
            lambda w, seeds: self.avg_jct(TypeScore(w.tolist()), seeds),
            VALIDATION_SEED0,
        )
        return {
            "iteration": self.iteration,
            "elite_avg_jct_s": round(elite_cost, 1),
            "std": round(float(self.std.mean()), 4),
        }

    def validate(self) -> Validation:
        jct = self.avg_jct(TypeScore(self.mean.tolist()))
        self.last = {"avg_jct_s": jct}
        return Validation((jct,), {"avg_jct_s": round(jct, 1)})

    def policy_files(self) -> tuple[Mapping[str, torch.Tensor], PolicyCard]:
        c = self.config
        params = {"num_jobs": c.num_jobs, "jobs_per_hour": list(c.rates), "multi_gpu": c.multi_gpu}
        card = PolicyCard(
            algorithm=ALGORITHM,
            workload=c.workload,
            workload_params=params,
            shapes={"features": len(FEATURES)},
            seeds={"search": [c.seed], "validation": self.seeds},
            steps={"iterations": self.iteration},
            validation={**self.last, **self.baselines},
            hyperparams=asdict(c),
            notes=(
                f"cross-entropy search (no gradient, no teacher) over {len(FEATURES)} weights of "
                f"{', '.join(FEATURES)}, per (job, GPU type) pair, from "
                + ("the hand-set rule" if c.start == "hand" else "all weights 0")
                + f"; objective: mean average JCT "
                f"on fresh gavel workloads ({c.num_jobs} jobs, {', '.join(map(str, c.rates))} "
                "jobs/h, seeds below 10001); the policy sees estimated per-type speeds (the "
                "profiled matrix) and remaining steps, never true speeds; validation: the mean "
                "weights on seeds from 10001, beside gavel-las-het, gavel-fifo-het and the "
                "hand-set shortest-remaining-time rule on the same workloads; made on a "
                f"machine with {os.cpu_count()} CPU cores, no GPU"
            ),
            trained_setting={"workload": c.workload, "params": {}},
        )
        return {"weights": torch.tensor(self.mean.tolist(), dtype=torch.float64)}, card


def train_hetero(config: HeteroConfig, run: RunOptions, progress: Any = None) -> RunResult:
    """Run the search for ``config.iterations`` steps (or until ``run.max_minutes``) into
    ``run.out``, validating after every step."""

    def make(_budget: Budget) -> CemLearner:
        return CemLearner(config)

    settings = run.settings(
        config.iterations, validate_when=every(1), step_column="iteration", name=ALGORITHM
    )
    return train(make, settings, progress)
