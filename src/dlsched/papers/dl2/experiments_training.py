"""The training half of ``dlsched reproduce dl2``: DL2 Fig. 10, Table 2, Fig. 15 and Fig. 16.

Every run here trains small DL2 policies from scratch with the primitives of
`dlsched.papers.dl2.algorithm` (`collect_teacher`, `supervised`, `Learner`, `Rollout`,
`actor_critic`) and `dlsched.papers.dl2.network.evaluate`, and records the validation average
JCT (greedy policy, `dlsched.simulate`, validation seeds never trained on) every ``eval_every``
updates:

* **Fig. 10** — three curves from the same initial network: SL only (imitating DRF the whole
  time), RL only (actor-critic from the random network), SL then RL (``sl_steps`` of SL, then
  ``rl_steps`` of RL); DRF's own validation JCT is the flat reference line.
* **Table 2** — from the SL-then-RL run's SL policy, ``rl_steps`` of RL with each ablation of
  `Dl2Config` (``value_net``, ``exploration``, ``replay`` False) vs full DL2 (the Fig. 10 run):
  the same start, the same training traces, the same number of updates.
* **Fig. 16** — SL from each teacher (DRF, FIFO, SRTF, Tetris, Optimus) for ``sl_steps``, then
  ``teacher_rl_steps`` of RL; the validation JCT of the teacher itself, after SL, and after RL.
* **Fig. 15** — unseen job types: SL and the first half of RL on traces whose jobs are only of
  the first six types of Table 1 (the other two are remapped to one of the six, keeping each
  job's duration at its requested size), then the second half of RL on traces with all eight;
  validation always uses all eight. The "ideal" curve is Fig. 10's SL-then-RL run, trained on
  all eight from the start.

One RL step is one actor-critic update after one simulated time slot (DL2 §6.2: "one update of
the neural network at the end of each time slot as one step").
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from dlsched.models.measured_ps import MeasuredPS
from dlsched.papers.dl2.algorithm import (
    Learner,
    Rollout,
    TeacherData,
    actor_critic,
    collect_teacher,
    supervised,
)
from dlsched.papers.dl2.env import Dl2Env
from dlsched.papers.dl2.network import Dl2Config, evaluate, make_policy, seed_everything
from dlsched.runner import simulate
from dlsched.workloads.base import Workload
from dlsched.workloads.dl2 import JOB_TYPES, worker_demand

log = logging.getLogger(__name__)

SEEN_TYPES: tuple[str, ...] = JOB_TYPES[:6]
"""Job types of Fig. 15's first phase (the first six of Table 1)."""
UNSEEN_TYPES: tuple[str, ...] = JOB_TYPES[6:]
"""The two types that appear only in the second half of Fig. 15's RL phase."""
ABLATIONS: tuple[tuple[str, dict[str, bool]], ...] = (
    ("without value network", {"value_net": False}),
    ("without exploration", {"exploration": False}),
    ("without experience replay", {"replay": False}),
)


@dataclass(frozen=True)
class TrainSize:
    """How much training the experiment does.

    Attributes:
        workload_options: ``dl2`` generator options of training and validation traces
            (``servers``, ``num_jobs``, ``load``); empty means the default 13-server, 200-job
            traces.
        val_seeds: validation trace seeds (below `TRAIN_SEED_MIN`, never trained on).
        hidden: hidden layer sizes of the policy and value networks.
        batch_size: mini-batch size, samples.
        sl_episodes: traces each teacher is replayed on for the SL data set.
        sl_steps: supervised mini-batch updates.
        rl_steps: actor-critic updates (one per simulated slot).
        eval_every: updates between two validations.
        teachers: SL teachers of Fig. 16 (scheduler registry names).
        teacher_rl_steps: RL updates after SL from each teacher in Fig. 16.
        seed: seed of every network initialisation and training-trace draw.
    """

    workload_options: Mapping[str, Any] = field(default_factory=dict)
    val_seeds: tuple[int, ...] = (201, 202, 203)
    hidden: tuple[int, ...] = (256, 256)
    batch_size: int = 256
    sl_episodes: int = 4
    sl_steps: int = 1000
    rl_steps: int = 1600
    eval_every: int = 100
    teachers: tuple[str, ...] = ("drf", "fifo", "srtf", "tetris", "optimus")
    teacher_rl_steps: int = 1600
    seed: int = 0


