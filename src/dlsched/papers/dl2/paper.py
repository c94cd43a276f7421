"""``dlsched train dl2 --paper``: DL2's own method at scale (issue 29), CleanRL-style in one file.

1. **State** (§4.1): per job row ``x`` (type one-hot), ``d`` (slots run), ``e`` (remaining
   epochs), ``r`` (dominant share so far this slot), ``w`` / ``u`` (workers / PS so far this
   slot). The environment's observation has more entries (row present, progress fraction, last
   slot's counts, row position, free-capacity fractions, jobs beyond the batch); the paper's
   network never reads them: their input weights are zero and kept zero (`paper_policy`), so
   the checkpoint is a plain ``arch="mlp"`` network that ``--scheduler dl2:PATH`` runs.
2. **Network** (§6.2): an MLP with 2 hidden layers of 256 (policy: softmax over the 3J+1
   actions; value: one linear output, same input).
3. **Supervised warm-up** (§4.2): cross-entropy on DRF's decisions replayed as action
   sequences, Adam 0.005, mini-batch 256.
4. **Online actor-critic** (§4.2–4.3, §6.2): samples ``(s, a, r, s')`` with ``r`` the slot's
   reward ``Σ t_i/E_i`` given to every action of the slot and ``s'`` the next slot's first
   state; TD(0) value target with γ = 0.9 per slot; advantage ``r + γV(s') − V(s)``; entropy
   bonus β = 0.1; job-aware exploration (ε = 0.4 in poor states); experience replay of 8,192
   samples, one mini-batch of 256 a simulated slot (the paper's "one update at the end of each
   time slot"), learning starting once the buffer is full (the authors' code); Adam 1e-4.
   Experience comes from `Dl2BatchedEnv` (``num_envs`` episodes at once) through
   `dlsched.papers.dl2.paper_collect` (replay, exploration, collector).

`PaperSpec` documents every knob; `train_paper` runs `PaperLearner` through the shared loop
`dlsched.rl.training.train` (``policy.pt`` + ``card.json`` of the best validation,
``train_log.csv`` with, per step of ``eval_every`` updates, the means of the diagnosis
statistics: entropy, losses, advantage scale, gradient norms, slot reward; ``last/``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from dlsched.papers.dl2.algorithm import Batch, Learner, collect_teacher, supervised
from dlsched.papers.dl2.batched_env import Dl2BatchedEnv, resolve_device
from dlsched.papers.dl2.env import Dl2Env
from dlsched.papers.dl2.network import (
    ALGORITHM,
    Dl2Config,
    evaluate,
    make_policy,
    seed_everything,
)
from dlsched.papers.dl2.paper_collect import STAGGER_SLOTS, Collector, SlotReplay
from dlsched.papers.dl2.paper_collect import exploration_fixes as exploration_fixes
from dlsched.papers.dl2.prioritized import PrioritizedSlotReplay
from dlsched.papers.dl2.state import Dl2Shape
from dlsched.rl.checkpoint import PolicyCard
from dlsched.rl.training import RunOptions, RunResult, Validation, train

log = logging.getLogger(__name__)

PAPER_ROW = ("x", "d", "e", "r", "w", "u")
"""The paper's per-job state entries (§4.1)."""


def paper_config(**changes: Any) -> Dl2Config:
    """DL2 §6.2's hyper-parameters: MLP 2×256, Adam 0.005 (SL) / 1e-4 (RL), mini-batch 256,
    γ = 0.9, ε = 0.4, β = 0.1, replay 8,192, one update per slot, no advantage normalisation
    and no gradient clipping (neither is in the paper)."""
    base = Dl2Config(
        arch="mlp",
        hidden=(256, 256),
        slots_per_update=1,
        normalize_advantage=False,
        grad_clip=1e9,
    )
    return replace(base, **changes)


