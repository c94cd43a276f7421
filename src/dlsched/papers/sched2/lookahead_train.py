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

import contextlib
import csv
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.papers.sched2.lookahead import LookaheadParams, LookaheadScheduler
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
class CemConfig:
    """Cross-entropy search settings (every field has a unit)."""

    seed: int = 0
    """Seeds the sampling and the training trace draws."""
    iterations: int = 12
    """CEM iterations."""
    population: int = 16
    """Parameter vectors per iteration."""
    elite: int = 4
    """Best vectors kept per iteration."""
    traces_per_iter: int = 3
    """Fresh training traces per iteration (every vector runs on the same ones)."""
    frag_weight: float = 1.0
    """Weight of the fragmentation term in the objective."""
    noise_floor: float = 0.05
    """Added to each standard deviation after an update."""
    time_budget_s: float | None = None
    """Stop after this many wall-clock seconds (None: run every iteration)."""


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


def train_lookahead(
    traces: Callable[[int], Workload],
    validation: Sequence[Workload],
    config: CemConfig,
    *,
    log_csv: str | Path | None = None,
    on_iteration: Callable[[IterationLog], None] | None = None,
) -> tuple[LookaheadParams, dict[str, float], list[IterationLog]]:
    """Cross-entropy search (module docstring).

    Args:
        traces: seed → a training trace.
        validation: the validation traces.
        config: search settings.
        log_csv: per-iteration CSV log.
        on_iteration: progress callback.

    Returns:
        (best parameters by validation, their validation metrics incl. ``"objective"``, log).
    """
    rng = np.random.default_rng(config.seed)
    mean = np.array(INIT_MEAN, dtype=np.float64)
    std = np.array(INIT_STD, dtype=np.float64)
    val = [(w, references(w)) for w in validation]
    wall0 = time.perf_counter()
    history: list[IterationLog] = []
    best_params = LookaheadParams.from_vector(mean.tolist())
    best_val, best_means = evaluate(best_params, val, config.frag_weight)
    best_metrics = {"objective": best_val, **best_means}
    with contextlib.ExitStack() as stack:
        writer = None
        if log_csv is not None:
            Path(log_csv).parent.mkdir(parents=True, exist_ok=True)
            handle = stack.enter_context(Path(log_csv).open("w", newline=""))
            writer = csv.DictWriter(handle, fieldnames=list(IterationLog.__dataclass_fields__))
            writer.writeheader()
        for it in range(config.iterations):
            seeds = rng.integers(0, 2**31 - 1, size=config.traces_per_iter)
            train = [(w, references(w)) for w in (traces(int(s)) for s in seeds)]
            samples = np.maximum(rng.normal(mean, std, size=(config.population, mean.size)), 0.0)
            samples[0] = mean  # the current mean is always one of the candidates
            scores = np.array(
                [
                    evaluate(LookaheadParams.from_vector(v.tolist()), train, config.frag_weight)[0]
                    for v in samples
                ]
            )
            order = np.argsort(scores)
            elite = samples[order[: config.elite]]
            mean = elite.mean(axis=0)
            std = elite.std(axis=0) + config.noise_floor
            params = LookaheadParams.from_vector(mean.tolist())
            val_score, val_means = evaluate(params, val, config.frag_weight)
            if val_score < best_val:
                best_val, best_params = val_score, params
                best_metrics = {"objective": val_score, **val_means}
            row = IterationLog(
                iteration=it,
                train_best=float(scores[order[0]]),
                train_mean_of_elite=float(scores[order[: config.elite]].mean()),
                validation=val_score,
                validation_avg_jct_s=val_means["avg_jct_s"],
                validation_makespan_s=val_means["makespan_s"],
                validation_avg_fragmentation=val_means["avg_fragmentation"],
                params=" ".join(f"{x:.4f}" for x in mean),
                wall_s=time.perf_counter() - wall0,
            )
            history.append(row)
            if writer is not None:
                writer.writerow(vars(row))
                handle.flush()
            if on_iteration is not None:
                on_iteration(row)
            if config.time_budget_s is not None and row.wall_s > config.time_budget_s:
                log.info("sched2-L: time budget reached after %d iterations", it + 1)
                break
    return best_params, best_metrics, history