@dataclass(frozen=True)
class Size:
    """How big the reproduction is.

    Attributes:
        label: ``"smoke"``, ``"reduced"`` or ``"full"``.
        reduced: what this size reduces, for the Markdown (empty at full size).
        fig9_seeds: held-out trace seeds of Fig. 9.
        sweep_seeds: held-out trace seeds of each point of Figs. 13, 14 and 17.
        eval_options: ``dl2`` generator options of evaluation traces (empty: 13 servers,
            200 jobs, load 1).
        noise_levels: Fig. 13's interference levels (relative std of speed).
        epoch_errors: Fig. 14's estimate errors (fractions).
        job_caps: Fig. 17's J values.
        cap_loads: Fig. 17's arrival-rate multipliers.
        train: the training half's size.
    """

    label: str
    reduced: str
    fig9_seeds: tuple[int, ...]
    sweep_seeds: tuple[int, ...]
    eval_options: Mapping[str, Any] = field(default_factory=dict)
    noise_levels: tuple[float, ...] = (0.0, 0.15, 0.273, 0.4, 0.6)
    epoch_errors: tuple[float, ...] = (0.0, 0.05, 0.1, 0.15, 0.2)
    job_caps: tuple[int, ...] = (5, 10, 20, 30, 40)
    cap_loads: tuple[float, ...] = (1.0, 1.5)
    train: TrainSize = field(default_factory=TrainSize)


Row = dict[str, Any]


def make_config(size: TrainSize, **switches: Any) -> Dl2Config:
    """DL2's hyper-parameters (§6.2 defaults) at this size, one update per slot."""
    return Dl2Config(
        hidden=size.hidden,
        batch_size=size.batch_size,
        slots_per_update=1,
        seed=size.seed,
        **switches,
    )


def only_types(types: Sequence[str]) -> Callable[[Workload], Workload]:
    """A trace transform keeping only jobs of ``types``: the others get one of ``types``
    (drawn from the trace's seed), with epochs rescaled so their duration at the requested
    size is unchanged — the load stays the same."""

    def transform(workload: Workload) -> Workload:
        model = workload.model
        if not isinstance(model, MeasuredPS):
            raise ValueError(f"only_types needs MeasuredPS speeds, got {type(model).__name__}")
        rng = np.random.default_rng([int(workload.params.get("seed", 0)), 15])
        jobs = []
        for spec in workload.jobs:
            if spec.model in types:
                jobs.append(spec)
                continue
            new = types[int(rng.integers(len(types)))]
            p, w = spec.num_ps, spec.num_workers
            duration_s = spec.total_work / model.epochs_per_s(spec.model, p, w)
            epochs = max(1.0, float(round(duration_s * model.epochs_per_s(new, p, w))))
            jobs.append(
                dataclasses.replace(
                    spec, model=new, total_work=epochs, worker_demand=worker_demand(new)
                )
            )
        return dataclasses.replace(workload, jobs=tuple(jobs))

    return transform


class Curves:
    """Validation rows of every training run, and the helpers that produce them."""

    def __init__(self, size: TrainSize) -> None:
        self.size = size
        self.rows: list[Row] = []

    def validate(self, policy: nn.Module, cfg: Dl2Config) -> float:
        """Mean average JCT (s) of the greedy policy over the validation seeds."""
        return evaluate(policy, cfg, self.size.val_seeds, "dl2", **self.size.workload_options)

    def record(self, run: str, phase: str, step: int, val: float) -> float:
        self.rows.append({"run": run, "phase": phase, "step": step, "val_avg_jct_s": val})
        log.info("%s %s step %d: validation avg JCT %.0f s", run, phase, step, val)
        return val

    def env(
        self, cfg: Dl2Config, transform: Callable[[Workload], Workload] | None = None
    ) -> Dl2Env:
        options = dict(self.size.workload_options)
        if transform is not None:
            options["transform"] = transform
        env = Dl2Env("dl2", shape=cfg.shape(), **options)
        env.reset(seed=cfg.seed)
        return env

    def sl(
        self,
        run: str,
        policy: nn.Module,
        cfg: Dl2Config,
        data: TeacherData,
        steps: int,
        *,
        start: int = 0,
        optimizer: torch.optim.Optimizer | None = None,
    ) -> tuple[float, float]:
        """``steps`` SL updates, validated every ``eval_every``; (last validation, agreement)."""
        opt = optimizer or torch.optim.Adam(policy.parameters(), lr=cfg.sl_lr)
        done, val, agree = 0, float("nan"), float("nan")
        while done < steps:
            chunk = min(self.size.eval_every, steps - done)
            # a new mini-batch stream per chunk (`supervised` seeds its sampler from cfg.seed)
            chunk_cfg = dataclasses.replace(cfg, seed=cfg.seed + 7919 * (start + done + 1))
            agree = supervised(policy, data, chunk_cfg, chunk, optimizer=opt)
            done += chunk
            val = self.record(run, "sl", start + done, self.validate(policy, cfg))
        return val, agree

    def rl(
        self,
        run: str,
        learner: Learner,
        rollout: Rollout,
        steps: int,
        *,
        start: int = 0,
    ) -> float:
        """``steps`` actor-critic updates, validated every ``eval_every``; last validation."""
        done, val = 0, float("nan")
        while done < steps:
            chunk = min(self.size.eval_every, steps - done)
            actor_critic(learner, rollout, chunk)
            done += chunk
            val = self.record(run, "rl", start + done, self.validate(learner.policy, learner.cfg))
        return val


