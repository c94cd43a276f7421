"""Train a DeepRM policy end to end: optional pre-training, REINFORCE, validation, files.

`train_deeprm` writes into ``out_dir``:

* ``train_log.csv`` — one row per iteration: wall seconds since the start (pre-training and
  validations included) and the iteration's seconds, mean and max episode
  reward, mean slowdown of the sampled episodes (DeepRM Fig. 6), samples, dropped and truncated
  episodes, and, every ``validate_every`` iterations, the mean slowdown on held-out validation
  jobsets with sampled and with arg-max actions and the validation score (`ValidationSet`);
  with pre-training, a row ``iteration = 0`` validates the pre-trained network;
* ``policy.pt`` + ``card.json`` — the checkpoint (`dlsched.rl.checkpoint`) with the lowest
  validation score (the
  pre-trained network included), its card recording which action selection (``"sample"`` or
  ``"greedy"``) reached it, the score and the mean slowdown of every training setting, and the
  ``trained_setting`` (`dlsched.rl.setting`);
* ``last/`` — the final network (``policy.pt`` + ``card.json``).

These are the names every ``dlsched train`` command uses (README, "Training").

Validation jobsets are ``deeprm`` seeds `VALIDATION_SEED_BASE` + i; test jobsets (experiments,
benchmarks) use `dlsched.papers.deeprm.algorithm.HELD_OUT_SEED_BASE` + i; training jobsets neither.
"""

from __future__ import annotations

import copy
import csv
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.papers.deeprm.algorithm import (
    IterationStats,
    Reinforce,
    ReinforceConfig,
    evaluate,
    make_jobsets,
    run_batch,
    sjf_actions,
)
from dlsched.papers.deeprm.net import DeepRMPolicyNet
from dlsched.papers.deeprm.state import DeepRMBatch, Jobset
from dlsched.rl.checkpoint import PolicyCard, save_checkpoint
from dlsched.rl.files import LOG_FILE
from dlsched.rl.tensorboard import open_mirror

log = logging.getLogger(__name__)

VALIDATION_SEED_BASE = 800_000
VALIDATION_MAX_STEPS = 3000
WORSE_PENALTY = 10.0
CSV_FIELDS = [
    *IterationStats.__dataclass_fields__,
    "val_sample_slowdown",
    "val_greedy_slowdown",
    "val_score",
]


@dataclass
class TrainOutcome:
    """What a training run reached."""

    best_dir: Path
    """Folder of the kept network's ``policy.pt`` and ``card.json`` (the output folder)."""
    best_slowdown: float
    """Mean validation slowdown of the kept network (over the validation points)."""
    best_mode: str
    best_iteration: int
    sjf_slowdown: float
    """SJF over the M slots on the same validation jobsets (reference, mean over points)."""
    wall_s: float
    iterations: int


def validate(
    net: DeepRMPolicyNet, jobsets: list[Jobset], config: ReinforceConfig
) -> tuple[float, float]:
    """Mean slowdown on ``jobsets`` with sampled and with arg-max actions."""
    sample, greedy = _validate_runs(net, jobsets, config)
    return float(np.nanmean(sample)), float(np.nanmean(greedy))


