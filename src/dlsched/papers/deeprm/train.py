"""Train a DeepRM policy end to end: optional pre-training, REINFORCE, validation, files.

`train_deeprm` runs `DeepRMLearner` in the shared training run (`dlsched.rl.training`: budget,
keep-best, log, resume) and writes into ``run.out``:

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
* ``last/`` — the latest validated network (``policy.pt`` + ``card.json``) and
  ``train_state.pt`` (network, optimiser, counters, generators), which ``resume`` continues.

These are the names every ``dlsched train`` command uses (README, "Training").

Validation jobsets are ``deeprm`` seeds `VALIDATION_SEED_BASE` + i; test jobsets (experiments,
benchmarks) use `dlsched.papers.deeprm.algorithm.HELD_OUT_SEED_BASE` + i; training jobsets neither.
"""

from __future__ import annotations

import copy
import json
import logging
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dlsched.papers.deeprm.algorithm import (
    IterationStats,
    Reinforce,
    ReinforceConfig,
    Rollout,
    evaluate,
    make_jobsets,
    run_batch,
    sjf_actions,
)
from dlsched.papers.deeprm.config import FRESH_SEED_BASE
from dlsched.papers.deeprm.net import DeepRMPolicyNet
from dlsched.papers.deeprm.state import DeepRMBatch, Jobset, Objective
from dlsched.rl.checkpoint import PolicyCard, read_card
from dlsched.rl.training import Budget, Progress, RunOptions, Validation, train

log = logging.getLogger(__name__)

VALIDATION_SEED_BASE = 800_000
VALIDATION_MAX_STEPS = 3000
WORSE_PENALTY = 10.0
MODES = ("sample", "greedy")
"""Action selections validated, in `_validate_runs`' order."""
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
    return float(np.nanmean(sample.slowdown)), float(np.nanmean(greedy.slowdown))


def _validate_runs(
    net: DeepRMPolicyNet, jobsets: list[Jobset], config: ReinforceConfig
) -> tuple[Rollout, Rollout]:
    """The episodes of ``jobsets`` with sampled and with arg-max actions."""
    kwargs = dict(
        objective=config.objective,
        mask_invalid=config.mask_invalid,
        max_steps=VALIDATION_MAX_STEPS,
        shape=config.shape,
    )
    sample = evaluate(net, jobsets, greedy=False, seed=1, **kwargs)  # type: ignore[arg-type]
    greedy = evaluate(net, jobsets, greedy=True, **kwargs)  # type: ignore[arg-type]
    return sample, greedy


@dataclass
class ValidationSet:
    """Held-out jobsets for every ``(load, horizon_steps)`` point the run trains on, and SJF's
    mean slowdown and mean completion time on each point (SJF over the slots, in the same state:
    the reference).

    The score of a network (lower is better) is the mean over the points of the ratio of its
    mean of the run's objective (slowdown, or completion time for ``objective="completion"``)
    to SJF's, plus `WORSE_PENALTY` times how far its worst ratio exceeds 1: a network better
    on average but worse than SJF somewhere loses to SJF's own imitation (with one point, the
    score orders networks as their mean objective does)."""

    points: list[tuple[float, int | None]]
    jobsets: list[Jobset]
    point_of: np.ndarray
    sjf: np.ndarray
    """SJF's mean slowdown per point."""
    objective: Objective = "slowdown"
    sjf_completion: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """SJF's mean completion time (steps) per point."""

    @staticmethod
    def build(config: ReinforceConfig, per_point: int) -> ValidationSet:
        seeds = [VALIDATION_SEED_BASE + i for i in range(per_point)]
        points = config.points()
        jobsets: list[Jobset] = []
        for load, kind in points:
            jobsets += make_jobsets(seeds, load, kind, config.long_jobs, config.demands)
        point_of = np.repeat(np.arange(len(points)), per_point)
        batch = DeepRMBatch(jobsets, config.shape, max_steps=VALIDATION_MAX_STEPS)
        sjf = run_batch(batch, sjf_actions)
        n = len(points)
        return ValidationSet(
            points,
            jobsets,
            point_of,
            _per_point(sjf.slowdown, point_of, n),
            config.objective,
            _per_point(sjf.completion, point_of, n),
        )

    def score(self, run: Rollout) -> tuple[float, np.ndarray]:
        """(score, mean of the objective per point) of one validation run."""
        means = _per_point(run.metric(self.objective), self.point_of, len(self.points))
        ratio = means / (self.sjf_completion if self.objective == "completion" else self.sjf)
        return float(ratio.mean() + WORSE_PENALTY * max(0.0, ratio.max() - 1.0)), means

    def label(self, i: int) -> str:
        load, kind = self.points[i]
        return f"load{load:g}_{'long' if kind is None else f'{kind}steps'}"


