"""DL2's training run: supervised warm-up, then RL, with validation, a CSV log and checkpoints.

`train_dl2` is what ``dlsched train dl2`` calls. Output directory layout:

* ``policy.pt`` + ``card.json`` — the best policy by validation average JCT (fewest stalled
  probes first, see below; the one to use:
  ``--scheduler dl2:OUT``), with its card (teacher, steps, seeds, validation JCT, date).
* ``last/`` — the latest policy plus ``train_state.pt`` (value network, optimisers, step
  counters; tensors and plain containers only), which ``resume=True`` continues from.
* ``train_log.csv`` — one row every ``eval_every`` updates: phase, step, wall seconds,
  validation average JCT (s), the phase's training statistic and how many stall probes the
  policy stalled (empty without probes).

With ``stall_probes > 0`` every validation also runs that many small-cluster traces
(`dlsched.papers.dl2.probes`): checkpoints are ranked by (probes stalled, validation JCT), so one
that leaves a job idle for good on any probe is never chosen over one that stalls none.

Training traces are drawn by the environment from seeds ≥ `dlsched.papers.dl2.env.TRAIN_SEED_MIN`,
so validation seeds below it are never trained on.
"""

from __future__ import annotations

import csv
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from dlsched.papers.dl2.algorithm import Learner, Rollout, actor_critic, collect_teacher, supervised
from dlsched.papers.dl2.env import Dl2Env
from dlsched.papers.dl2.es import Es, EsConfig, evolve
from dlsched.papers.dl2.federated import FederatedPool
from dlsched.papers.dl2.network import Dl2Config, evaluate, load, make_policy, save, seed_everything
from dlsched.papers.dl2.offline_rl import (
    SPEED_MODELS,
    FitSpec,
    FittedPS,
    fit_speed_model,
    fitted_transform,
)
from dlsched.papers.dl2.probes import count_stalls, validation_probes
from dlsched.rl.checkpoint import read_card
from dlsched.rl.files import start_log
from dlsched.rl.tensorboard import open_mirror
from dlsched.schedulers.registry import make_scheduler
from dlsched.workloads.registry import make_workload

log = logging.getLogger(__name__)

TRAIN_STATE = "train_state.pt"
LOG_FILE = "train_log.csv"
LOG_COLUMNS = ["phase", "step", "wall_s", "val_avg_jct_s", "stat", "probe_stalls"]
"""The columns of ``train_log.csv``."""
RL_METHOD_NAMES = {"es": "evolution strategies", "actor-critic": "actor-critic"}
"""How a card's notes name each ``rl_method``."""


