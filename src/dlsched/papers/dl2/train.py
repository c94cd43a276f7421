"""DL2's training run: supervised warm-up, then RL, with validation, a CSV log and checkpoints.

`train_dl2` is what ``dlsched train dl2`` calls: `Dl2Learner` (DL2's learning step) in the
shared training run (`dlsched.rl.training`: budget, keep-best, log, resume). Output layout:

* ``policy.pt`` + ``card.json`` — the best policy by validation average JCT (fewest stalled
  probes first, see below; the one to use:
  ``--scheduler dl2:OUT``), with its card (teacher, steps, seeds, validation JCT, date).
* ``last/`` — the latest policy plus ``train_state.pt`` (value network, optimisers, step
  counters; tensors and plain containers only), which ``run.resume`` continues from.
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

import dataclasses
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dlsched.papers.dl2.algorithm import (
    Learner,
    Rollout,
    TeacherData,
    actor_critic,
    collect_teacher,
    supervised,
)
from dlsched.papers.dl2.config import TrainSpec as TrainSpec  # re-exported
from dlsched.papers.dl2.env import Dl2Env
from dlsched.papers.dl2.es import Es, evolve
from dlsched.papers.dl2.federated import FederatedPool
from dlsched.papers.dl2.network import (
    Dl2Config,
    evaluate_seeds,
    load,
    make_policy,
    policy_card,
    seed_everything,
)
from dlsched.papers.dl2.offline_rl import (
    SPEED_MODELS,
    FittedPS,
    fit_speed_model,
    fitted_transform,
)
from dlsched.papers.dl2.probes import Probe, count_stalls, validation_probes
from dlsched.rl.checkpoint import PolicyCard, read_card
from dlsched.rl.files import CARD_FILE
from dlsched.rl.training import Budget, Progress, RunOptions, Validation, train
from dlsched.schedulers.registry import make_scheduler
from dlsched.workloads.registry import make_workload

log = logging.getLogger(__name__)

LOG_COLUMNS = ["phase", "step", "wall_s", "val_avg_jct_s", "stat", "probe_stalls"]
"""The columns of ``train_log.csv``."""
RL_METHOD_NAMES = {"es": "evolution strategies", "actor-critic": "actor-critic"}
"""How a card's notes name each ``rl_method``."""