def _per_point(values: np.ndarray, point_of: np.ndarray, n: int) -> np.ndarray:
    return np.array([np.nanmean(values[point_of == i]) for i in range(n)])


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
        seeds=_train_seeds(config, it),
        steps={"iterations": it, "pretrain_epochs": config.pretrain_epochs},
        validation=validation,
        hyperparams=hyper,
        notes=_notes(config),
        trained_setting={"workload": "deeprm", "params": params},
    )


def _train_seeds(config: ReinforceConfig, iterations: int) -> dict[str, list[int]]:
    """The card's training seeds: the fixed jobsets' list, or with ``fresh_jobsets`` the first
    and last seed of iterations 1 to ``iterations`` (`FRESH_SEED_BASE`; a run started with
    ``--init-from`` drew only those of its own iterations, the notes say which)."""
    if not getattr(config, "fresh_jobsets", False):
        return {"train": config.train_seeds()}
    first = FRESH_SEED_BASE + 1_000_000 * config.seed
    return {"train_fresh_range": [first, first + iterations * config.jobsets - 1]}


def _notes(config: ReinforceConfig) -> str:
    from dlsched.papers.deeprm.paper import PaperConfig, card_notes

    if isinstance(config, PaperConfig):
        return card_notes(config)
    return f"objective {config.objective}; best validation score over training"


def _on_cpu(net: DeepRMPolicyNet) -> DeepRMPolicyNet:
    """``net`` itself on the CPU, else a CPU copy (validation and checkpoints run there)."""
    if next(net.parameters()).device.type == "cpu":
        return net
    return copy.deepcopy(net).cpu()