@dataclass
class TrainSpec:
    """What to train and how long.

    Attributes:
        out: output directory.
        workload: elastic workload name (``"dl2"``).
        workload_options: generator options (``servers``, ``load``, ``num_jobs``).
        teacher: heuristic imitated by supervised learning (None: no SL, RL from scratch).
        sl_episodes: traces the teacher is replayed on to make the SL data set.
        sl_steps: supervised mini-batch updates.
        rl_steps: actor-critic updates.
        eval_every: updates between validations (and CSV rows, and checkpoints).
        val_seeds: trace seeds of validation (never trained on).
        config: DL2 hyper-parameters.
        resume: continue from ``out/last`` if it exists.
        speed_model: ``"measured"`` (the workload's own speeds) or ``"optimus"``: train and
            validate in a simulator whose speeds come from Optimus' model fitted to a few noisy
            measured samples (the OfflineRL baseline, `dlsched.papers.dl2.offline_rl`).
        fit: how the Optimus model is fitted when ``speed_model == "optimus"``.
        vary: generator options drawn per training episode from the listed values
            (``{"servers": (8, 13, 20)}``); validation uses ``workload_options``.
        clusters: simulated clusters training one global policy in RL (> 1: federated,
            `dlsched.papers.dl2.federated`, one process each; 1: the single-process path).
        rl_method: ``"actor-critic"`` (DL2's, `dlsched.papers.dl2.algorithm`, continuing from
            the last supervised step; ``rl_steps`` counts its updates) or ``"es"`` (evolution
            strategies on the average JCT of whole training traces, `dlsched.papers.dl2.es`,
            starting from the best supervised checkpoint; ``rl_steps`` counts its iterations).
        es: ES's hyper-parameters (its workload, options and ``vary`` are this spec's).
        rl_eval_every: RL updates (or ES iterations) between validations (None:
            ``eval_every``).
        init: start from this policy checkpoint instead of a fresh network (same J, L,
            network arch and hidden sizes).
        stall_probes: small-cluster validation traces (`dlsched.papers.dl2.probes`) a
            checkpoint must finish without stalling to be preferred (0: none).
        max_wall_s: wall-time budget (s) of this call: no SL chunk, RL chunk or ES chunk (the
            updates between two validations) starts after it (None: no limit).
        tensorboard: also write every log row as TensorBoard scalars here (tags
            ``PHASE/column``; `dlsched.rl.tensorboard`), or None.
    """

    out: Path
    workload: str = "dl2"
    workload_options: dict[str, Any] = field(default_factory=dict)
    teacher: str | None = "drf"
    sl_episodes: int = 4
    sl_steps: int = 2000
    rl_steps: int = 500
    eval_every: int = 100
    val_seeds: Sequence[int] = (201, 202, 203)
    config: Dl2Config = field(default_factory=Dl2Config)
    resume: bool = False
    speed_model: str = "measured"
    fit: FitSpec = field(default_factory=FitSpec)
    clusters: int = 1
    vary: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    rl_method: str = "actor-critic"
    es: EsConfig = field(default_factory=EsConfig)
    rl_eval_every: int | None = None
    init: Path | None = None
    stall_probes: int = 0
    max_wall_s: float | None = None
    tensorboard: Path | None = None

    def fitted_model(self) -> FittedPS | None:
        """The fitted speed model of ``speed_model`` (None for the measured speeds)."""
        if self.speed_model == "measured":
            return None
        if self.speed_model == "optimus":
            return fit_speed_model(self.fit, tuple(self.config.job_types))
        raise ValueError(
            f"unknown speed model {self.speed_model!r}; choose {' or '.join(SPEED_MODELS)}"
        )


Progress = Callable[[str, int, int, float | None], None]
"""``progress(phase, step, total, val_avg_jct_s)`` after every update."""