@dataclass
class TrainingResults:
    """Everything the training half measured (rows of each CSV)."""

    fig10: list[Row]
    drf_val_jct_s: float
    table2: list[Row]
    table2_curves: list[Row]
    fig15: list[Row]
    fig16: list[Row]
    fig16_curves: list[Row]


def _teacher_data(curves: Curves, cfg: Dl2Config, teacher: str, transform: Any = None) -> Any:
    env = curves.env(cfg, transform)
    return collect_teacher(env, teacher, curves.size.sl_episodes, seed=cfg.seed)


def _fresh(cfg: Dl2Config) -> nn.Module:
    seed_everything(cfg.seed)
    return make_policy(cfg)


def _mean_val_jct(size: TrainSize, scheduler: str) -> float:
    """``scheduler``'s average JCT over the validation seeds, in seconds."""
    return float(
        np.mean(
            [
                simulate("dl2", scheduler, seed=s, **size.workload_options).summary()["avg_jct_s"]
                for s in size.val_seeds
            ]
        )
    )


@dataclass
class _Fig10:
    """Fig. 10's curves and what the later figures start from."""

    curves: Curves
    init_val: float
    """Validation JCT of the initial network, in seconds."""
    sl_policy: nn.Module
    """The SL-then-RL run's policy at the end of SL (DRF's imitation)."""
    sl_val: float
    """Validation JCT of ``sl_policy``, in seconds."""
    sl_agree: float
    """``sl_policy``'s agreement with DRF."""
    full_val: float
    """Validation JCT at the end of the SL-then-RL run (full DL2), in seconds."""


def run_training(size: TrainSize) -> TrainingResults:
    """Train every policy of Fig. 10, Table 2, Fig. 15 and Fig. 16; return their rows.

    The figures run in the paper's order; Table 2, Fig. 16 and Fig. 15 reuse Fig. 10's SL
    policy and validation figures."""
    torch.set_num_threads(1)
    cfg = make_config(size)
    drf_val = _mean_val_jct(size, "drf")
    fig10 = _fig10(size, cfg)
    table2, ablation_curves = _table2(size, fig10)
    fig16, teacher_curves = _fig16(size, cfg, fig10)
    fig15 = _fig15(size, cfg, fig10)
    return TrainingResults(
        fig10=fig10.curves.rows,
        drf_val_jct_s=drf_val,
        table2=table2,
        table2_curves=[
            *[{**r, "run": "DL2 (full)"} for r in fig10.curves.rows if r["run"] == "SL then RL"][
                1:
            ],
            *ablation_curves.rows,
        ],
        fig15=fig15,
        fig16=fig16,
        fig16_curves=teacher_curves.rows,
    )


def _rl_from_sl(
    size: TrainSize, sl_policy: nn.Module, run: str, curves: Curves, run_cfg: Dl2Config
) -> float:
    """``rl_steps`` of RL from a copy of ``sl_policy`` recorded as ``run``; the last
    validation JCT."""
    learner = Learner.create(run_cfg, copy.deepcopy(sl_policy))
    rollout = Rollout(curves.env(run_cfg), learner, seed=run_cfg.seed + 1)
    return curves.rl(run, learner, rollout, size.rl_steps, start=size.sl_steps)


def _fig10(size: TrainSize, cfg: Dl2Config) -> _Fig10:
    """Fig. 10: SL only, RL only, SL then RL from one initial network."""
    curves = Curves(size)
    policy = _fresh(cfg)
    init_val = curves.validate(policy, cfg)
    for run in ("SL only", "RL only", "SL then RL"):
        curves.record(run, "init", 0, init_val)
    data = _teacher_data(curves, cfg, "drf")
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.sl_lr)
    sl_val, sl_agree = curves.sl("SL then RL", policy, cfg, data, size.sl_steps, optimizer=opt)
    sl_policy = copy.deepcopy(policy)
    curves.rows += [{**r, "run": "SL only"} for r in curves.rows if r["run"] == "SL then RL"][1:]
    curves.sl("SL only", policy, cfg, data, size.rl_steps, start=size.sl_steps, optimizer=opt)
    full_val = _rl_from_sl(size, sl_policy, "SL then RL", curves, cfg)
    scratch = Learner.create(cfg, _fresh(cfg))
    curves.rl(
        "RL only",
        scratch,
        Rollout(curves.env(cfg), scratch, seed=cfg.seed + 1),
        size.sl_steps + size.rl_steps,
    )
    return _Fig10(curves, init_val, sl_policy, sl_val, sl_agree, full_val)