def paper_inputs(shape: Dl2Shape) -> npt.NDArray[np.bool_]:
    """Which observation entries are the paper's state (x, d, e, r, w, u of every row)."""
    keep = np.zeros(shape.obs_dim, dtype=bool)
    L, rd = shape.L, shape.row_dim
    for i in range(shape.J):
        row = i * rd
        keep[row : row + L] = True  # x
        for k in (1, 2, 4, 5, 6):  # d, e, r, w, u (`dlsched.papers.dl2.state` layout)
            keep[row + L + k] = True
    return keep


def paper_network(net: nn.Module, shape: Dl2Shape) -> nn.Module:
    """Zero the first layer's weights of the entries outside the paper's state and keep their
    gradients zero (Adam then never moves them): the network reads only x, d, e, r, w, u."""
    first = next(m for m in net.modules() if isinstance(m, nn.Linear))
    drop = torch.from_numpy(~paper_inputs(shape))
    with torch.no_grad():
        first.weight[:, drop] = 0.0
    first.weight.register_hook(lambda g: g.masked_fill(drop.to(g.device)[None, :], 0.0))
    return net


@dataclass
class PaperSpec:
    """What ``train dl2 --paper`` does (defaults: the paper's, or ours where it is silent).

    Attributes:
        out: output directory.
        workload_options: DL2 workload options (``servers``, ``load``, ``num_jobs``).
        config: the hyper-parameters (`paper_config`).
        teacher: heuristic of the supervised warm-up (§4.2: DRF).
        sl_traces: training traces the teacher is replayed on (ours).
        sl_steps: supervised mini-batches (ours; the paper: "hundreds of" passes).
        rl_updates: actor-critic updates (one per ``config.slots_per_update`` simulated slots;
            the paper: one per slot).
        num_envs: episodes simulated at once (ours: the batched environment).
        eval_every: RL updates between validations.
        val_seeds: validation trace seeds (never trained on).
        device: ``auto``, ``cpu`` or ``cuda`` (networks and mini-batches).
        max_wall_s: wall-time budget; no chunk starts after it.
        init: start RL from this supervised checkpoint instead of running the warm-up (its
            card must say it was made by the same warm-up; the card of the result says so).
        critic_warmup: updates of the value network alone before the policy learns (ours,
            0 = the paper: policy and value learn from the first update).
        reward: ``"paper"`` (Σ epochs trained / total epochs) or ``"jct"`` (a diagnosis, not
            the paper: minus the jobs in the system over the slot ÷ J, whose undiscounted
            sum is −Σ JCT / (1,200 s × J)); ``"job"`` (the authors' code's option
            ``TS_REWARD_PLUS_JOB_REWARD``, not the paper's text): each action gets the share of
            its own job's epochs trained in the slot, a void the slot reward over the jobs that
            progressed (per-job credit; use with γ = 0 as the authors' ``reward − V(s)``).
        explored_in_pg: True (the paper, read literally): an action the job-aware exploration
            chose instead of the policy is trained on as if the policy had sampled it (policy
            gradient with the policy's log-probability); False: such samples train the value
            network only.
        slot_td: ``"paper"``: every action of a slot has the target ``r + γV(s')`` with ``s'``
            the next slot's first state; ``"chain"`` (a diagnosis): an action inside a slot has
            the target ``V`` of the next state of the same slot (no reward, no discount: no time
            passes), the slot's last action ``r + γV(s')``.
        stagger: False: the ``num_envs`` episodes start together (every sample comes from the
            same phase of its trace until the first episodes end); True: each environment first
            runs a random number of slots (0 to 400, policy acting, nothing recorded), so the
            replay mixes phases as the paper's one continuous cluster does.
        priority: False (the paper): mini-batches drawn uniformly from the replay; True (the
            authors' code's ``PRIORITY_REPLAY``, NOT in the paper): drawn in proportion to
            each sample's last |advantage|, importance-weighted
            (`dlsched.papers.dl2.prioritized`; the weights are normalised by their sum in the
            mini-batch, the code divides by its size).
    """

    out: Path
    workload_options: dict[str, Any] = field(default_factory=dict)
    config: Dl2Config = field(default_factory=paper_config)
    teacher: str = "drf"
    sl_traces: int = 8
    sl_steps: int = 2000
    rl_updates: int = 20_000
    num_envs: int = 16
    eval_every: int = 1000
    val_seeds: Sequence[int] = (201, 202, 203)
    device: str = "auto"
    max_wall_s: float | None = None
    init: Path | None = None
    critic_warmup: int = 0
    reward: str = "paper"
    explored_in_pg: bool = True
    slot_td: str = "paper"
    stagger: bool = False
    priority: bool = False