class _Run:
    """State of one training run: learner, counters, best-so-far, log file."""

    def __init__(self, spec: TrainSpec, progress: Progress | None) -> None:
        self.spec = spec
        self.progress = progress
        self.cfg = spec.config
        self.t0 = time.perf_counter()
        self.sl_done = 0
        self.rl_done = 0
        self.best = float("inf")
        self.best_stalls = float("inf")
        self.probes = validation_probes(spec.stall_probes)
        self.out_of_time = False
        self.learner = Learner.create(self.cfg, _initial_policy(spec))
        self.fitted = spec.fitted_model()
        self.transform = fitted_transform(self.fitted) if self.fitted is not None else None
        spec.out.mkdir(parents=True, exist_ok=True)
        self.log_path = spec.out / LOG_FILE
        start_log(self.log_path, LOG_COLUMNS, spec.resume)
        self.mirror = open_mirror(spec.tensorboard)

    def has_time(self) -> bool:
        """Whether the wall-time budget allows another chunk (logs once when it does not)."""
        budget = self.spec.max_wall_s
        if budget is None or time.perf_counter() - self.t0 < budget:
            return True
        if not self.out_of_time:
            log.warning("wall-time budget of %.0f s spent: training stops here", budget)
            self.out_of_time = True
        return False

    # -- persistence -----------------------------------------------------------------------

    def restore(self) -> bool:
        last = self.spec.out / "last"
        if not (last / TRAIN_STATE).exists():
            return False
        policy, _ = load(last, self.cfg.shape())
        self.learner = Learner.create(self.cfg, policy)
        state = torch.load(last / TRAIN_STATE, map_location="cpu", weights_only=True)
        self.learner.value.load_state_dict(state["value"])
        self.learner.policy_opt.load_state_dict(state["policy_opt"])
        self.learner.value_opt.load_state_dict(state["value_opt"])
        self.learner.baseline = float(state["baseline"])
        self.learner.updates = int(state["updates"])
        self.sl_done, self.rl_done = int(state["sl_done"]), int(state["rl_done"])
        self.best = float(state["best"])
        self.best_stalls = float(state.get("best_stalls", 0))
        log.info("resumed %s at SL %d, RL %d", last, self.sl_done, self.rl_done)
        return True

    def _save(self, directory: Path, val: float, stalls: int) -> None:
        spec = self.spec
        params = dict(make_workload(spec.workload, seed=0, **spec.workload_options).params)
        params.pop("seed", None)
        if self.fitted is not None:
            params.update(self.fitted.params())
        every = f"{spec.eval_every} updates"
        if spec.rl_steps and spec.rl_eval_every not in (None, spec.eval_every):
            every = f"{spec.eval_every} SL and {spec.rl_eval_every} RL updates"
        notes = f"teacher={spec.teacher}; best of validations every {every}"
        if spec.init is not None:
            notes += f"; started from the policy in {spec.init}"
        if spec.rl_steps:
            notes += f"; RL: {RL_METHOD_NAMES.get(spec.rl_method, spec.rl_method)}"
            if spec.rl_method == "es":
                es = spec.es
                notes += (
                    f" (es, pairs={es.pairs}, traces per iteration={es.traces_per_iter}, "
                    f"sigma={es.sigma:g}, lr={es.lr:g}, stall probes per iteration={es.probes})"
                )
        if self.probes:
            notes += (
                f"; chosen among checkpoints that stall the fewest of {len(self.probes)} "
                f"small-cluster validation probes (seeds {self.probes[0].seed}-"
                f"{self.probes[-1].seed}), then by validation JCT"
            )
        if self.out_of_time:
            notes += f"; stopped by the wall-time budget of {spec.max_wall_s:.0f} s"
        if spec.speed_model != "measured":
            notes += f"; trained and validated with {spec.speed_model} speeds (OfflineRL)"
        if spec.clusters > 1:
            notes += f"; RL federated over {spec.clusters} clusters"
        if spec.vary:
            varied = ", ".join(f"{k}={'|'.join(map(str, v))}" for k, v in spec.vary.items())
            notes += f"; training traces drawn per episode with {varied}"
        if spec.teacher is not None and make_scheduler(spec.teacher).is_oracle:
            notes += (
                "; the teacher is an ORACLE (true speeds), used only to label training states"
                " in simulation; the policy itself observes only the scheduler's view"
            )
        save(
            directory,
            self.learner.policy,
            self.cfg,
            workload=spec.workload,
            workload_params=_jsonable(params),
            seeds={"validation": list(spec.val_seeds), "run": [self.cfg.seed]},
            steps={"sl": self.sl_done, "rl": self.rl_done, "sl_episodes": spec.sl_episodes},
            validation=(
                {"avg_jct_s": val, "probe_stalls": stalls, "probes": len(self.probes)}
                if self.probes
                else {"avg_jct_s": val}
            ),
            notes=notes,
        )

    def checkpoint(self, val: float, stalls: int) -> None:
        last = self.spec.out / "last"
        self._save(last, val, stalls)
        torch.save(
            {
                "value": self.learner.value.state_dict(),
                "policy_opt": self.learner.policy_opt.state_dict(),
                "value_opt": self.learner.value_opt.state_dict(),
                "baseline": torch.tensor(self.learner.baseline),
                "updates": torch.tensor(self.learner.updates),
                "sl_done": torch.tensor(self.sl_done),
                "rl_done": torch.tensor(self.rl_done),
                "best": torch.tensor(self.best),
                "best_stalls": torch.tensor(self.best_stalls),
            },
            last / TRAIN_STATE,
        )

    def validate(self, phase: str, step: int, stat: float) -> float:
        """Validate the learner's policy, keep it if it is the best so far, log and checkpoint;
        returns its validation average JCT (s)."""
        spec = self.spec
        stalls = 0
        if self.probes:
            stalls = count_stalls(
                self.learner.policy,
                self.cfg,
                self.probes,
                spec.workload,
                transform=self.transform,
                **spec.workload_options,
            )
        val = evaluate(
            self.learner.policy,
            self.cfg,
            spec.val_seeds,
            spec.workload,
            transform=self.transform,
            **spec.workload_options,
        )
        if (stalls, val) < (self.best_stalls, self.best):
            self.best, self.best_stalls = val, stalls
            self._save(spec.out, val, stalls)
        self.checkpoint(val, stalls)
        new = not self.log_path.exists()
        with self.log_path.open("a", newline="") as fh:
            writer = csv.writer(fh)
            if new:
                writer.writerow(LOG_COLUMNS)
            wall = time.perf_counter() - self.t0
            shown = str(stalls) if self.probes else ""
            writer.writerow([phase, step, f"{wall:.1f}", f"{val:.1f}", f"{stat:.4f}", shown])
        if self.mirror is not None:
            row = {"wall_s": wall, "val_avg_jct_s": val, "stat": stat}
            self.mirror.add(row | ({"probe_stalls": stalls} if self.probes else {}), step, phase)
        log.info(
            "%s step %d: validation avg JCT %.0f s, %d of %d probes stalled",
            phase,
            step,
            val,
            stalls,
            len(self.probes),
        )
        return val


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)


