"""DL2's networks and everything that runs a trained one: `Dl2Config` (every hyper-parameter,
defaults from DL2 §6.2), the shared per-row networks (`RowNet`, `make_policy`, `make_value`),
`NumpyPolicy` (fast NumPy inference) and `Dl2PolicyScheduler`, `evaluate` (a policy greedily
through `dlsched.simulate`) and `save` / `load` (`dlsched.rl.checkpoint`: plain tensors + JSON
card, checked J and L). Training is in `dlsched.papers.dl2.algorithm`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from dlsched.core import ClusterView, Decision
from dlsched.papers.dl2.env import Dl2Env
from dlsched.papers.dl2.state import GLOBAL, Dl2Encoder, Dl2Shape, Dl2Slot
from dlsched.rl.checkpoint import PolicyCard, load_checkpoint, save_checkpoint
from dlsched.rl.policy_scheduler import PolicyScheduler
from dlsched.workloads.base import Workload
from dlsched.workloads.dl2 import JOB_TYPES

log = logging.getLogger(__name__)

ALGORITHM = "dl2"


@dataclass
class Dl2Config:
    """Hyper-parameters of DL2 (defaults: DL2 §6.2 unless said otherwise)."""

    J: int = 40
    """Job rows of the state (jobs decided per batch)."""
    job_types: tuple[str, ...] = JOB_TYPES
    """The L job types of the one-hot."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden layer sizes of the policy and value networks (§6.2: two of 256)."""
    arch: str = "rows"
    """``"mlp"``: DL2's flat MLP over the whole state; ``"rows"`` (ours, default): the same
    layers applied to every job row with the rows' mean as context (`RowNet`), so ranking jobs
    is learnt once for all rows instead of per row position."""
    sl_lr: float = 0.005
    """Adam learning rate of supervised learning (§6.2)."""
    rl_lr: float = 1e-4
    """Adam learning rate of RL, policy and value (§6.2)."""
    batch_size: int = 256
    """Mini-batch size, samples (§6.2)."""
    gamma: float = 0.9
    """Discount per time slot (§6.2)."""
    epsilon: float = 0.4
    """Probability of the job-aware exploration override in a poor state (§6.2)."""
    entropy_beta: float = 0.1
    """Entropy regularisation weight β (§6.2)."""
    replay_size: int = 8192
    """Experience replay capacity, samples (§6.2)."""
    slots_per_update: int = 8
    """Time slots simulated between two RL updates (ours)."""
    value_net: bool = True
    """Ablation: False replaces the value network by a moving-average baseline."""
    exploration: bool = True
    """Ablation: False disables job-aware exploration."""
    replay: bool = True
    """Ablation: False trains on the latest rollout only."""
    baseline_decay: float = 0.95
    """Moving-average factor of the baseline when ``value_net`` is False (ours)."""
    dagger: float = 0.0
    """Fraction of supervised-data slots driven by the learner, labelled by the teacher (ours)."""
    normalize_advantage: bool = True
    """Standardise advantages per mini-batch (ours; CleanRL's ``norm_adv``)."""
    grad_clip: float = 10.0
    """Global gradient-norm clip (ours)."""
    seed: int = 0
    """Seeds torch, NumPy and Python's random, and the environment."""

    def shape(self) -> Dl2Shape:
        return Dl2Shape(J=self.J, job_types=tuple(self.job_types))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["hidden"] = list(self.hidden)
        data["job_types"] = list(self.job_types)
        return data


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy's legacy global and torch (all randomness of training)."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def mlp(inputs: int, hidden: Sequence[int], outputs: int) -> nn.Sequential:
    """Fully connected ReLU network."""
    layers: list[nn.Module] = []
    size = inputs
    for h in hidden:
        layers += [nn.Linear(size, h), nn.ReLU()]
        size = h
    layers.append(nn.Linear(size, outputs))
    return nn.Sequential(*layers)