def _grad_norm(net: nn.Module) -> float:
    norms = [p.grad.norm() for p in net.parameters() if p.grad is not None]
    return float(torch.stack(norms).norm()) if norms else 0.0


STATS = (
    "entropy", "policy_loss", "value_loss", "advantage", "advantage_std", "reward_mean",
    "policy_grad_norm", "value_grad_norm",
)  # fmt: skip
"""Learning statistics of `rl_update`, logged as their mean over each step's updates."""
COLUMNS = (
    "phase", "updates", "slots", "episodes", "train_return", "train_avg_jct_s", *STATS,
    "val_avg_jct_s", "wall_s",
)  # fmt: skip


def rl_update(learner: Learner, batch: Batch, critic_only: bool = False) -> dict[str, float]:
    """One actor-critic update (`Learner.backward` + step) with the diagnosis statistics;
    ``critic_only``: the value network's step alone (the policy's gradient is dropped)."""
    stats = learner.backward(batch)
    stats["policy_grad_norm"] = _grad_norm(learner.policy)
    stats["value_grad_norm"] = _grad_norm(learner.value) if learner.cfg.value_net else 0.0
    if critic_only:
        learner.policy_opt.zero_grad()
    learner.step()
    with torch.no_grad():
        if learner.cfg.value_net:
            v = learner.value(batch.obs)[:, 0]
            nxt = learner.value(batch.next_obs)[:, 0]
            discount = learner.cfg.gamma * (1 - batch.dones)
            if batch.discounts is not None:
                discount = batch.discounts
            adv = batch.rewards + discount * nxt - v
        else:
            adv = batch.rewards - learner.baseline
    stats["advantage_std"] = float(adv.std())
    stats["reward_mean"] = float(batch.rewards.mean())
    return stats


def advantages(learner: Learner, batch: Batch) -> npt.NDArray[np.float32]:
    """Each sample's advantage under the current networks, as `Learner.backward` computes it
    (``r + γV(s') − V(s)``, or ``r − baseline`` without a value network), before its update."""
    with torch.no_grad():
        if not learner.cfg.value_net:
            return (batch.rewards - learner.baseline).cpu().numpy()
        discount = learner.cfg.gamma * (1 - batch.dones)
        nxt, v = learner.value(batch.next_obs)[:, 0], learner.value(batch.obs)[:, 0]
        return (batch.rewards + discount * nxt - v).cpu().numpy()


REWARD_NOTES = {  # what the card says of each `PaperSpec.reward`
    "paper": "",
    "jct": " (NOT the paper's: minus jobs in the system)",
    "job": " (NOT the paper's text: per-job credit, the authors' code's TS_REWARD_PLUS_JOB_REWARD)",
}


