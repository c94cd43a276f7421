"""DL2's networks and everything that runs a trained one: `Dl2Config` (every hyper-parameter,
defaults from DL2 §6.2), the shared per-row networks (`RowNet`, `make_policy`, `make_value`),
`NumpyPolicy` (fast NumPy inference, run by `PolicyScheduler`'s greedy loop), `evaluate` (a
policy greedily through `dlsched.simulate`) and `save` / `load` (`dlsched.rl.checkpoint`: plain
tensors + JSON card, checked J and L). Training is in `dlsched.papers.dl2.algorithm`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from dlsched.papers.dl2 import net_kernels as nk
from dlsched.papers.dl2.config import Dl2Config as Dl2Config  # re-exported
from dlsched.papers.dl2.env import Dl2Env
from dlsched.papers.dl2.state import GLOBAL, Dl2Encoder, Dl2Shape
from dlsched.rl.checkpoint import PolicyCard, load_checkpoint, save_checkpoint
from dlsched.rl.policy_scheduler import PolicyScheduler
from dlsched.workloads.base import Workload
from dlsched.workloads.dl2 import JOB_TYPES

log = logging.getLogger(__name__)

ALGORITHM = "dl2"


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


Layers = list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]]


def _linear_layers(seq: nn.Sequential) -> Layers:
    """``(W^T, b)`` of each `nn.Linear` of ``seq`` as float32 arrays (``x @ W^T + b``)."""
    return [
        (
            m.weight.detach().numpy().T.astype(np.float32).copy(),
            m.bias.detach().numpy().astype(np.float32).copy(),
        )
        for m in seq
        if isinstance(m, nn.Linear)
    ]


def _run(x: np.ndarray, layers: Layers) -> np.ndarray:
    """``x`` through ``layers`` with a ReLU between them (none after the last)."""
    for k, (w, b) in enumerate(layers):
        x = x @ w + b
        if k + 1 < len(layers):
            np.maximum(x, 0.0, out=x)
    return x


class NumpyPolicy:
    """Inference-only copy of a policy network without torch calls, for batch-1 inference.

    Used by the scheduler: one slot takes tens of forward passes of batch 1, where torch's
    per-call overhead dominates. ``logits(obs)`` computes every row; ``logits_after(obs, row)``
    recomputes only job row ``row`` of a `RowNet` and reuses the rest; ``act_after(obs, mask,
    row)`` (the greedy loop's) does that and the masked arg-max in one compiled call
    (`dlsched.papers.dl2.net_kernels`).

    For a `RowNet` the context and void-head layers are regrouped: each row's embedding ``h_i``
    goes through one product with ``[row head | context→row | context→void hidden]``, and the
    present rows' embeddings are kept as a running sum (the context enters only linear layers).
    Same function as the network; products in float32, sums and scores in float64 (within
    1e-5 relative of float64 torch in the tests, not bit for bit).
    A flat MLP (``arch="mlp"``) runs in float32 NumPy and has no incremental path.
    """

    def __init__(self, net: nn.Module) -> None:
        if isinstance(net, RowNet):
            self.row_net = True
            self.J, self.row_dim, self.L = net.J, net.row_dim, net.L
            self._pack(net)
        elif isinstance(net, nn.Sequential):
            self.row_net = False
            self.mlp = _linear_layers(net)
            self._last_mlp_scores: npt.NDArray[np.floating[Any]] = np.empty(0)
        else:
            raise ValueError(f"no NumPy inference for {type(net).__name__}")

    def _pack(self, net: RowNet) -> None:
        """Weights regrouped (in float64) and packed as float32 for `net_kernels` (its layout)."""

        def arr(t: torch.Tensor) -> npt.NDArray[np.float64]:
            return t.detach().numpy().astype(np.float64)

        layers = [(arr(m.weight).T, arr(m.bias)) for m in net.rows if isinstance(m, nn.Linear)]
        ctx_first, ctx_last = (m for m in net.ctx_head if isinstance(m, nn.Linear))
        emb = layers[-1][0].shape[1]
        ctx_row = arr(net.ctx_row.weight).T  # (emb + GLOBAL, 3)
        ctx_w = arr(ctx_first.weight).T  # (emb + GLOBAL, emb)
        head = arr(net.row_head.weight).T  # (emb, 3)
        # the context (and the globals) → [3 context→row logits | emb void hidden]
        ctx = np.hstack([ctx_row[:emb], ctx_w[:emb]])
        glob = np.hstack([ctx_row[emb:], ctx_w[emb:]])
        ctx_bias = np.concatenate([arr(net.row_head.bias), arr(ctx_first.bias)])
        parts = [head, ctx, glob, ctx_bias, arr(ctx_last.weight)[0], arr(ctx_last.bias)]
        for w, b in layers:
            parts += [w, b]
        offsets = np.cumsum([0] + [p.size for p in parts])
        self._wflat = np.concatenate([p.ravel() for p in parts]).astype(np.float32)
        meta = [self.J, self.row_dim, self.L, emb, 3 + emb, len(layers)]
        meta += offsets[:6].tolist()
        for k, (w, _) in enumerate(layers):
            meta += [w.shape[0], w.shape[1], offsets[6 + 2 * k], offsets[7 + 2 * k]]
        self._meta = np.array(meta, dtype=np.int64)
        # a whole batch (`_prime`) in float32 BLAS: half the memory traffic of float64
        self._layers32 = [(w.astype(np.float32), b.astype(np.float32)) for w, b in layers]
        self._head32 = head.astype(np.float32)
        self._state = np.zeros((self.J + 1, 3 + emb))
        self._scores = np.empty(3 * self.J + 1)

    def logits(self, obs: npt.NDArray[np.float32]) -> npt.NDArray[np.floating[Any]]:
        """Logits for one observation (1-D in, a new 1-D array out)."""
        if not self.row_net:
            return _run(obs[None, :], self.mlp)[0]
        return self.logits_after(obs, None).copy()

    def logits_after(
        self, obs: npt.NDArray[np.float32], row: int | None
    ) -> npt.NDArray[np.floating[Any]]:
        """Logits for ``obs``, given that only job row ``row`` changed since the previous call
        (``None``: anything may have; every row is recomputed).

        The caller guarantees the premise (one DL2 action changes only the row it acts on and
        the global entries, never which rows are present; a new batch or slot passes
        ``None``). Returns a float64 buffer reused by the next call: read it before calling
        again.
        """
        if not self.row_net:
            return self.logits(obs)
        self._prepare(obs, row)
        nk.scores(obs, self._wflat, self._meta, self._state, self._scores)
        return self._scores

    @property
    def last_scores(self) -> npt.NDArray[np.floating[Any]]:
        """Every action's score at the last `act_after` (a buffer the next call reuses)."""
        return self._scores if self.row_net else self._last_mlp_scores

    def act_after(
        self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_], row: int | None
    ) -> int:
        """The legal action with the highest logit (the first on ties), -1 if none is legal;
        ``row`` as in `logits_after`."""
        if not self.row_net:
            scores = self._last_mlp_scores = self.logits(obs)  # for last_scores
            action = int(np.argmax(np.where(mask, scores, -np.inf)))
            return action if mask[action] else -1
        if row is None:
            self._prime(obs)
            row = -1
        return int(nk.act(obs, mask, row, self._wflat, self._meta, self._state, self._scores))

    def _prepare(self, obs: npt.NDArray[np.float32], row: int | None) -> None:
        if row is None:
            self._prime(obs)
        else:
            nk.update_row(obs, row, self._wflat, self._meta, self._state)

    def _prime(self, obs: npt.NDArray[np.float32]) -> None:
        """Every row's entries and the present rows' sum (a new slot or batch)."""
        J, rd = self.J, self.row_dim
        rows = obs[: J * rd].reshape(J, rd)
        h = rows
        for w, b in self._layers32:
            h = h @ w
            h += b
            np.maximum(h, 0.0, out=h)
        state = self._state
        state[:J, :3] = h @ self._head32
        state[:J, 3:] = h
        present = rows[:, self.L].astype(np.float64)
        state[J, :3] = 0.0
        state[J, 0] = present.sum()
        state[J, 3:] = present @ state[:J, 3:]


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
) -> PolicyScheduler:
    """The greedy `PolicyScheduler` running ``policy`` in NumPy (registry name ``name``)."""
    shape = cfg.shape() if isinstance(cfg, Dl2Config) else cfg
    return PolicyScheduler(name, Dl2Encoder(shape), NumpyPolicy(policy), preemptive=True)


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
    jcts = evaluate_seeds(policy, cfg, seeds, workload, transform=transform, **workload_options)
    return float(np.mean(jcts))