def train_dl2(spec: TrainSpec, progress: Progress | None = None) -> Path:
    """Train (or resume) a DL2 policy; returns the directory of the best policy.

    Raises:
        ValueError: a resumed checkpoint was made for another J or L.
    """
    cfg = spec.config
    seed_everything(cfg.seed)
    run = _Run(spec, progress)
    if spec.resume:
        run.restore()
    env = Dl2Env(
        spec.workload,
        shape=cfg.shape(),
        transform=run.transform,
        vary=spec.vary,
        **spec.workload_options,
    )
    env.reset(seed=cfg.seed)

    # -- supervised warm-up ------------------------------------------------------------------
    if spec.teacher is not None and run.sl_done < spec.sl_steps and run.has_time():
        data = collect_teacher(env, spec.teacher, spec.sl_episodes, seed=cfg.seed)
        log.info("SL data: %d samples from %s", len(data), spec.teacher)
        opt = torch.optim.Adam(run.learner.policy.parameters(), lr=cfg.sl_lr)
        stat = 0.0
        rounds = 0
        while run.sl_done < spec.sl_steps and run.has_time():
            if cfg.dagger > 0 and rounds > 0:  # DAgger: the learner drives, the teacher labels
                more = collect_teacher(
                    env,
                    spec.teacher,
                    1,
                    learner=run.learner.policy,
                    dagger=cfg.dagger,
                    seed=cfg.seed + 7919 * rounds,
                )
                data.obs += more.obs
                data.masks += more.masks
                data.actions += more.actions
            rounds += 1
            chunk = min(spec.eval_every, spec.sl_steps - run.sl_done)
            agreements: list[float] = []

            def on_sl(
                step: int,
                loss: float,
                agree: float,
                base: int = run.sl_done,
                agreements: list[float] = agreements,
            ) -> None:
                agreements.append(agree)
                if progress is not None:
                    progress("sl", base + step, spec.sl_steps, None)

            supervised(run.learner.policy, data, cfg, chunk, optimizer=opt, on_step=on_sl)
            run.sl_done += chunk
            stat = sum(agreements) / max(1, len(agreements))
            val = run.validate("sl", run.sl_done, stat)
            if progress is not None:
                progress("sl", run.sl_done, spec.sl_steps, val)

    # -- online RL ----------------------------------------------------------------------------
    if spec.rl_method == "es":
        _train_es(run, progress)
    elif run.rl_done < spec.rl_steps:
        pool: FederatedPool | None = None
        if spec.clusters > 1:
            pool = FederatedPool(
                cfg,
                spec.clusters,
                spec.workload,
                spec.workload_options,
                transform=run.transform,
                seed=cfg.seed + run.rl_done,
            )
        else:
            rollout = Rollout(env, run.learner, seed=cfg.seed + run.rl_done)
        while run.rl_done < spec.rl_steps and run.has_time():
            chunk = min(spec.rl_eval_every or spec.eval_every, spec.rl_steps - run.rl_done)
            entropies: list[float] = []

            def on_rl(
                step: int,
                stats: dict[str, float],
                base: int = run.rl_done,
                entropies: list[float] = entropies,
            ) -> None:
                entropies.append(stats["entropy"])
                if progress is not None:
                    progress("rl", base + len(entropies), spec.rl_steps, None)

            if pool is not None:
                try:
                    pool.train(run.learner, chunk, on_step=on_rl)
                except BaseException:
                    pool.close()
                    raise
            else:
                actor_critic(run.learner, rollout, chunk, on_step=on_rl)
            run.rl_done += chunk
            val = run.validate("rl", run.rl_done, sum(entropies) / max(1, len(entropies)))
            if progress is not None:
                progress("rl", run.rl_done, spec.rl_steps, val)
        if pool is not None:
            log.info("federated updates per cluster: %s", pool.contributions)
            pool.close()
    if not (spec.out / "card.json").exists():  # nothing trained: still leave a usable card
        run.validate("init", 0, 0.0)
    if run.mirror is not None:
        run.mirror.close()
    card = read_card(spec.out)
    log.info("best validation avg JCT %.0f s", card.validation.get("avg_jct_s", float("nan")))
    return spec.out