def _notes(spec: PaperSpec, updates: int, slots: int) -> str:
    cfg = spec.config
    start = (
        f"supervised warm-up from {spec.teacher} on {spec.sl_traces} traces, "
        f"{spec.sl_steps} mini-batches"
        if spec.init is None
        else f"started from the supervised checkpoint {spec.init} (DRF warm-up)"
    )
    return "; ".join(
        [
            "DL2's paper method (train dl2 --paper): paper state (x, d, e, r, w, u; the other "
            "observation entries have zero input weights), MLP 2x256",
            start,
            f"then {updates} actor-critic updates (one per {cfg.slots_per_update} simulated "
            f"slot(s); {slots} slots in {spec.num_envs} batched environments), "
            "reward = sum of epochs trained / total epochs",
            f"gamma={cfg.gamma:g}, job-aware exploration={cfg.exploration} "
            f"(epsilon={cfg.epsilon:g}), entropy beta={cfg.entropy_beta:g}, "
            f"replay={cfg.replay_size if cfg.replay else 0}, value network={cfg.value_net}, "
            f"rl lr={cfg.rl_lr:g}, batch={cfg.batch_size}, normalised advantages="
            f"{cfg.normalize_advantage}, value-only warm-up updates={spec.critic_warmup}",
            f"reward={spec.reward}" + REWARD_NOTES[spec.reward],
            f"exploration's actions in the policy gradient={spec.explored_in_pg}, slot "
            f"targets={spec.slot_td}, staggered starts={spec.stagger}, prioritised replay="
            + ("True (NOT the paper's: the authors' code's)" if spec.priority else "False"),
            f"checkpoint = best greedy validation avg JCT on seeds {list(spec.val_seeds)}",
        ]
    )


