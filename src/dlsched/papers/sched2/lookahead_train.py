"""Train SCED²-L (`dlsched.papers.sched2.lookahead`) by the cross-entropy method on the objective.

Each iteration draws ``population`` parameter vectors from a diagonal Gaussian, runs each on the
same ``traces_per_iter`` fresh training traces (seeds from ``[0, 2^31)``, drawn by the trainer's
own generator: never the validation or test seeds), and scores a vector by the mean over traces
of

    JCT / ref JCT + makespan / ref makespan + frag_weight · fragmentation / ref fragmentation

(average JCT, average fragmentation) where each ``ref`` is the best of SIF, DSIF and
Tiresias on that trace for that metric (the strongest non-oracle heuristics on ``sched2``). The
``elite`` best vectors set the next mean and standard deviation (plus ``noise_floor`` so the
search does not collapse). After every iteration the mean vector is scored the same way on the
validation traces (`VALIDATION_SEEDS`); the best mean by validation is the policy kept. Lower is
better; 3.0 is parity with the best heuristic on every metric.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dlsched.papers.sched2.config import CemConfig as CemConfig  # re-exported
from dlsched.papers.sched2.lookahead import LookaheadParams, LookaheadScheduler
from dlsched.rl.checkpoint import PolicyCard
from dlsched.rl.training import Validation
from dlsched.workloads.base import Workload

log = logging.getLogger(__name__)

VALIDATION_SEEDS = (90_001, 90_002, 90_003, 90_004)
"""Validation traces of SCED²-L (held out: training seeds come from the trainer's generator,
test traces are `dlsched.papers.sched2.train.TEST_SEEDS`)."""
REFERENCES = ("sif", "dsif", "tiresias")
METRICS = ("avg_jct_s", "makespan_s", "avg_fragmentation")
INIT_MEAN = (0.2, 0.2, 0.3, 1.0, 2.0, 1.0, 0.5, 0.2, 6.0)
"""Start of the search, in `LookaheadParams.NAMES` order."""
INIT_STD = (0.3, 0.3, 0.3, 1.0, 2.0, 0.5, 0.5, 0.3, 4.0)


@dataclass
class IterationLog:
    """One row of the training CSV log."""

    iteration: int
    train_best: float
    train_mean_of_elite: float
    validation: float
    validation_avg_jct_s: float
    validation_makespan_s: float
    validation_avg_fragmentation: float
    params: str
    wall_s: float


def references(workload: Workload) -> dict[str, float]:
    """Best value of each metric over `REFERENCES` on ``workload``."""
    from dlsched.runner import simulate

    summaries = [simulate(workload, name).summary() for name in REFERENCES]
    return {m: min(float(s[m]) for s in summaries) for m in METRICS}


def run_params(params: LookaheadParams, workload: Workload) -> dict[str, Any]:
    """Summary of SCED²-L with ``params`` on ``workload``."""
    from dlsched.runner import simulate

    return simulate(workload, LookaheadScheduler(params)).summary()


def score(summary: dict[str, Any], ref: dict[str, float], frag_weight: float) -> float:
    """The objective on one trace (module docstring); lower is better."""
    value = summary["avg_jct_s"] / ref["avg_jct_s"] + summary["makespan_s"] / ref["makespan_s"]
    value += frag_weight * summary["avg_fragmentation"] / max(ref["avg_fragmentation"], 1e-9)
    if summary["finished"] < summary["jobs"]:
        value += 10.0
    return float(value)


def evaluate(
    params: LookaheadParams,
    traces: Sequence[tuple[Workload, dict[str, float]]],
    frag_weight: float,
) -> tuple[float, dict[str, float]]:
    """Mean objective and mean metrics of ``params`` over ``(workload, refs)`` pairs."""
    summaries = [run_params(params, w) for w, _ in traces]
    scores = [score(s, r, frag_weight) for s, (_, r) in zip(summaries, traces, strict=True)]
    means = {m: float(np.mean([s[m] for s in summaries])) for m in METRICS}
    return float(np.mean(scores)), means


class CrossEntropySearch:
    """The search's learning step: `iteration` samples ``population`` vectors around the mean,
    scores them on fresh training traces and moves the mean to the elite's (module docstring).

    Args:
        traces: seed → a training trace.
        config: search settings.
    """

    def __init__(self, traces: Callable[[int], Workload], config: CemConfig) -> None:
        self.traces = traces
        self.config = config
        self.rng = np.random.default_rng(config.seed)
        self.mean = np.array(INIT_MEAN, dtype=np.float64)
        self.std = np.array(INIT_STD, dtype=np.float64)
        self.iterations = 0

    def params(self) -> LookaheadParams:
        """The current mean as rule parameters (the candidate policy)."""
        return LookaheadParams.from_vector(self.mean.tolist())

    def iteration(self) -> dict[str, object]:
        """One cross-entropy iteration; its log entries (the training objective's best and
        elite mean, the new mean as ``params``)."""
        config, rng = self.config, self.rng
        seeds = rng.integers(0, 2**31 - 1, size=config.traces_per_iter)
        train = [(w, references(w)) for w in (self.traces(int(s)) for s in seeds)]
        samples = np.maximum(
            rng.normal(self.mean, self.std, size=(config.population, self.mean.size)), 0.0
        )
        samples[0] = self.mean  # the current mean is always one of the candidates
        scores = np.array(
            [
                evaluate(LookaheadParams.from_vector(v.tolist()), train, config.frag_weight)[0]
                for v in samples
            ]
        )
        order = np.argsort(scores)
        elite = samples[order[: config.elite]]
        self.mean = elite.mean(axis=0)
        self.std = elite.std(axis=0) + config.noise_floor
        self.iterations += 1
        return {
            "iteration": self.iterations - 1,
            "train_best": float(scores[order[0]]),
            "train_mean_of_elite": float(scores[order[: config.elite]].mean()),
            "params": " ".join(f"{x:.4f}" for x in self.mean),
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "mean": torch.from_numpy(self.mean.copy()),
            "std": torch.from_numpy(self.std.copy()),
            "iterations": self.iterations,
            "rng": json.dumps(self.rng.bit_generator.state),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.mean = state["mean"].numpy().astype(np.float64)
        self.std = state["std"].numpy().astype(np.float64)
        self.iterations = int(state["iterations"])
        self.rng.bit_generator.state = json.loads(state["rng"])


PolicyFiles = Callable[
    [LookaheadParams, dict[str, float], int], tuple[Mapping[str, torch.Tensor], PolicyCard]
]
"""``files(params, validation metrics, iterations done)`` → the checkpoint's tensors and card."""