class _Stopped(Exception):
    """Raised from a simulation's job-finished callback to cut it (`evaluate_seeds`)."""


def evaluate_seeds(
    policy: nn.Module,
    cfg: Dl2Config,
    seeds: Sequence[int],
    workload: str = "dl2",
    *,
    transform: Callable[[Workload], Workload] | None = None,
    stop: Callable[[], bool] | None = None,
    **workload_options: Any,
) -> list[float]:
    """`evaluate`'s average JCT (s) of each seed, in order: ``[…, inf]`` ending at the first
    seed the policy stalls; with ``stop``, asked before each seed and after each job finishes,
    only the seeds finished before it said True (a seed cut part way is left out)."""
    from dlsched.runner import simulate
    from dlsched.sim import SimulationStalled
    from dlsched.workloads.registry import make_workload

    def check(finished: int, total: int) -> None:
        if stop is not None and stop():
            raise _Stopped

    jcts: list[float] = []
    for seed in seeds:
        if stop is not None and stop():
            break
        scheduler = make_scheduler_for(policy, cfg)
        try:
            if transform is None:
                trace: Workload | str = workload
                options = workload_options
            else:
                trace = transform(make_workload(workload, seed=seed, **workload_options))
                options = {}
            result = simulate(
                trace,
                scheduler,
                seed=seed,
                on_job_finished=None if stop is None else check,
                **options,
            )
        except SimulationStalled:
            log.warning("trace seed %d: the policy stalled the simulation", seed)
            jcts.append(float("inf"))
            break
        except _Stopped:
            log.warning("validation: stopped in seed %d (wall-time budget spent)", seed)
            break
        jcts.append(float(result.summary()["avg_jct_s"]))
    policy.train()
    return jcts


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
    net = scheduler.net
    assert isinstance(net, NumpyPolicy)
    return net.act_after(slot.observation(), slot.action_mask(), None)


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
    card = policy_card(
        cfg,
        workload=workload,
        workload_params=workload_params,
        seeds=seeds,
        steps=steps,
        validation=validation,
        notes=notes,
    )
    return save_checkpoint(directory, policy.state_dict(), card)


def policy_card(
    cfg: Dl2Config,
    *,
    workload: str,
    workload_params: dict[str, Any],
    seeds: dict[str, list[int]],
    steps: dict[str, int],
    validation: dict[str, float],
    notes: str = "",
) -> PolicyCard:
    """The card of a DL2 policy made with ``cfg`` (shapes and hyper-parameters from it)."""
    return PolicyCard(
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