def _validate_runs(
    net: DeepRMPolicyNet, jobsets: list[Jobset], config: ReinforceConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Per-jobset slowdowns with sampled and with arg-max actions."""
    kwargs = dict(
        objective=config.objective,
        mask_invalid=config.mask_invalid,
        max_steps=VALIDATION_MAX_STEPS,
        shape=config.shape,
    )
    sample = evaluate(net, jobsets, greedy=False, seed=1, **kwargs)  # type: ignore[arg-type]
    greedy = evaluate(net, jobsets, greedy=True, **kwargs)  # type: ignore[arg-type]
    return sample.slowdown, greedy.slowdown


@dataclass
class ValidationSet:
    """Held-out jobsets for every ``(load, horizon_steps)`` point the run trains on, and SJF's
    mean slowdown on each point (SJF over the slots, in the same state: the reference).

    The score of a network (lower is better) is the mean over the points of the ratio of its
    mean slowdown to SJF's, plus `WORSE_PENALTY` times how far its worst ratio exceeds 1: a
    network better on average but worse than SJF somewhere loses to SJF's own imitation (with
    one point, the score orders networks as their mean slowdown does)."""

    points: list[tuple[float, int | None]]
    jobsets: list[Jobset]
    point_of: np.ndarray
    sjf: np.ndarray

    @staticmethod
    def build(config: ReinforceConfig, per_point: int) -> ValidationSet:
        seeds = [VALIDATION_SEED_BASE + i for i in range(per_point)]
        points = config.points()
        jobsets: list[Jobset] = []
        for load, kind in points:
            jobsets += make_jobsets(seeds, load, kind, config.long_jobs)
        point_of = np.repeat(np.arange(len(points)), per_point)
        batch = DeepRMBatch(jobsets, config.shape, max_steps=VALIDATION_MAX_STEPS)
        sjf = run_batch(batch, sjf_actions).slowdown
        return ValidationSet(points, jobsets, point_of, _per_point(sjf, point_of, len(points)))

    def score(self, slowdowns: np.ndarray) -> tuple[float, np.ndarray]:
        """(score, mean slowdown per point)."""
        means = _per_point(slowdowns, self.point_of, len(self.points))
        ratio = means / self.sjf
        return float(ratio.mean() + WORSE_PENALTY * max(0.0, ratio.max() - 1.0)), means

    def label(self, i: int) -> str:
        load, kind = self.points[i]
        return f"load{load:g}_{'long' if kind is None else f'{kind}steps'}"


def _per_point(values: np.ndarray, point_of: np.ndarray, n: int) -> np.ndarray:
    return np.array([np.nanmean(values[point_of == i]) for i in range(n)])


def _on_cpu(net: DeepRMPolicyNet) -> DeepRMPolicyNet:
    """``net`` itself on the CPU, else a CPU copy (validation and checkpoints run there)."""
    if next(net.parameters()).device.type == "cpu":
        return net
    return copy.deepcopy(net).cpu()


def _notes(config: ReinforceConfig) -> str:
    from dlsched.papers.deeprm.paper import PaperConfig, card_notes

    if isinstance(config, PaperConfig):
        return card_notes(config)
    return f"objective {config.objective}; best validation score over training"


def _card(config: ReinforceConfig, mode: str, validation: dict[str, float], it: int) -> PolicyCard:
    hyper = config.to_dict()
    hyper.pop("shape", None)
    hyper["action_selection"] = mode
    loads = config.loads or (config.load,)
    params: dict[str, object] = {"servers": 1}
    params["load"] = [min(loads), max(loads)] if len(loads) > 1 else loads[0]
    if not config.long_jobs:
        params["horizon_steps"] = config.horizon_steps
    workload_params: dict[str, object] = {
        "load": config.load,
        "horizon_steps": config.horizon_steps,
    }
    if config.loads:
        workload_params["loads"] = list(config.loads)
    if config.long_jobs:
        workload_params["long_jobs_num_jobs"] = config.long_jobs
    return PolicyCard(
        algorithm="deeprm",
        workload="deeprm",
        workload_params=workload_params,
        shapes=config.shape.shapes(),
        seeds={"train": config.train_seeds()},
        steps={"iterations": it, "pretrain_epochs": config.pretrain_epochs},
        validation=validation,
        hyperparams=hyper,
        notes=_notes(config),
        trained_setting={"workload": "deeprm", "params": params},
    )


def train_deeprm(
    config: ReinforceConfig,
    out_dir: str | Path,
    *,
    time_budget_s: float | None = None,
    validate_every: int = 10,
    validation_jobsets: int = 20,
    on_iteration: Callable[[IterationStats], None] | None = None,
    tensorboard: Path | None = None,
) -> TrainOutcome:
    """Train for ``config.iterations`` iterations (or until ``time_budget_s``), writing files.

    Args:
        config: hyper-parameters.
        out_dir: output folder (created).
        time_budget_s: stop after the iteration that passes this many seconds (pre-training
            included); None: no limit.
        validate_every: iterations between validations (the last one is always validated).
        validation_jobsets: held-out jobsets per validation.
        on_iteration: called after each iteration (progress bars).
        tensorboard: also write every log row as TensorBoard scalars here
            (`dlsched.rl.tensorboard`), or None.
    """
    from dlsched.papers.deeprm.paper import PaperConfig, PaperReinforce

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    val = ValidationSet.build(config, validation_jobsets)
    sjf_slowdown = float(np.mean(val.sjf))
    best: dict[str, Any] = {"score": float("inf"), "mode": "sample", "it": 0, "slowdown": 0.0}
    wall0 = time.perf_counter()

    def check(trainer: Reinforce | PaperReinforce, it: int, row: dict[str, object]) -> None:
        """Validate; keep the network as ``out/policy.pt`` if its score is the lowest so far."""
        net = _on_cpu(trainer.net)
        runs = _validate_runs(net, val.jobsets, config)
        row["val_sample_slowdown"] = float(np.nanmean(runs[0]))
        row["val_greedy_slowdown"] = float(np.nanmean(runs[1]))
        scored = [(*val.score(runs[0]), "sample"), (*val.score(runs[1]), "greedy")]
        score, means, mode = min(scored, key=lambda x: x[0])
        row["val_score"] = score
        if score >= best["score"]:
            return
        best.update(score=score, mode=mode, it=it, slowdown=float(np.mean(means)))
        validation = {
            "slowdown": float(np.mean(means)),
            "sjf_slots_slowdown": sjf_slowdown,
            "score": score,
            "wall_s": time.perf_counter() - wall0,
        }
        for i in range(len(val.points)):
            validation[f"slowdown_{val.label(i)}"] = float(means[i])
            validation[f"sjf_slots_{val.label(i)}"] = float(val.sjf[i])
        card = _card(config, mode, validation, it)
        save_checkpoint(out, net.state_dict(), card)

    mirror = open_mirror(tensorboard)
    paper = isinstance(config, PaperConfig)
    trainer = PaperReinforce(config) if paper else Reinforce(config)  # type: ignore[arg-type]
    fields = (
        [*PaperReinforce.stats_type.__dataclass_fields__, *CSV_FIELDS[-3:]] if paper else CSV_FIELDS
    )
    with trainer, (out / LOG_FILE).open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        if config.pretrain_epochs > 0:
            trainer.pretrain()
            row0: dict[str, object] = {"iteration": 0, "wall_s": time.perf_counter() - wall0}
            check(trainer, 0, row0)  # the pre-trained network is a candidate too
            writer.writerow(row0)
            if mirror is not None:
                mirror.add(row0, 0)
        for it in range(1, config.iterations + 1):
            stats = trainer.step()
            stats.wall_s = time.perf_counter() - wall0  # wall time, validation included
            row: dict[str, object] = asdict(stats)
            over = time_budget_s is not None and stats.wall_s >= time_budget_s
            if it % validate_every == 0 or it == config.iterations or over:
                check(trainer, it, row)
            writer.writerow(row)
            fh.flush()
            if mirror is not None:
                mirror.add(row, it)
            if on_iteration is not None:
                on_iteration(stats)
            if over:
                break
        if mirror is not None:
            mirror.close()
        save_checkpoint(
            out / "last",
            _on_cpu(trainer.net).state_dict(),
            _card(config, best["mode"], {"slowdown": float("nan")}, trainer.iteration),
        )
    return TrainOutcome(
        out,
        best["slowdown"],
        best["mode"],
        best["it"],
        sjf_slowdown,
        time.perf_counter() - wall0,
        trainer.iteration,
    )
