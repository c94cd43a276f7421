"""``dlsched reproduce dl2``: DL2's evaluation (Peng et al., §6.3–6.5) on the ``dl2`` workload.

Evaluation figures (this module; held-out trace seeds `EVAL_SEEDS`, never used in training or
validation; the ``dl2`` workload's 13-server testbed and 200-job traces unless the size says
otherwise):

* **Fig. 9** (``fig9_jct.csv/png``) — average JCT of the shipped policies and the baselines:
  DRF, Tetris, Optimus, OfflineRL (``offline-rl``, when that scheduler is registered), DL2
  (``dl2``, the shipped policy), and ``efficient-srtf``, the strongest simple rule we have.
* **Fig. 13** (``fig13_speed_variation.csv/png``) — JCT of DL2, DRF and Optimus as the
  interference noise on training speed (the workload's ``noise``: relative std of a per-job,
  per-slot speed factor) grows. The shipped DL2 policy was trained at the default 0.273.
* **Fig. 14** (``fig14_epoch_error.csv/png``) — epoch-estimate error: the policy is told that a
  job trains ``v`` epochs while it really needs ``v·(1 ± error)`` (sign drawn per job);
  `EpochEstimateError` shows the scheduler a view whose jobs carry the estimate, the simulator
  runs the truth. DRF never reads epochs, so its line is flat.
* **Fig. 17** (``fig17_job_cap.csv/png``) — the J cap: the shipped per-row network (its
  weights do not depend on J) run with J job rows; with more active jobs than J the state holds
  the first J by arrival and the rest are scheduled in further batches. Two loads, so that the
  number of concurrent jobs exceeds every J.

Training figures (`dlsched.papers.dl2.experiments_training`): Fig. 10 (SL only / RL only / SL then
RL, with DRF's line), Table 2 (ablations), Fig. 15 (unseen job types), Fig. 16 (SL teachers).

Sizes: `REDUCED` (default, ≤ 15 min on a 2-core box: fewer seeds, and training on 60-job
traces with a 64×64 network and a few hundred updates), `FULL` (``--full``: ten held-out
traces per point and the paper's training size: 200-job traces, 256×256, 1,600 RL steps), and
a hidden `SMOKE` size for tests. ``DLSCHED_DL2_REPRO_SIZE=smoke|reduced|full`` overrides the
size (tests use it to run the CLI path quickly).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dlsched.core import ClusterView, Decision, JobRun
from dlsched.csv_rows import write_csv
from dlsched.papers.dl2.experiments_training import (
    Size,
    TrainingResults,
    TrainSize,
    run_training,
)
from dlsched.papers.dl2.network import Dl2Config, make_policy, make_scheduler_for
from dlsched.papers.dl2.report import write_figures, write_markdown
from dlsched.papers.dl2.scheduler import PAPER_METHOD, SHIPPED
from dlsched.rl.checkpoint import load_checkpoint
from dlsched.runner import simulate
from dlsched.schedulers.base import Scheduler, WrappingScheduler
from dlsched.schedulers.registry import make_scheduler, schedulers

log = logging.getLogger(__name__)

FIG9_SCHEDULERS = ("drf", "tetris", "optimus", "offline-rl", "efficient-srtf", "dl2", PAPER_METHOD)
EVAL_SEEDS = tuple(range(101, 111))
SIZE_ENV = "DLSCHED_DL2_REPRO_SIZE"


FULL = Size("full", "", EVAL_SEEDS, EVAL_SEEDS)
REDUCED = Size(
    "reduced",
    "3 held-out traces for Fig. 9 and 2 per point of Figs. 13/14/17 (full: 10); 4 noise "
    "levels, 3 epoch errors, J ∈ {10, 20, 40}; training on 60-job traces (full: 200) "
    "validated on 2 traces (full: 3) with a 64×64 network (full: 256×256), mini-batch 128 "
    "(full: 256), SL data from 3 traces, 200 SL + 300 RL steps (full: 1,000 + 1,600), "
    "100 RL steps after SL from each non-DRF teacher (full: 1,600)",
    EVAL_SEEDS[:3],
    EVAL_SEEDS[:2],
    noise_levels=(0.0, 0.15, 0.273, 0.5),
    epoch_errors=(0.0, 0.1, 0.2),
    job_caps=(10, 20, 40),
    train=TrainSize(
        workload_options={"num_jobs": 60},
        val_seeds=(201, 202),
        hidden=(64, 64),
        batch_size=128,
        sl_episodes=3,
        sl_steps=200,
        rl_steps=300,
        eval_every=50,
        teacher_rl_steps=100,
    ),
)
SMOKE = Size(
    "smoke",
    "SMOKE TEST size: tiny traces and a few updates; the numbers mean nothing",
    (101,),
    (101,),
    eval_options={"servers": 3, "num_jobs": 12, "load": 0.25},
    noise_levels=(0.0, 0.3),
    epoch_errors=(0.0, 0.2),
    job_caps=(2, 40),
    cap_loads=(0.25,),
    train=TrainSize(
        workload_options={"servers": 2, "num_jobs": 8, "load": 0.15},
        val_seeds=(201,),
        hidden=(16,),
        batch_size=32,
        sl_episodes=1,
        sl_steps=4,
        rl_steps=4,
        eval_every=2,
        teachers=("drf", "fifo"),
        teacher_rl_steps=2,
    ),
)
SIZES = {s.label: s for s in (SMOKE, REDUCED, FULL)}


class EpochEstimateError(WrappingScheduler):
    """Shows ``inner`` each job with total epochs ``v`` while it really trains ``v·(1 ± error)``.

    The sign is drawn per job (from ``seed`` and the job id), so the estimate of a job is fixed
    for its whole life, as a user's estimate would be.
    """

    def __init__(self, inner: Scheduler, error: float, seed: int) -> None:
        super().__init__(inner)
        self.error = error
        self.seed = seed

    def _estimated(self, run: JobRun) -> JobRun:
        sign = 1.0 if np.random.default_rng([self.seed, run.job_id]).random() < 0.5 else -1.0
        estimate = run.spec.total_work / (1.0 + sign * self.error)
        return dataclasses.replace(run, spec=dataclasses.replace(run.spec, total_work=estimate))

    def decide(self, view: ClusterView) -> Decision:
        if self.error == 0.0:
            return self.inner.decide(view)
        seen = dataclasses.replace(
            view,
            pending=[self._estimated(r) for r in view.pending],
            running=[self._estimated(r) for r in view.running],
        )
        return self.inner.decide(seen)


def shipped_dl2(J: int | None = None, path: Path = SHIPPED) -> Scheduler:
    """The shipped DL2 policy with ``J`` job rows (its per-row weights fit any J)."""
    state, card = load_checkpoint(path, algorithm="dl2")
    hp = card.hyperparams
    cfg = Dl2Config(
        J=int(hp["J"]) if J is None else J,
        job_types=tuple(hp["job_types"]),
        hidden=tuple(hp["hidden"]),
        arch=str(hp["arch"]),
    )
    if cfg.arch != "rows" and J not in (None, int(hp["J"])):
        raise ValueError(f"{path}: a flat-MLP policy only runs with its own J={hp['J']}")
    policy = make_policy(cfg)
    policy.load_state_dict(state)
    return make_scheduler_for(policy.eval(), cfg)


def _jct(scheduler: str | Scheduler, seed: int, **options: Any) -> tuple[float, int]:
    """(average JCT in s, most active jobs at any scheduling point) of one run."""
    result = simulate("dl2", scheduler, seed=seed, **options)
    tl = result.timeline
    concurrent = max((r + p for r, p in zip(tl.running, tl.pending, strict=True)), default=0)
    return float(result.summary()["avg_jct_s"]), int(concurrent)


def _has_policy(name: str) -> bool:
    """Whether a ``dl2`` spec's checkpoint exists (always True for a rule)."""
    from dlsched.papers.dl2.scheduler import policy_dir

    return not name.startswith("dl2") or (policy_dir(name) / "card.json").exists()