class DeepRMLearner:
    """DeepRM's learning step for `dlsched.rl.training.train`: optional pre-training (its own
    step, logged as ``iteration = 0`` and validated), then one REINFORCE iteration per step.

    Args:
        config: hyper-parameters.
        validation_jobsets: held-out jobsets per training point.
        budget: the run's budget (the card records the seconds spent at each validation).
    """

    columns = CSV_FIELDS

    def __init__(self, config: ReinforceConfig, validation_jobsets: int, budget: Budget) -> None:
        self.config = config
        self.budget = budget
        self.val = ValidationSet.build(config, validation_jobsets)
        self.sjf_slowdown = float(np.mean(self.val.sjf))
        from dlsched.papers.deeprm.paper import PaperConfig, PaperReinforce

        # train deeprm --paper: DeepRM's own REINFORCE on the batched environment, more columns
        self.trainer: Reinforce | PaperReinforce = (
            PaperReinforce(config) if isinstance(config, PaperConfig) else Reinforce(config)
        )
        if isinstance(config, PaperConfig):
            self.columns = [*PaperReinforce.stats_type.__dataclass_fields__, *CSV_FIELDS[-3:]]
            if config.init_from:
                self._start_from(config.init_from)
        self.pretrained = config.pretrain_epochs <= 0
        self.mode = "sample"
        self.validation: dict[str, float] = {"slowdown": float("nan")}
        self.cuts: list[str] = []
        """What the wall-time budget cut part way (said in the card's notes)."""
        self.pretrained_epochs = config.pretrain_epochs

    def step(self) -> dict[str, object]:
        """Pre-training, else one iteration, each cut part way once the budget is spent: the
        pre-training between epochs, an iteration between rounds of jobsets. Rounds cost time
        (half the throughput on the shared 2-core box), so only the first iteration under a
        budget and those that may not fit in the time left (under twice the last one's time)
        run in rounds; the others run as without a budget."""
        stop = self.budget.spent if self.budget.seconds is not None else None
        cfg = self.config
        if not self.pretrained:  # the pre-trained network is a candidate too
            self.trainer.pretrain(stop=stop)
            self.pretrained = True
            done = self.trainer.pretrained_epochs
            if done < cfg.pretrain_epochs:
                self.cuts.append(f"pre-training after {done} of {cfg.pretrain_epochs} epochs")
                self.pretrained_epochs = done
            return {"iteration": 0}
        history = self.trainer.history
        last_s = history[-1].iteration_s if history else math.inf
        close = self.budget.left_s() < 2 * last_s
        row = asdict(self.trainer.step(stop if close else None))
        if row["jobsets"] < cfg.jobsets:
            self.cuts.append(
                f"iteration {row['iteration']} after {row['jobsets']} of {cfg.jobsets} jobsets"
            )
        return row

    def validate(self) -> Validation:
        """Score sampled and arg-max actions on the validation jobsets; the better one counts."""
        runs = _validate_runs(_on_cpu(self.trainer.net), self.val.jobsets, self.config)
        scored = [(*self.val.score(run), run, mode) for run, mode in zip(runs, MODES, strict=True)]
        score, _, run, self.mode = min(scored, key=lambda x: x[0])
        n = len(self.val.points)
        slowdowns = _per_point(run.slowdown, self.val.point_of, n)
        self.validation = {
            "slowdown": float(np.mean(slowdowns)),
            "sjf_slots_slowdown": self.sjf_slowdown,
            "score": score,
            "wall_s": self.budget.elapsed_s(),
        }
        for i in range(n):
            self.validation[f"slowdown_{self.val.label(i)}"] = float(slowdowns[i])
            self.validation[f"sjf_slots_{self.val.label(i)}"] = float(self.val.sjf[i])
        if self.config.objective == "completion":  # what the score ranks, beside SJF's
            completion = _per_point(run.completion, self.val.point_of, n)
            self.validation["completion_steps"] = float(np.mean(completion))
            self.validation["sjf_slots_completion_steps"] = float(np.mean(self.val.sjf_completion))
            for i in range(n):
                label = self.val.label(i)
                self.validation[f"completion_steps_{label}"] = float(completion[i])
                self.validation[f"sjf_slots_completion_steps_{label}"] = float(
                    self.val.sjf_completion[i]
                )
        row: dict[str, object] = {
            "val_sample_slowdown": float(np.nanmean(runs[0].slowdown)),
            "val_greedy_slowdown": float(np.nanmean(runs[1].slowdown)),
            "val_score": score,
        }
        return Validation((score,), row)

    def policy_files(self) -> tuple[dict[str, torch.Tensor], PolicyCard]:
        card = _card(self.config, self.mode, self.validation, self.trainer.iteration)
        card.steps["pretrain_epochs"] = self.pretrained_epochs
        if self.cuts:
            card.notes += "; cut by the wall-time budget: " + ", ".join(self.cuts)
        return _on_cpu(self.trainer.net).state_dict(), card

    def state_dict(self) -> dict[str, Any]:
        return {
            "net": self.trainer.net.state_dict(),
            "optimizer": self.trainer.optimizer.state_dict(),
            "iteration": self.trainer.iteration,
            "pretrained": self.pretrained,
            "pretrained_epochs": self.pretrained_epochs,
            "cuts": list(self.cuts),
            "rng": json.dumps(self.trainer.rng.bit_generator.state),
            "torch_rng": torch.get_rng_state(),
            # --paper samples actions from its own generator (on the GPU with --device cuda)
            "sample_rng": getattr(self.trainer, "gen", torch.Generator()).get_state(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.trainer.net.load_state_dict(state["net"])
        self.trainer.optimizer.load_state_dict(state["optimizer"])
        self.trainer.iteration = int(state["iteration"])
        self.pretrained = bool(state["pretrained"])
        self.pretrained_epochs = int(state.get("pretrained_epochs", self.pretrained_epochs))
        self.cuts = [str(cut) for cut in state.get("cuts", [])]
        self.trainer.rng.bit_generator.state = json.loads(state["rng"])
        torch.set_rng_state(state["torch_rng"])
        gen = getattr(self.trainer, "gen", None)
        if gen is not None and "sample_rng" in state:
            try:
                gen.set_state(state["sample_rng"])
            except RuntimeError:  # another device's generator: --paper reseeds it per part
                log.info("deeprm: resumed on another device; the sampling generator is reseeded")

    def _start_from(self, folder: str) -> None:
        """``--init-from``: the network of the policy in ``folder``, its iterations counted on."""
        from dlsched.rl.checkpoint import load_checkpoint

        state, card = load_checkpoint(folder, algorithm="deeprm")
        self.trainer.net.load_state_dict(state)
        self.trainer.iteration = int(card.steps.get("iterations", 0))
        log.info("deeprm: starting from %s (iteration %d)", folder, self.trainer.iteration)

    def close(self) -> None:
        self.trainer.close()


def train_deeprm(
    config: ReinforceConfig,
    run: RunOptions,
    *,
    validate_every: int = 10,
    validation_jobsets: int = 20,
    progress: Progress | None = None,
) -> TrainOutcome:
    """Train for ``config.iterations`` iterations (or until ``run.max_minutes``), writing the
    files of `dlsched.rl.training` into ``run.out`` (module docstring).

    Args:
        config: hyper-parameters.
        run: output folder, budget, TensorBoard, resume and force (`RunOptions`).
        validate_every: iterations between validations (the last one is always validated).
        validation_jobsets: held-out jobsets per validation.
        progress: ``progress(steps_done, row)`` after each log row (progress bars).
    """
    learners: list[DeepRMLearner] = []

    def make(budget: Budget) -> DeepRMLearner:
        learners.append(DeepRMLearner(config, validation_jobsets, budget))
        return learners[-1]

    pretrain = config.pretrain_epochs > 0
    settings = run.settings(
        config.iterations + int(pretrain),
        # step 1 is the pre-training when there is one: iteration = step - 1
        validate_when=lambda step: (step - int(pretrain)) % validate_every == 0,
        step_column="iteration",
        name="deeprm",
    )
    try:
        result = train(make, settings, progress)
    finally:
        for learner in learners:
            learner.close()
    card = read_card(result.out)  # what OUT holds, also after a resume
    return TrainOutcome(
        result.out,
        float(card.validation.get("slowdown", float("nan"))),
        str(card.hyperparams.get("action_selection", "sample")),
        int(card.steps.get("iterations", 0)),
        learners[0].sjf_slowdown,
        result.wall_s,
        result.steps - int(pretrain),
    )