class RowNet(nn.Module):
    """Shared per-row network: DL2's state and action layout, permutation-equivariant.

    Each job row goes through the same MLP to an embedding ``h_i``; the mean of the present
    rows' embeddings is the context ``c``. Row ``i``'s three action logits are
    ``A h_i + B [c, g] + b`` (``g`` the global entries); the void logit (or, for a value
    network, the value) comes from ``[c, g]`` through a small MLP. Output layout equals the
    flat MLP's: ``(B, 3J + 1)`` (or ``(B, 1)``).

    Args:
        shape: J and L.
        hidden: hidden sizes of the row MLP (its last size is the embedding size).
        value: True for a value head (one output) instead of action logits.
    """

    def __init__(self, shape: Dl2Shape, hidden: Sequence[int], value: bool = False) -> None:
        super().__init__()
        self.J, self.row_dim, self.L = shape.J, shape.row_dim, shape.L
        emb = hidden[-1]
        self.rows = mlp(self.row_dim, hidden[:-1], emb)
        self.value = value
        self.row_head = nn.Linear(emb, 3)
        self.ctx_row = nn.Linear(emb + GLOBAL, 3, bias=False)
        self.ctx_head = nn.Sequential(nn.Linear(emb + GLOBAL, emb), nn.ReLU(), nn.Linear(emb, 1))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        b = obs.shape[0]
        rows = obs[:, : self.J * self.row_dim].reshape(b, self.J, self.row_dim)
        glob = obs[:, self.J * self.row_dim :]
        h = torch.relu(self.rows(rows))
        present = rows[:, :, self.L : self.L + 1]  # the "row present" entry
        ctx = (h * present).sum(dim=1) / present.sum(dim=1).clamp(min=1.0)
        cg = torch.cat([ctx, glob], dim=1)
        tail = self.ctx_head(cg)
        if self.value:
            return tail
        per_row = self.row_head(h) + self.ctx_row(cg)[:, None, :]
        return torch.cat([per_row.reshape(b, 3 * self.J), tail], dim=1)


