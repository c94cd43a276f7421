"""Train a DeepRM policy end to end: optional SJF pre-training, REINFORCE, validation, files.

`train_deeprm` writes into ``out_dir``:

* ``progress.csv`` — one row per iteration: wall seconds since the start (pre-training and
  validations included) and the iteration's seconds, mean and max episode
  reward, mean slowdown of the sampled episodes (DeepRM Fig. 6), samples, dropped and truncated
  episodes, and, every ``validate_every`` iterations, the mean slowdown on held-out validation
  jobsets with sampled and with arg-max actions;
* ``best/`` — the checkpoint (`dlsched.rl.checkpoint`) with the lowest validation slowdown, its
  card recording which action selection (``"sample"`` or ``"greedy"``) reached it;
* ``last/`` — the final network.

Validation jobsets are ``deeprm`` seeds `VALIDATION_SEED_BASE` + i; test jobsets (experiments,
benchmarks) use `dlsched.papers.deeprm.algorithm.HELD_OUT_SEED_BASE` + i; training jobsets neither.
"""

from __future__ import annotations

import csv
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

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

log = logging.getLogger(__name__)

VALIDATION_SEED_BASE = 800_000
CSV_FIELDS = [*IterationStats.__dataclass_fields__, "val_sample_slowdown", "val_greedy_slowdown"]


@dataclass
class TrainOutcome:
    """What a training run reached."""

    best_dir: Path
    best_slowdown: float
    best_mode: str
    best_iteration: int
    sjf_slowdown: float
    """SJF over the M slots on the same validation jobsets (reference)."""
    elapsed_s: float
    iterations: int


def validate(
    net: DeepRMPolicyNet, jobsets: list[Jobset], config: ReinforceConfig
) -> tuple[float, float]:
    """Mean slowdown on ``jobsets`` with sampled and with arg-max actions."""
    kwargs = dict(objective=config.objective, mask_invalid=config.mask_invalid, max_steps=2000)
    sample = evaluate(net, jobsets, greedy=False, seed=1, **kwargs)  # type: ignore[arg-type]
    greedy = evaluate(net, jobsets, greedy=True, **kwargs)  # type: ignore[arg-type]
    return float(np.nanmean(sample.slowdown)), float(np.nanmean(greedy.slowdown))


def _card(config: ReinforceConfig, mode: str, validation: dict[str, float], it: int) -> PolicyCard:
    hyper = config.to_dict()
    hyper.pop("shape", None)
    hyper["action_selection"] = mode
    return PolicyCard(
        algorithm="deeprm",
        workload="deeprm",
        workload_params={"load": config.load, "horizon_steps": config.horizon_steps},
        shapes=config.shape.shapes(),
        seeds={"train": config.train_seeds()},
        steps={"iterations": it, "pretrain_epochs": config.pretrain_epochs},
        validation=validation,
        hyperparams=hyper,
        notes=f"objective {config.objective}; best validation slowdown over training",
    )


def train_deeprm(
    config: ReinforceConfig,
    out_dir: str | Path,
    *,
    time_budget_s: float | None = None,
    validate_every: int = 10,
    validation_jobsets: int = 20,
    on_iteration: Callable[[IterationStats], None] | None = None,
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
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seeds = [VALIDATION_SEED_BASE + i for i in range(validation_jobsets)]
    val_sets = make_jobsets(seeds, config.load, config.horizon_steps)
    sjf = run_batch(DeepRMBatch(val_sets, config.shape, max_steps=2000), sjf_actions)
    sjf_slowdown = float(np.nanmean(sjf.slowdown))
    best = (float("inf"), "sample", 0)
    wall0 = time.perf_counter()
    with Reinforce(config) as trainer, (out / "progress.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        writer.writeheader()
        if config.pretrain_epochs > 0:
            trainer.pretrain()
        for it in range(1, config.iterations + 1):
            stats = trainer.step()
            stats.elapsed_s = time.perf_counter() - wall0  # wall time, validation included
            row: dict[str, object] = asdict(stats)
            over = time_budget_s is not None and stats.elapsed_s >= time_budget_s
            if it % validate_every == 0 or it == config.iterations or over:
                val_sample, val_greedy = validate(trainer.net, val_sets, config)
                row["val_sample_slowdown"], row["val_greedy_slowdown"] = val_sample, val_greedy
                score, mode = min((val_sample, "sample"), (val_greedy, "greedy"))
                if score < best[0]:
                    best = (score, mode, it)
                    validation = {
                        "slowdown": score,
                        "sjf_slots_slowdown": sjf_slowdown,
                        "elapsed_s": stats.elapsed_s,
                    }
                    save_checkpoint(
                        out / "best", trainer.net.state_dict(), _card(config, mode, validation, it)
                    )
            writer.writerow(row)
            fh.flush()
            if on_iteration is not None:
                on_iteration(stats)
            if over:
                break
        save_checkpoint(
            out / "last",
            trainer.net.state_dict(),
            _card(config, best[1], {"slowdown": float("nan")}, trainer.iteration),
        )
    return TrainOutcome(
        out / "best",
        best[0],
        best[1],
        best[2],
        sjf_slowdown,
        time.perf_counter() - wall0,
        trainer.iteration,
    )