class Dl2Learner:
    """DL2's learning step for `dlsched.rl.training.train`: one step is one chunk of updates
    between two validations — supervised (``eval_every`` mini-batches; the first collects the
    teacher's data) while ``sl_steps`` remain, then RL (``rl_eval_every`` actor-critic updates
    or ES iterations). A validation ranks by (probes stalled, validation average JCT).

    Args:
        spec: what to train.
        run: the run's options (``out``: ES starts from the best policy there).
        budget: the run's budget (teacher data collection stops when it is spent).
    """

    columns = LOG_COLUMNS

    def __init__(self, spec: TrainSpec, run: RunOptions, budget: Budget) -> None:
        self.spec = spec
        self.out = Path(run.out)
        self.budget = budget
        self.cfg = spec.config
        seed_everything(self.cfg.seed)
        self.probes = validation_probes(spec.stall_probes)
        self.learner = Learner.create(self.cfg, _initial_policy(spec))
        self.fitted = fitted_model(spec)
        self.transform = fitted_transform(self.fitted) if self.fitted is not None else None
        self.sl_done = 0
        self.rl_done = 0
        self.phase = "init"
        self.val = (float("nan"), 0)
        """(validation average JCT in s, probes stalled) of the last validation."""
        self.val_cut_after: int | None = None
        """Seeds the last validation finished if the budget cut it (else None)."""
        self.env = Dl2Env(
            spec.workload,
            shape=self.cfg.shape(),
            transform=self.transform,
            vary=spec.vary,
            **spec.workload_options,
        )
        self._reset_env = True
        self._sl: tuple[TeacherData, torch.optim.Optimizer] | None = None
        self._sl_rounds = 0
        self._rollout: Rollout | None = None
        self._pool: FederatedPool | None = None
        self._es: Es | None = None

    def step(self) -> dict[str, object]:
        if self._reset_env:  # after a resume's load_state_dict, as the run before it did
            self.env.reset(seed=self.cfg.seed)
            self._reset_env = False
        if self.spec.teacher is not None and self.sl_done < self.spec.sl_steps:
            self.phase = "sl"
            stat = self._sl_chunk()
            return {"phase": "sl", "step": self.sl_done, "stat": f"{stat:.4f}"}
        self.phase = "rl"
        stat = self._es_chunk() if self.spec.rl_method == "es" else self._rl_chunk()
        return {"phase": "rl", "step": self.rl_done, "stat": f"{stat:.4f}"}

    def _sl_chunk(self) -> float:
        """``eval_every`` supervised updates (DAgger data first after the first chunk); the
        mean agreement with the teacher."""
        spec, cfg = self.spec, self.cfg
        assert spec.teacher is not None
        if self._sl is None:
            data = collect_teacher(
                self.env, spec.teacher, spec.sl_episodes, seed=cfg.seed, stop=self.budget.spent
            )
            log.info("SL data: %d samples from %s", len(data), spec.teacher)
            self._sl = (data, torch.optim.Adam(self.learner.policy.parameters(), lr=cfg.sl_lr))
            if self.budget.spent():  # the budget went on the data: no updates on it
                return float("nan")
        data, opt = self._sl
        if cfg.dagger > 0 and self._sl_rounds > 0:  # DAgger: the learner drives, teacher labels
            more = collect_teacher(
                self.env,
                spec.teacher,
                1,
                learner=self.learner.policy,
                dagger=cfg.dagger,
                seed=cfg.seed + 7919 * self._sl_rounds,
                stop=self.budget.spent,
            )
            data.obs += more.obs
            data.masks += more.masks
            data.actions += more.actions
        self._sl_rounds += 1
        chunk = min(spec.eval_every, spec.sl_steps - self.sl_done)
        agreements: list[float] = []
        supervised(
            self.learner.policy,
            data,
            cfg,
            chunk,
            optimizer=opt,
            on_step=lambda step, loss, agree: agreements.append(agree),
            stop=self.budget.spent,
        )
        self.sl_done += len(agreements)  # the chunk, or fewer: the budget stopped it
        return sum(agreements) / max(1, len(agreements))

    def _rl_chunk(self) -> float:
        """``rl_eval_every`` actor-critic updates (federated over ``clusters`` if > 1); the
        mean policy entropy."""
        spec, cfg = self.spec, self.cfg
        if self._pool is None and self._rollout is None:
            if spec.clusters > 1:
                self._pool = FederatedPool(
                    cfg,
                    spec.clusters,
                    spec.workload,
                    spec.workload_options,
                    transform=self.transform,
                    seed=cfg.seed + self.rl_done,
                )
            else:
                self._rollout = Rollout(self.env, self.learner, seed=cfg.seed + self.rl_done)
        chunk = min(spec.rl_eval_every or spec.eval_every, spec.rl_steps - self.rl_done)
        entropies: list[float] = []

        def on_rl(step: int, stats: dict[str, float]) -> None:
            entropies.append(stats["entropy"])

        if self._pool is not None:
            self._pool.train(self.learner, chunk, on_step=on_rl, stop=self.budget.spent)
        else:
            assert self._rollout is not None
            actor_critic(self.learner, self._rollout, chunk, on_step=on_rl, stop=self.budget.spent)
        self.rl_done += len(entropies)  # the chunk, or fewer: the budget stopped it
        return sum(entropies) / max(1, len(entropies))

    def _es_chunk(self) -> float:
        """``rl_eval_every`` ES iterations (`dlsched.papers.dl2.es`), from the best policy so
        far (the best supervised checkpoint when SL ran, as ``--init OUT`` would start); the
        mean training JCT."""
        spec, cfg = self.spec, self.cfg
        if self._es is None:
            if self.rl_done == 0 and (self.out / CARD_FILE).exists():
                best, _ = load(self.out, cfg.shape())
                self.learner.policy.load_state_dict(best.state_dict())
            es_cfg = dataclasses.replace(
                spec.es,
                workload=spec.workload,
                workload_options=dict(spec.workload_options),
                vary=dict(spec.vary),
            )
            self._es = Es(
                self.learner.policy, cfg, es_cfg, seed=cfg.seed * 1_000_003 + self.rl_done
            )
        chunk = min(spec.rl_eval_every or spec.eval_every, spec.rl_steps - self.rl_done)
        train_jct: list[float] = []
        evolve(
            self._es,
            chunk,
            on_iteration=lambda i, stats: train_jct.append(stats["train_avg_jct_s"]),
            stop=self.budget.spent,
        )
        self.rl_done += len(train_jct)  # the chunk, or fewer: the budget stopped it
        return sum(train_jct) / max(1, len(train_jct))

    def validate(self) -> Validation:
        """Validation average JCT (and stalls on the probes, if any) of the current policy;
        cut once the budget and its grace are spent (`Budget.validation_over`): the mean over
        the seeds finished (inf if none), ranked behind every whole validation."""
        spec = self.spec
        stop = self.budget.validation_over
        stalls = 0
        if self.probes:
            stalls = count_stalls(
                self.learner.policy,
                self.cfg,
                self.probes,
                spec.workload,
                transform=self.transform,
                stop=stop,
                **spec.workload_options,
            )
        jcts = evaluate_seeds(
            self.learner.policy,
            self.cfg,
            spec.val_seeds,
            spec.workload,
            transform=self.transform,
            stop=stop,
            **_validation_options(spec),
        )
        val = float(np.mean(jcts)) if jcts else float("inf")
        stalled = bool(jcts) and math.isinf(jcts[-1])
        self.val_cut_after = len(jcts) if len(jcts) < len(spec.val_seeds) and not stalled else None
        self.val = (val, stalls)
        row: dict[str, object] = {
            "val_avg_jct_s": f"{val:.1f}",
            "probe_stalls": str(stalls) if self.probes else "",
        }
        if self.phase == "init":  # validated before any step (a run out of time)
            row.update(phase="init", step=0, stat="0.0000")
        # a cut validation (fewer seeds) is never ranked above a whole one: it ranks inf
        return Validation((float(stalls), val if self.val_cut_after is None else math.inf), row)

    def policy_files(self) -> tuple[Mapping[str, torch.Tensor], PolicyCard]:
        spec = self.spec
        val, stalls = self.val
        params = dict(make_workload(spec.workload, seed=0, **spec.workload_options).params)
        params.pop("seed", None)
        for per_job in ("trace_ids", "users"):  # your trace's, one per job: not a setting
            params.pop(per_job, None)
        if self.fitted is not None:
            params.update(self.fitted.params())
        card = policy_card(
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
            notes=_notes(spec, self.probes),
        )
        if self.val_cut_after is not None:
            card.validation["seeds_validated"] = self.val_cut_after
            card.notes += (
                f"; its validation was cut by the wall-time budget after {self.val_cut_after} "
                f"of {len(spec.val_seeds)} seeds ("
                + ("mean over those)" if self.val_cut_after else "none finished: avg_jct_s inf)")
            )
        return self.learner.policy.state_dict(), card

    def state_dict(self) -> dict[str, Any]:
        learner = self.learner
        return {
            "policy": learner.policy.state_dict(),
            "value": learner.value.state_dict(),
            "policy_opt": learner.policy_opt.state_dict(),
            "value_opt": learner.value_opt.state_dict(),
            "baseline": learner.baseline,
            "updates": learner.updates,
            "sl_done": self.sl_done,
            "rl_done": self.rl_done,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        learner = self.learner
        learner.policy.load_state_dict(state["policy"])
        learner.value.load_state_dict(state["value"])
        learner.policy_opt.load_state_dict(state["policy_opt"])
        learner.value_opt.load_state_dict(state["value_opt"])
        learner.baseline = float(state["baseline"])
        learner.updates = int(state["updates"])
        self.sl_done, self.rl_done = int(state["sl_done"]), int(state["rl_done"])

    def close(self) -> None:
        """Stop the federated clusters' processes, if any."""
        if self._pool is not None:
            log.info("federated updates per cluster: %s", self._pool.contributions)
            self._pool.close()
            self._pool = None


def _validation_options(spec: TrainSpec) -> dict[str, Any]:
    """The validation traces' generator options (your trace's validation part, if split)."""
    if spec.validation_options is None:
        return spec.workload_options
    return spec.validation_options


def fitted_model(spec: TrainSpec) -> FittedPS | None:
    """The fitted speed model of ``spec.speed_model`` (None for the measured speeds)."""
    if spec.speed_model == "measured":
        return None
    if spec.speed_model == "optimus":
        return fit_speed_model(spec.fit, tuple(spec.config.job_types))
    raise ValueError(
        f"unknown speed model {spec.speed_model!r}; choose {' or '.join(SPEED_MODELS)}"
    )


def _chunks(spec: TrainSpec) -> int:
    """Steps of `Dl2Learner` in the whole run: SL chunks, then RL chunks."""
    sl = spec.sl_steps if spec.teacher is not None else 0
    every = spec.rl_eval_every or spec.eval_every
    return -(-sl // spec.eval_every) + -(-spec.rl_steps // every)


def _notes(spec: TrainSpec, probes: Sequence[Probe]) -> str:
    """The card's notes: how the policy was made."""
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
    if probes:
        notes += (
            f"; chosen among checkpoints that stall the fewest of {len(probes)} "
            f"small-cluster validation probes (seeds {probes[0].seed}-"
            f"{probes[-1].seed}), then by validation JCT"
        )
    if spec.speed_model != "measured":
        notes += f"; trained and validated with {spec.speed_model} speeds (OfflineRL)"
    if spec.clusters > 1:
        notes += f"; RL federated over {spec.clusters} clusters"
    if spec.validation_options is not None:
        notes += (
            f"; trained on the {spec.workload_options.get('part')} part and validated on the "
            f"{spec.validation_options.get('part')} part of split "
            f"{spec.validation_options.get('split')} (the test part is left for compare)"
        )
    if spec.vary:
        varied = ", ".join(f"{k}={'|'.join(map(str, v))}" for k, v in spec.vary.items())
        notes += f"; training traces drawn per episode with {varied}"
    if spec.teacher is not None and make_scheduler(spec.teacher).is_oracle:
        notes += (
            "; the teacher is an ORACLE (true speeds), used only to label training states"
            " in simulation; the policy itself observes only the scheduler's view"
        )
    return notes


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)


def train_dl2(spec: TrainSpec, run: RunOptions, progress: Progress | None = None) -> Path:
    """Train (or resume) a DL2 policy in the shared training run (`dlsched.rl.training`);
    returns the directory of the best policy.

    Raises:
        ValueError: OUT holds another run (without ``run.force``), or a resumed checkpoint was
            made for another J or L.
    """
    learners: list[Dl2Learner] = []

    def make(budget: Budget) -> Dl2Learner:
        learners.append(Dl2Learner(spec, run, budget))
        return learners[-1]

    settings = run.settings(_chunks(spec), step_column="step", name="dl2")
    try:
        result = train(make, settings, progress)
    finally:
        for learner in learners:
            learner.close()
    card = read_card(result.out)
    log.info("best validation avg JCT %.0f s", card.validation.get("avg_jct_s", float("nan")))
    return result.out


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