class LookaheadLearner:
    """`CrossEntropySearch` as a `dlsched.rl.training.Learner`: one step is one iteration; a
    validation scores the mean on the validation traces (lower objective is better).

    Args:
        search: the search.
        validation: the validation traces.
        files: makes the checkpoint of the current mean (`PolicyFiles`).
    """

    columns = tuple(IterationLog.__dataclass_fields__)

    def __init__(
        self, search: CrossEntropySearch, validation: Sequence[Workload], files: PolicyFiles
    ) -> None:
        self.search = search
        self.validation = [(w, references(w)) for w in validation]
        self.files = files
        self.metrics: dict[str, float] = {}

    def step(self) -> dict[str, object]:
        return self.search.iteration()

    def validate(self) -> Validation:
        objective, means = evaluate(
            self.search.params(), self.validation, self.search.config.frag_weight
        )
        self.metrics = {"objective": objective, **means}
        row: dict[str, object] = {"validation": objective}
        row.update({f"validation_{m}": means[m] for m in METRICS})
        return Validation((objective,), row)

    def policy_files(self) -> tuple[Mapping[str, torch.Tensor], PolicyCard]:
        return self.files(self.search.params(), self.metrics, self.search.iterations)

    def state_dict(self) -> dict[str, Any]:
        return self.search.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.search.load_state_dict(state)