class PaperLearner:
    """`dlsched.rl.training.Learner` of the paper preset: step 0 is the supervised warm-up (or
    loading ``init``), each later step ``eval_every`` actor-critic updates."""

    columns = COLUMNS

    def __init__(self, spec: PaperSpec) -> None:
        if spec.slot_td not in ("paper", "chain"):
            raise ValueError(f"slot_td must be paper or chain, got {spec.slot_td!r}")
        cfg = spec.config
        seed_everything(cfg.seed)
        self.spec, self.cfg = spec, cfg
        self.device = resolve_device(spec.device)
        self.shape = shape = cfg.shape()
        self.learner = Learner.create(cfg, paper_network(make_policy(cfg), shape))
        self.learner.value = paper_network(self.learner.value, shape)
        self.learner.value_opt = torch.optim.Adam(self.learner.value.parameters(), lr=cfg.rl_lr)
        self.learner.policy.to(self.device)
        self.learner.value.to(self.device)
        self.warmed = False
        self.updates = 0
        self.collector: Collector | None = None
        self.rng = np.random.default_rng(cfg.seed + 1)
        replay_type = PrioritizedSlotReplay if spec.priority else SlotReplay
        self.replay = replay_type(
            cfg.replay_size if cfg.replay else cfg.batch_size, shape.obs_dim, shape.num_actions
        )
        self.val_jct = float("nan")

    def _warm_up(self) -> dict[str, object]:
        spec, policy = self.spec, self.learner.policy
        if spec.init is not None:
            state = torch.load(Path(spec.init) / "policy.pt", map_location="cpu", weights_only=True)
            policy.load_state_dict(state)
            return {"phase": "sl"}
        env = Dl2Env(shape=self.shape, **spec.workload_options)
        data = collect_teacher(env, spec.teacher, spec.sl_traces, seed=self.cfg.seed)
        policy.cpu()
        agree = supervised(policy, data, self.cfg, spec.sl_steps)
        policy.to(self.device)
        self.learner.policy_opt = torch.optim.Adam(policy.parameters(), lr=self.cfg.rl_lr)
        return {"phase": "sl", "train_return": agree}

    def step(self) -> dict[str, object]:
        if not self.warmed:
            self.warmed = True
            return self._warm_up()
        spec, cfg = self.spec, self.cfg
        if self.collector is None:
            env = Dl2BatchedEnv(
                spec.num_envs, shape=self.shape, seed=cfg.seed, device=spec.device,
                **spec.workload_options,
            )  # fmt: skip
            self.collector = Collector(
                env, self.learner, self.replay, cfg.seed, spec.reward,
                chain_gamma=cfg.gamma if spec.slot_td == "chain" else None,
                stagger_slots=STAGGER_SLOTS if spec.stagger else 0,
            )  # fmt: skip
        collector, replay = self.collector, self.replay
        sums = dict.fromkeys(STATS, 0.0)
        done = due = 0
        while done < spec.eval_every:
            due += collector.step()
            if replay.size < replay.capacity:
                due = 0
            while due >= cfg.slots_per_update and done < spec.eval_every:
                batch = replay.sample(
                    cfg.batch_size, self.rng, self.device,
                    explored_in_pg=spec.explored_in_pg, chain=spec.slot_td == "chain",
                )  # fmt: skip
                if isinstance(replay, PrioritizedSlotReplay):
                    replay.update(advantages(self.learner, batch))
                stats = rl_update(self.learner, batch, self.updates < spec.critic_warmup)
                for k in STATS:
                    sums[k] += stats.get(k, float("nan"))
                due -= cfg.slots_per_update
                done, self.updates = done + 1, self.updates + 1
        returns = collector.returns[-2 * spec.num_envs :]
        jcts = collector.episode_jct[-spec.num_envs :]
        row: dict[str, object] = {k: v / done for k, v in sums.items()}
        row.update(
            phase="rl", updates=self.updates, slots=collector.slots, episodes=collector.episodes,
            train_return=float(np.mean(returns)) if returns else float("nan"),
            train_avg_jct_s=float(np.mean(jcts)) if jcts else float("nan"),
        )  # fmt: skip
        return row

    def validate(self) -> Validation:
        policy = self.learner.policy.cpu()
        self.val_jct = evaluate(policy, self.cfg, self.spec.val_seeds, **self.spec.workload_options)
        policy.to(self.device)
        return Validation((self.val_jct,), {"val_avg_jct_s": self.val_jct})

    def policy_files(self) -> tuple[dict[str, torch.Tensor], PolicyCard]:
        spec, cfg = self.spec, self.cfg
        slots = self.collector.slots if self.collector is not None else 0
        card = PolicyCard(
            algorithm=ALGORITHM,
            workload="dl2",
            workload_params=dict(spec.workload_options),
            shapes=self.shape.fields(),
            seeds={"validation": list(spec.val_seeds), "run": [cfg.seed]},
            steps={
                "sl": spec.sl_steps,
                "rl": self.updates,
                "rl_tried": self.updates,
                "slots": slots,
            },
            validation={"avg_jct_s": self.val_jct},
            hyperparams=cfg.to_dict() | {"method": "paper"},
            notes=_notes(spec, self.updates, slots),
        )
        state = {k: v.detach().cpu() for k, v in self.learner.policy.state_dict().items()}
        return state, card

    def state_dict(self) -> dict[str, Any]:
        lr = self.learner
        return {
            "policy": lr.policy.state_dict(),
            "value": lr.value.state_dict(),
            "policy_opt": lr.policy_opt.state_dict(),
            "value_opt": lr.value_opt.state_dict(),
            "updates": self.updates,
            "warmed": self.warmed,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        lr = self.learner
        lr.policy.load_state_dict(state["policy"])
        lr.value.load_state_dict(state["value"])
        lr.policy_opt.load_state_dict(state["policy_opt"])
        lr.value_opt.load_state_dict(state["value_opt"])
        self.updates, self.warmed = int(state["updates"]), bool(state["warmed"])


def train_paper(spec: PaperSpec, run: RunOptions | None = None) -> RunResult:
    """Supervised warm-up, then DL2's online actor-critic (module docstring), through the
    shared loop `dlsched.rl.training.train`: validation after every step, the best policy in
    ``OUT``, ``OUT/train_log.csv``, ``OUT/last`` for ``resume``."""
    minutes = None if spec.max_wall_s is None else spec.max_wall_s / 60.0
    run = run or RunOptions(out=spec.out, max_minutes=minutes)
    steps = 1 + -(-spec.rl_updates // spec.eval_every)
    settings = run.settings(steps, name="dl2 --paper")
    return train(lambda budget: PaperLearner(spec), settings)