def _train_es(run: _Run, progress: Progress | None) -> None:
    """The RL phase with evolution strategies (`dlsched.papers.dl2.es`), from the best policy
    so far (the best supervised checkpoint when SL ran, as ``--init OUT`` would start)."""
    spec = run.spec
    if run.rl_done == 0 < spec.rl_steps and (spec.out / "card.json").exists():
        best, _ = load(spec.out, run.cfg.shape())
        run.learner.policy.load_state_dict(best.state_dict())
    es_cfg = dataclasses.replace(
        spec.es,
        workload=spec.workload,
        workload_options=dict(spec.workload_options),
        vary=dict(spec.vary),
    )
    learner = Es(run.learner.policy, run.cfg, es_cfg, seed=run.cfg.seed * 1_000_003 + run.rl_done)
    every = spec.rl_eval_every or spec.eval_every
    while run.rl_done < spec.rl_steps and run.has_time():
        chunk = min(every, spec.rl_steps - run.rl_done)
        train_jct: list[float] = []

        def on_iteration(
            i: int, stats: dict[str, float], base: int = run.rl_done, seen: list[float] = train_jct
        ) -> None:
            seen.append(stats["train_avg_jct_s"])
            if progress is not None:
                progress("rl", base + len(seen), spec.rl_steps, None)

        evolve(learner, chunk, on_iteration=on_iteration)
        run.rl_done += chunk
        val = run.validate("rl", run.rl_done, sum(train_jct) / max(1, len(train_jct)))
        if progress is not None:
            progress("rl", run.rl_done, spec.rl_steps, val)


def _initial_policy(spec: TrainSpec) -> torch.nn.Module | None:
    """The ``spec.init`` checkpoint's network, if given, checked against ``spec.config``."""
    if spec.init is None:
        return None
    policy, saved = load(spec.init, spec.config.shape())
    mine = (spec.config.arch, tuple(spec.config.hidden))
    theirs = (saved.arch, tuple(saved.hidden))
    if mine != theirs:
        raise ValueError(
            f"--init {spec.init}: its network is {theirs[0]} {list(theirs[1])}, not "
            f"{mine[0]} {list(mine[1])} (pass --arch and --hidden to match)"
        )
    return policy


def fresh_policy(cfg: Dl2Config) -> torch.nn.Module:
    """An untrained policy network for ``cfg`` (for tests and RL from scratch)."""
    seed_everything(cfg.seed)
    return make_policy(cfg)