def fig9(size: Size) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows ``(scheduler, seed, avg_jct_s)`` and the schedulers that were not available."""
    registered = schedulers()
    rows, missing = [], []
    for name in FIG9_SCHEDULERS:
        if name.split(":")[0] not in registered or not _has_policy(name):
            missing.append(name)
            continue
        for seed in size.fig9_seeds:
            jct, _ = _jct(name, seed, **size.eval_options)
            rows.append({"scheduler": name, "seed": seed, "avg_jct_s": jct})
    return rows, missing


def fig13(size: Size) -> list[dict[str, Any]]:
    """JCT of dl2, drf and optimus per interference level."""
    rows = []
    for noise in size.noise_levels:
        for seed in size.sweep_seeds:
            for name in ("dl2", "drf", "optimus"):
                options = {**size.eval_options, "noise": noise}
                jct, _ = _jct(name, seed, **options)
                rows.append({"noise": noise, "scheduler": name, "seed": seed, "avg_jct_s": jct})
    return rows


def fig14(size: Size) -> list[dict[str, Any]]:
    """JCT of dl2 (told wrong epochs) and drf (oblivious) per estimate error."""
    rows = []
    drf = {s: _jct("drf", s, **size.eval_options)[0] for s in size.sweep_seeds}
    for error in size.epoch_errors:
        for seed in size.sweep_seeds:
            told = EpochEstimateError(make_scheduler("dl2"), error, seed)
            jct, _ = _jct(told, seed, **size.eval_options)
            rows.append({"error": error, "scheduler": "dl2", "seed": seed, "avg_jct_s": jct})
            rows.append({"error": error, "scheduler": "drf", "seed": seed, "avg_jct_s": drf[seed]})
    return rows


def fig17(size: Size) -> list[dict[str, Any]]:
    """JCT of the shipped policy per J and load, with DRF and the most concurrent jobs."""
    rows = []
    for load in size.cap_loads:
        options = {**size.eval_options, "load": load}
        for seed in size.sweep_seeds:
            drf_jct, drf_conc = _jct("drf", seed, **options)
            rows.append(
                {
                    "load": load,
                    "J": 0,
                    "scheduler": "drf",
                    "seed": seed,
                    "avg_jct_s": drf_jct,
                    "max_concurrent_jobs": drf_conc,
                }
            )
            for J in size.job_caps:
                jct, conc = _jct(shipped_dl2(J), seed, **options)
                rows.append(
                    {
                        "load": load,
                        "J": J,
                        "scheduler": "dl2",
                        "seed": seed,
                        "avg_jct_s": jct,
                        "max_concurrent_jobs": conc,
                    }
                )
    return rows


def run(out_dir: Path, *, full: bool = False, size: Size | str | None = None) -> list[Path]:
    """Write every figure and table (CSV, PNG) and ``dl2.md`` into ``out_dir``.

    Args:
        out_dir: output folder (created).
        full: the paper's size (slow: hours) instead of the reduced default.
        size: overrides ``full``: a `Size` or a label (``"smoke"`` for tests); None reads
            ``$DLSCHED_DL2_REPRO_SIZE`` and falls back to ``full``.
    """
    torch.set_num_threads(1)
    if size is None:
        size = os.environ.get(SIZE_ENV) or ("full" if full else "reduced")
    if isinstance(size, str):
        if size not in SIZES:
            raise ValueError(f"{SIZE_ENV}={size!r}: choose one of {', '.join(SIZES)}")
        size = SIZES[size]
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []

    log.info("dl2 reproduction (%s): Fig. 9", size.label)
    f9, missing = fig9(size)
    paths.append(write_csv(out_dir / "fig9_jct.csv", f9))
    log.info("Fig. 13")
    f13 = fig13(size)
    paths.append(write_csv(out_dir / "fig13_speed_variation.csv", f13))
    log.info("Fig. 14")
    f14 = fig14(size)
    paths.append(write_csv(out_dir / "fig14_epoch_error.csv", f14))
    log.info("Fig. 17")
    f17 = fig17(size)
    paths.append(write_csv(out_dir / "fig17_job_cap.csv", f17))
    log.info("training: Fig. 10, Table 2, Fig. 16, Fig. 15")
    trained: TrainingResults = run_training(size.train)
    paths.append(write_csv(out_dir / "fig10_training.csv", trained.fig10))
    paths.append(write_csv(out_dir / "table2_ablations.csv", trained.table2))
    paths.append(write_csv(out_dir / "table2_curves.csv", trained.table2_curves))
    paths.append(write_csv(out_dir / "fig15_unseen_types.csv", trained.fig15))
    paths.append(write_csv(out_dir / "fig16_teachers.csv", trained.fig16))
    paths.append(write_csv(out_dir / "fig16_curves.csv", trained.fig16_curves))
    paths += write_figures(out_dir, size, f9, f13, f14, f17, trained)
    paths.append(write_markdown(out_dir, size, f9, missing, f13, f14, f17, trained))
    return paths