class NumpyPolicy:
    """Inference-only NumPy copy of a policy network (a few matrix products, no torch calls).

    Used by the scheduler: one decision takes tens of forward passes of batch 1, where torch's
    per-call overhead dominates. ``logits(obs)`` returns the same numbers as the network.
    """

    def __init__(self, net: nn.Module) -> None:
        def layers(seq: nn.Sequential) -> list[tuple[np.ndarray, np.ndarray]]:
            out = []
            for m in seq:
                if isinstance(m, nn.Linear):
                    w = m.weight.detach().numpy().T.astype(np.float32).copy()
                    b = m.bias.detach().numpy().astype(np.float32).copy()
                    out.append((w, b))
            return out

        self.row_net = isinstance(net, RowNet)
        self._last_rows: np.ndarray | None = None
        self._last_h = np.zeros(0, dtype=np.float32)
        self._present_n: float | None = None  # rows present (at least 1), as `logits` divides
        self._cg: np.ndarray | None = None
        self._scores = np.zeros(0, dtype=np.float32)
        if isinstance(net, RowNet):
            self.J, self.row_dim, self.L = net.J, net.row_dim, net.L
            self.rows = layers(net.rows)
            self.head_w = net.row_head.weight.detach().numpy().T.copy()
            self.head_b = net.row_head.bias.detach().numpy().copy()
            self.ctx_row = net.ctx_row.weight.detach().numpy().T.copy()
            self.ctx = layers(net.ctx_head)
        elif isinstance(net, nn.Sequential):
            self.mlp = layers(net)
        else:
            raise ValueError(f"no NumPy inference for {type(net).__name__}")

    @staticmethod
    def _run(x: np.ndarray, layers: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        for k, (w, b) in enumerate(layers):
            x = x @ w + b
            if k + 1 < len(layers):
                np.maximum(x, 0.0, out=x)
        return x

    def _embed(self, rows: npt.NDArray[np.float32]) -> np.ndarray:
        """Row embeddings, recomputing only rows that differ from the previous call's (an
        action changes one row, so a slot's forward passes cost one row each, not J)."""
        last = self._last_rows
        if last is not None and last.shape == rows.shape:
            changed = np.flatnonzero((rows != last).any(axis=1))
            if changed.size < rows.shape[0] // 2:
                h = self._last_h.copy()
                if changed.size:
                    h[changed] = np.maximum(self._run(rows[changed], self.rows), 0.0)
                self._last_rows, self._last_h = rows.copy(), h
                return h
        h = np.maximum(self._run(rows, self.rows), 0.0)
        self._last_rows, self._last_h = rows.copy(), h
        return h

    def logits(self, obs: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Logits for one observation (1-D in, 1-D out)."""
        if not self.row_net:
            return self._run(obs[None, :], self.mlp)[0]
        rows = obs[: self.J * self.row_dim].reshape(self.J, self.row_dim)
        return self._head(self._embed(rows), rows, obs[self.J * self.row_dim :]).copy()

    def logits_row_changed(self, obs: npt.NDArray[np.float32], row: int) -> npt.NDArray[np.float32]:
        """`logits` when job row ``row`` is the only row that differs from the previous call's.

        Skips comparing the rows: only row ``row`` is re-embedded, by the same operations
        `logits` would run, so the numbers are identical. The caller guarantees the premise
        (one DL2 action changes exactly the row it acts on). The result is a buffer reused by
        the next call: read it before calling again.
        """
        last = self._last_rows
        # below J = 4 `_embed` re-embeds every row for one change (batched: other rounding)
        if not self.row_net or last is None or self.J < 4:
            return self.logits(obs)
        J, rd = self.J, self.row_dim
        rows = obs[: J * rd].reshape(J, rd)
        h = self._last_h
        np.maximum(self._run(rows[row : row + 1], self.rows)[0], 0.0, out=h[row])
        same_present = last[row, self.L] == rows[row, self.L]
        last[row] = rows[row]
        return self._head(h, rows, obs[J * rd :], reuse_present=bool(same_present))

    def _head(
        self,
        h: np.ndarray,
        rows: npt.NDArray[np.float32],
        glob: npt.NDArray[np.float32],
        *,
        reuse_present: bool = False,
    ) -> npt.NDArray[np.float32]:
        """Logits from the row embeddings ``h`` (same operations, into reused buffers)."""
        present = rows[:, self.L]
        if not reuse_present or self._present_n is None:
            self._present_n = max(float(present.sum()), 1.0)
        emb = h.shape[1]
        if self._cg is None or self._cg.shape[0] != emb + glob.shape[0]:
            self._cg = np.empty(emb + glob.shape[0], dtype=np.float32)
            self._scores = np.empty(3 * self.J + 1, dtype=np.float32)
        cg, scores = self._cg, self._scores
        np.divide(present @ h, self._present_n, out=cg[:emb])
        cg[emb:] = glob
        np.add(h @ self.head_w + self.head_b, cg @ self.ctx_row, out=scores[:-1].reshape(-1, 3))
        scores[-1:] = self._run(cg[None, :], self.ctx)[0]
        return scores


class Dl2PolicyScheduler(PolicyScheduler):
    """`PolicyScheduler` for DL2 with a fast greedy loop over a `NumpyPolicy` row network.

    Same decisions as the generic loop (same observations, masks and arithmetic), but the
    observation is read in place and, after an action on row ``i``, only row ``i`` is
    re-embedded without comparing all rows (`NumpyPolicy.logits_row_changed`). Sampling,
    torch networks and the flat MLP take the generic loop.
    """

    def decide(self, view: ClusterView) -> Decision:
        net = self.net
        if self._generator is not None or not isinstance(net, NumpyPolicy) or not net.row_net:
            return super().decide(view)
        slot = self.encoder.start(view)
        assert isinstance(slot, Dl2Slot)
        changed: int | None = None  # the row the last action changed, within this batch
        batch = slot.batch
        for _ in range(self.max_actions):
            mask = slot.mask_view()
            obs = slot.observation_view()
            scores = net.logits(obs) if changed is None else net.logits_row_changed(obs, changed)
            action = int(np.where(mask, scores, -np.inf).argmax())
            if not mask[action]:  # nothing legal (the generic loop's `not mask.any()`)
                break
            if slot.apply(action):
                break
            changed = action // 3 if slot.batch == batch else None
            batch = slot.batch
        else:
            log.warning("%s: stopped after %d actions in one round", self.name, self.max_actions)
        return slot.decision()


def make_policy(cfg: Dl2Config) -> nn.Module:
    """Policy network: observation → logits over the 3J + 1 actions."""
    shape = cfg.shape()
    if cfg.arch == "rows":
        return RowNet(shape, cfg.hidden)
    if cfg.arch == "mlp":
        return mlp(shape.obs_dim, cfg.hidden, shape.num_actions)
    raise ValueError(f"unknown DL2 network arch {cfg.arch!r}; choose rows or mlp")


def make_value(cfg: Dl2Config) -> nn.Module:
    """Value network: observation → expected discounted slot rewards."""
    if cfg.arch == "rows":
        return RowNet(cfg.shape(), cfg.hidden, value=True)
    return mlp(cfg.shape().obs_dim, cfg.hidden, 1)


def masked_logits(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Illegal actions get a very negative logit (finite, so entropies stay defined)."""
    return logits.masked_fill(~masks, -1e9)


def make_scheduler_for(
    policy: nn.Module, cfg: Dl2Config | Dl2Shape, name: str = "dl2"
) -> Dl2PolicyScheduler:
    """The greedy `Dl2PolicyScheduler` running ``policy`` (registry name ``name``)."""
    shape = cfg.shape() if isinstance(cfg, Dl2Config) else cfg
    return Dl2PolicyScheduler(name, Dl2Encoder(shape), NumpyPolicy(policy), preemptive=True)


def evaluate(
    policy: nn.Module,
    cfg: Dl2Config,
    seeds: Sequence[int],
    workload: str = "dl2",
    *,
    transform: Callable[[Workload], Workload] | None = None,
    **workload_options: Any,
) -> float:
    """Mean average JCT (s) of the greedy policy over ``seeds`` (via `dlsched.simulate`).

    A policy that stalls the simulation (leaves jobs idle for good) scores ``inf``.

    Args:
        transform: applied to each generated trace before simulating it (OfflineRL validates
            in its fitted-speed simulator, `dlsched.papers.dl2.offline_rl`).
    """
    from dlsched.api import simulate
    from dlsched.sim import SimulationStalled
    from dlsched.workloads.registry import make_workload

    jcts = []
    for seed in seeds:
        scheduler = make_scheduler_for(policy, cfg)
        try:
            if transform is None:
                result = simulate(workload, scheduler, seed=seed, **workload_options)
            else:
                trace = transform(make_workload(workload, seed=seed, **workload_options))
                result = simulate(trace, scheduler, seed=seed)
        except SimulationStalled:
            log.warning("validation seed %d: the policy stalled the simulation", seed)
            return float("inf")
        jcts.append(float(result.summary()["avg_jct_s"]))
    policy.train()
    return float(np.mean(jcts))


def discounted_return(
    policy: nn.Module, cfg: Dl2Config, env: Dl2Env, trace_seeds: Sequence[int]
) -> float:
    """Mean over traces of the greedy policy's ``Σ_k γ^k r_k`` (RL's objective), slot rewards.

    Args:
        env: environment to run in (its workload options apply).
        trace_seeds: trace seeds (``reset(options={"trace_seed": s})``).
    """
    scheduler = make_scheduler_for(policy, cfg)
    returns = []
    for seed in trace_seeds:
        env.reset(seed=seed, options={"trace_seed": seed})
        total, discount, done = 0.0, 1.0, False
        while not done:
            assert env.slot is not None
            decision_builder = env.slot
            action = _greedy(scheduler, decision_builder)
            _, reward, terminated, truncated, info = env.step(action)
            if info["slot_end"]:
                total += discount * reward
                discount *= cfg.gamma
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def _greedy(scheduler: PolicyScheduler, slot: Any) -> int:
    mask = slot.action_mask()
    net = scheduler.net
    assert isinstance(net, NumpyPolicy)
    return int(np.argmax(np.where(mask, net.logits(slot.observation()), -np.inf)))


def save(
    directory: str | Path,
    policy: nn.Module,
    cfg: Dl2Config,
    *,
    workload: str,
    workload_params: dict[str, Any],
    seeds: dict[str, list[int]],
    steps: dict[str, int],
    validation: dict[str, float],
    notes: str = "",
) -> Path:
    """Save the policy network with its card (see `dlsched.rl.checkpoint`)."""
    card = PolicyCard(
        algorithm=ALGORITHM,
        workload=workload,
        workload_params=workload_params,
        shapes=cfg.shape().fields(),
        seeds=seeds,
        steps=steps,
        validation=validation,
        hyperparams=cfg.to_dict(),
        notes=notes,
    )
    return save_checkpoint(directory, policy.state_dict(), card)


def load(path: str | Path, shape: Dl2Shape | None = None) -> tuple[nn.Module, Dl2Config]:
    """Load a DL2 policy; ValueError if it was made for another J or L than ``shape``'s.

    With ``shape`` None the checkpoint's own J and job types are used.
    """
    from dlsched.rl.checkpoint import check_card, read_card

    card = read_card(path)
    check_card(card, algorithm=ALGORITHM, where=f"checkpoint {path}")  # before its hyperparams
    hp = dict(card.hyperparams)
    cfg = Dl2Config(
        J=int(hp.get("J", 40)),
        job_types=tuple(hp.get("job_types", JOB_TYPES)),
        hidden=tuple(hp.get("hidden", (256, 256))),
        arch=str(hp.get("arch", "mlp")),
    )
    expect = shape.fields() if shape is not None else cfg.shape().fields()
    state, _ = load_checkpoint(path, algorithm=ALGORITHM, shapes=expect)
    policy = make_policy(cfg)
    try:
        policy.load_state_dict(state)
    except RuntimeError as exc:
        first = str(exc).splitlines()[0]
        raise ValueError(f"checkpoint {path}: weights do not fit the network ({first})") from None
    return policy.eval(), cfg