def _table2(size: TrainSize, fig10: _Fig10) -> tuple[list[Row], Curves]:
    """Table 2: each ablation trained from Fig. 10's SL policy; its rows and curves."""
    curves = Curves(size)
    finals = {"DL2 (full)": fig10.full_val}
    for name, switch in ABLATIONS:
        curves.record(name, "sl", size.sl_steps, fig10.sl_val)
        finals[name] = _rl_from_sl(size, fig10.sl_policy, name, curves, make_config(size, **switch))
    bests = {
        name: min(
            r["val_avg_jct_s"]
            for r in [*fig10.curves.rows, *curves.rows]
            if r["run"] == ("SL then RL" if name == "DL2 (full)" else name) and r["phase"] == "rl"
        )
        for name in finals
    }
    table2 = [
        {
            "variant": name,
            "sl_val_avg_jct_s": fig10.sl_val,
            "final_val_avg_jct_s": finals[name],
            "best_val_avg_jct_s": bests[name],
            "slowdown_vs_full_pct": 100.0 * (finals[name] / fig10.full_val - 1.0),
        }
        for name in finals
    ]
    return table2, curves


def _fig16(size: TrainSize, cfg: Dl2Config, fig10: _Fig10) -> tuple[list[Row], Curves]:
    """Fig. 16: SL from each teacher, then RL; its rows and curves."""
    rows: list[Row] = []
    curves = Curves(size)
    for teacher in size.teachers:
        teacher_val = _mean_val_jct(size, teacher)
        if teacher == "drf":  # Fig. 10's SL already imitated DRF
            after_sl, agree = fig10.sl_val, fig10.sl_agree
            t_policy = copy.deepcopy(fig10.sl_policy)
            curves.rows += [
                {**r, "run": "SL from drf"}
                for r in fig10.curves.rows
                if r["run"] == "SL then RL" and r["phase"] == "sl"
            ]
        else:
            t_policy = _fresh(cfg)
            t_data = _teacher_data(curves, cfg, teacher)
            after_sl, agree = curves.sl(f"SL from {teacher}", t_policy, cfg, t_data, size.sl_steps)
        learner = Learner.create(cfg, t_policy)
        rollout = Rollout(curves.env(cfg), learner, seed=cfg.seed + 1)
        after_rl = curves.rl(
            f"SL from {teacher}", learner, rollout, size.teacher_rl_steps, start=size.sl_steps
        )
        rows.append(
            {
                "teacher": teacher,
                "teacher_val_avg_jct_s": teacher_val,
                "sl_agreement": agree,
                "sl_val_avg_jct_s": after_sl,
                "sl_rl_val_avg_jct_s": after_rl,
            }
        )
    return rows, curves


def _fig15(size: TrainSize, cfg: Dl2Config, fig10: _Fig10) -> list[Row]:
    """Fig. 15: two unseen job types arrive mid-training; beside Fig. 10's SL-then-RL run
    (the ideal: all eight types from the start)."""
    unseen = Curves(size)
    run = "6 types, +2 mid-RL"
    policy6 = _fresh(cfg)
    unseen.record(run, "init", 0, fig10.init_val)
    seen = only_types(SEEN_TYPES)
    unseen.sl(run, policy6, cfg, _teacher_data(unseen, cfg, "drf", seen), size.sl_steps)
    learner6 = Learner.create(cfg, policy6)
    half = size.rl_steps // 2
    rollout6 = Rollout(unseen.env(cfg, seen), learner6, seed=cfg.seed + 1)
    unseen.rl(run, learner6, rollout6, half, start=size.sl_steps)
    rollout8 = Rollout(unseen.env(cfg), learner6, seed=cfg.seed + 2)
    rollout8.replay = rollout6.replay  # the same learner keeps its recent experience
    unseen.rl(run, learner6, rollout8, size.rl_steps - half, start=size.sl_steps + half)
    switch_step = size.sl_steps + half
    fig15 = [
        {**r, "types_in_training": 6 if r["step"] <= switch_step and r["run"] == run else 8}
        for r in unseen.rows
    ]
    fig15 += [
        {**r, "run": "ideal (8 types from the start)", "types_in_training": 8}
        for r in fig10.curves.rows
        if r["run"] == "SL then RL"
    ]
    return fig15
