"""REINFORCE over jobsets with a per-timestep baseline (DeepRM §3.3, Fig. 3), CleanRL style.

One iteration, as DeepRM's pseudo-code and code (``pg_re.py``):

1. for each of the ``jobsets`` training jobsets, run ``episodes`` (N = 20) episodes with the
   current policy (sampling actions from its softmax);
2. compute each episode's returns ``v_t = Σ_{s>=t} γ^{s-t} r_s`` (γ = 1) at every decision ``t``
   (every action, including the ∅ that advances time, as in the code);
3. the baseline ``b_t`` is the mean of ``v_t`` over the N episodes of the same jobset at the
   same ``t``, shorter episodes zero-padded to equal length (`per_step_baseline`);
4. one RMSProp step (lr 0.001, ρ = 0.9) on ``−Σ log π(a_t|s_t) (v_t − b_t) / #samples`` summed
   over every sample of every jobset.

Rollouts run in ``workers`` processes (one torch thread each); each worker takes whole jobsets,
steps all their episodes in lock-step (`dlsched.papers.deeprm.state.DeepRMBatch`), evaluates the
network once per lock-step for every episode that must choose (`DeepRMPolicyNet.forward_index`)
and returns the gradient of its share of the loss, so only gradients cross processes. With
``mask_invalid`` (default) the policy samples among valid actions only and forced ∅ steps (no
valid job) carry no gradient; ``mask_invalid=False`` is the paper's setting (an invalid choice
lets time advance).

``pretrain_epochs > 0`` first fits the network to a teacher's choices on the training jobsets by
cross-entropy, as DeepRM's code offers (``pg_su.py``): SJF (shortest slot job that fits now,
else ∅) or `withholding_actions` (SJF that keeps room for short jobs when busy).
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

from dlsched.papers.deeprm.config import BUDGET_ROUNDS
from dlsched.papers.deeprm.config import TRAIN_SEED_BASE as TRAIN_SEED_BASE  # re-exported
from dlsched.papers.deeprm.config import IterationStats as IterationStats  # re-exported
from dlsched.papers.deeprm.config import ReinforceConfig as ReinforceConfig  # re-exported
from dlsched.papers.deeprm.config import make_jobsets as make_jobsets  # re-exported
from dlsched.papers.deeprm.net import DeepRMPolicyNet
from dlsched.papers.deeprm.state import DeepRMBatch, DeepRMShape, Jobset, Objective
from dlsched.papers.deeprm.teachers import TEACHERS, Chooser
from dlsched.papers.deeprm.teachers import sjf_actions as sjf_actions  # re-exported
from dlsched.papers.deeprm.teachers import withholding_actions as withholding_actions

log = logging.getLogger(__name__)

HELD_OUT_SEED_BASE = 900_000
"""Held-out (validation/test) jobsets use seeds from here on, never used for training."""


def per_step_baseline(returns: Sequence[npt.NDArray[np.float64]]) -> npt.NDArray[np.float64]:
    """Mean of the returns at each decision index over episodes, zero-padded to equal length."""
    length = max((len(r) for r in returns), default=0)
    padded = np.zeros((len(returns), length))
    for i, r in enumerate(returns):
        padded[i, : len(r)] = r
    return padded.mean(axis=0) if returns else padded.sum(axis=0)


def group_baseline(values: npt.NDArray[np.float64], episodes: int) -> npt.NDArray[np.float64]:
    """`per_step_baseline` of every jobset at once.

    Args:
        values: ``(L, B)`` returns, zero after each episode's end; episodes of one jobset are
            ``episodes`` consecutive columns.
        episodes: N.

    Returns:
        ``(L, B // N)`` baselines.
    """
    return values.reshape(values.shape[0], -1, episodes).mean(axis=2)


def discounted_returns(rewards: npt.NDArray[np.float64], gamma: float) -> npt.NDArray[np.float64]:
    """``v_t = Σ_{s>=t} γ^{s-t} r_s`` along axis 0 of ``(L, …)`` rewards."""
    out = np.zeros_like(rewards)
    acc = np.zeros(rewards.shape[1:])
    for t in range(rewards.shape[0] - 1, -1, -1):
        acc = rewards[t] + gamma * acc
        out[t] = acc
    return out


class Samples(NamedTuple):
    """Decisions of a rollout that carry a gradient."""

    state: npt.NDArray[np.int16]
    """`compact_index` rows of the states, ``(n, k)``."""
    mask: npt.NDArray[np.bool_]
    """Valid actions, ``(n, M + 1)``."""
    action: npt.NDArray[np.int64]
    """Actions taken, ``(n,)``."""
    step: npt.NDArray[np.int64]
    """Decision index ``t`` within the episode, ``(n,)``."""
    episode: npt.NDArray[np.int64]
    """Episode (row of the batch), ``(n,)``."""


class Rollout(NamedTuple):
    """Episodes of one batch: samples, rewards ``(L, B)`` and per-episode outcomes."""

    samples: Samples
    rewards: npt.NDArray[np.float64]
    slowdown: npt.NDArray[np.float64]
    """Mean slowdown of the jobs each episode started."""
    dropped: npt.NDArray[np.int64]
    truncated: npt.NDArray[np.bool_]
    completion: npt.NDArray[np.float64] = np.zeros(0)
    """Mean completion time (steps) of the jobs each episode started."""

    def metric(self, objective: Objective) -> npt.NDArray[np.float64]:
        """Per episode, what ``objective`` minimises: mean slowdown or mean completion time."""
        return self.completion if objective == "completion" else self.slowdown


def policy_chooser(
    net: DeepRMPolicyNet,
    rng: np.random.Generator,
    *,
    greedy: bool,
    mask_invalid: bool = True,
    idle_guard: bool = False,
) -> Chooser:
    """Actions from ``net``: sampled from its softmax (or arg-max), over valid actions only if
    ``mask_invalid``. With ``idle_guard`` ∅ is not offered while the cluster is idle (nothing
    running or reserved in the horizon) and a slot job fits: an arg-max policy that prefers ∅
    there would otherwise wait forever once arrivals stop."""
    with torch.no_grad():
        table = net.prefix_table()

    def choose(
        batch: DeepRMBatch, rows: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.int64]:
        with torch.no_grad():
            logits = net.forward_index(torch.from_numpy(batch.index(rows)), table).numpy()
        logits = logits.astype(np.float64)
        if mask_invalid:
            logits[~mask] = -np.inf
        if idle_guard:
            idle = (batch.used[rows].sum(axis=(1, 2)) == 0) & mask[:, 1:].any(axis=1)
            logits[idle, 0] = -np.inf
        if greedy:
            return logits.argmax(1)
        logits -= logits.max(1, keepdims=True)
        cum = np.cumsum(np.exp(logits), axis=1)
        u = rng.random(len(rows))[:, None] * cum[:, -1:]
        return (cum > u).argmax(1)

    return choose


def run_batch(
    batch: DeepRMBatch,
    choose: Chooser,
    *,
    record: bool = False,
    mask_invalid: bool = True,
) -> Rollout:
    """Step every episode of ``batch`` to its end with ``choose``.

    Args:
        batch: fresh episodes.
        choose: picks actions for rows that have a choice.
        record: keep the decisions that carry a gradient (`Samples`).
        mask_invalid: rows whose only valid action is ∅ take it without asking ``choose``.
    """
    num = len(batch.rows)
    rewards: list[npt.NDArray[np.float64]] = []
    parts: list[tuple[Any, ...]] = []
    t = 0
    while True:
        rows = np.flatnonzero(batch.active)
        if rows.size == 0:
            break
        mask = batch.action_masks()[rows]
        actions = np.zeros(num, np.int64)
        ask = mask[:, 1:].any(1) if mask_invalid else np.ones(rows.size, bool)
        if ask.any():
            asked = rows[ask]
            chosen = choose(batch, asked, mask[ask])
            actions[asked] = chosen
            if record:
                parts.append(
                    (batch.index(asked).astype(np.int16), mask[ask], chosen, t, asked.copy())
                )
        reward, _ = batch.step(actions)
        rewards.append(reward)
        t += 1
    if parts:
        samples = Samples(
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]).astype(np.int64),
            np.concatenate([np.full(len(p[4]), p[3], np.int64) for p in parts]),
            np.concatenate([p[4] for p in parts]).astype(np.int64),
        )
    else:
        k, a = batch.shape.num_index, batch.shape.num_actions
        samples = Samples(
            np.zeros((0, k), np.int16),
            np.zeros((0, a), bool),
            *(np.zeros(0, np.int64) for _ in range(3)),
        )
    slowdown = np.array([_mean(batch.slowdowns(i)) for i in range(num)])
    return Rollout(
        samples,
        np.stack(rewards) if rewards else np.zeros((0, num)),
        slowdown,
        batch.dropped.copy(),
        batch.truncated.copy(),
        np.array([_mean(batch.completion_times(i)) for i in range(num)]),
    )


def _mean(values: npt.NDArray[np.float64]) -> float:
    return float(values.mean()) if values.size else float("nan")


def policy_loss(
    net: DeepRMPolicyNet, samples: Samples, advantage: npt.NDArray[np.float64], masked: bool
) -> torch.Tensor:
    """``−Σ log π(a|s) · advantage`` over ``samples`` (a sum; the caller normalises)."""
    logits = net.forward_index(torch.from_numpy(samples.state.astype(np.int64)))
    if masked:
        logits = logits.masked_fill(~torch.from_numpy(samples.mask), float("-inf"))
    logp = F.log_softmax(logits, dim=1)
    chosen = logp.gather(1, torch.from_numpy(samples.action)[:, None])[:, 0]
    return -(chosen * torch.from_numpy(advantage.astype(np.float32))).sum()


# -- one worker's share of an iteration ---------------------------------------------------------


@dataclass
class _Task:
    config: ReinforceConfig
    state: dict[str, npt.NDArray[np.float32]]
    jobset_ids: list[int]
    seed: int


@dataclass
class _TaskResult:
    grads: list[npt.NDArray[np.float32]]
    samples: int
    returns: npt.NDArray[np.float64]
    """Total reward of each episode."""
    slowdown: npt.NDArray[np.float64]
    dropped: int
    truncated: int
    wall_s: float


_WORKER: dict[str, Any] = {}


def _worker_init() -> None:
    torch.set_num_threads(1)


def _net_for(config: ReinforceConfig, state: dict[str, npt.NDArray[np.float32]]) -> DeepRMPolicyNet:
    key = (config.shape, config.hidden)
    net = _WORKER.get("net")
    if net is None or _WORKER.get("net_key") != key:
        net = DeepRMPolicyNet(config.shape, config.hidden)
        _WORKER["net"], _WORKER["net_key"] = net, key
    net.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    return net


def _jobsets_for(config: ReinforceConfig, ids: Sequence[int]) -> list[Jobset]:
    cache: dict[tuple[int, float, int | None, int], Jobset] = _WORKER.setdefault("jobsets", {})
    out = []
    for i in ids:
        key = (*config.jobset_setting(i), config.long_jobs)
        if key not in cache:
            cache[key] = config.training_jobsets([i])[0]
        out.append(cache[key])
    return out


def _run_task(task: _Task) -> _TaskResult:
    wall0 = time.perf_counter()
    cfg = task.config
    net = _net_for(cfg, task.state)
    jobsets = _jobsets_for(cfg, task.jobset_ids)
    n = cfg.episodes
    batch = DeepRMBatch(
        [js for js in jobsets for _ in range(n)],
        cfg.shape,
        objective=cfg.objective,
        max_steps=cfg.max_steps,
    )
    rng = np.random.default_rng(task.seed)
    choose = policy_chooser(net, rng, greedy=False, mask_invalid=cfg.mask_invalid)
    roll = run_batch(batch, choose, record=True, mask_invalid=cfg.mask_invalid)
    values = discounted_returns(roll.rewards, cfg.gamma)  # (L, B), zero after each episode's end
    baseline = group_baseline(values, n)
    s = roll.samples
    advantage = values[s.step, s.episode] - baseline[s.step, s.episode // n]
    net.zero_grad()
    if len(s.action):
        policy_loss(net, s, advantage, cfg.mask_invalid).backward()
    grads = [
        (p.grad if p.grad is not None else torch.zeros_like(p)).numpy().copy()
        for p in net.parameters()
    ]
    return _TaskResult(
        grads,
        len(s.action),
        roll.rewards.sum(axis=0),
        roll.slowdown,
        int(roll.dropped.sum()),
        int(roll.truncated.sum()),
        time.perf_counter() - wall0,
    )


# -- the training loop ------------------------------------------------------------------------


class Reinforce:
    """DeepRM's trainer: owns the network, the optimiser and the worker pool.

    Args:
        config: hyper-parameters.
        net: start from this network (default: a fresh one seeded by ``config.seed``).
    """

    def __init__(self, config: ReinforceConfig, net: DeepRMPolicyNet | None = None) -> None:
        self.config = config
        torch.manual_seed(config.seed)
        self.rng = np.random.default_rng(config.seed)
        self.net = net or DeepRMPolicyNet(config.shape, config.hidden)
        self.optimizer = torch.optim.RMSprop(
            self.net.parameters(), lr=config.lr, alpha=config.rms_alpha, eps=config.rms_eps
        )
        self.iteration = 0
        self.pretrained_epochs = 0
        """Pre-training epochs done (`pretrain`)."""
        self.elapsed_s = 0.0
        self.history: list[IterationStats] = []
        self._pool: Any = None

    def __enter__(self) -> Reinforce:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker processes."""
        if self._pool is not None:
            self._pool.close()
            self._pool.join()
            self._pool = None

    def _map(self, tasks: list[_Task]) -> list[_TaskResult]:
        if self.config.workers <= 1 or len(tasks) <= 1:
            return [_run_task(t) for t in tasks]
        if self._pool is None:
            ctx = mp.get_context("spawn")
            self._pool = ctx.Pool(self.config.workers, initializer=_worker_init)
        return list(self._pool.map(_run_task, tasks))

    def _state(self) -> dict[str, npt.NDArray[np.float32]]:
        return {k: v.detach().numpy().copy() for k, v in self.net.state_dict().items()}

    def step(self, stop: Callable[[], bool] | None = None) -> IterationStats:
        """One training iteration (rollouts, baseline, one RMSProp step).

        Args:
            stop: asked between rounds of rollouts (True: roll out no more jobsets; the
                gradient comes from those done, ``jobsets`` in the row says how many). With it
                the jobsets are dealt in `BUDGET_ROUNDS` rounds of one task per worker, other
                random draws than without it (which runs one task per worker, uncut).
        """
        cfg = self.config
        wall0 = time.perf_counter()
        order = self.rng.permutation(cfg.jobsets)
        tasks_per_round = max(1, min(cfg.workers, cfg.jobsets))
        rounds = 1 if stop is None else BUDGET_ROUNDS
        parts = np.array_split(order, min(cfg.jobsets, tasks_per_round * rounds))
        state = self._state()
        tasks = [
            _Task(cfg, state, [int(i) for i in part], int(self.rng.integers(2**63 - 1)))
            for part in parts
            if len(part)
        ]
        results: list[_TaskResult] = []
        for first in range(0, len(tasks), tasks_per_round):
            if results and stop is not None and stop():
                break
            results += self._map(tasks[first : first + tasks_per_round])
        done = sum(len(t.jobset_ids) for t in tasks[: len(results)])
        total = max(1, sum(r.samples for r in results))
        for i, p in enumerate(self.net.parameters()):
            p.grad = torch.from_numpy(sum(r.grads[i] for r in results) / total)
        self.optimizer.step()
        returns = np.concatenate([r.returns for r in results])
        slowdown = np.concatenate([r.slowdown for r in results])
        self.iteration += 1
        took = time.perf_counter() - wall0
        self.elapsed_s += took
        stats = IterationStats(
            iteration=self.iteration,
            wall_s=self.elapsed_s,
            iteration_s=took,
            mean_reward=float(returns.mean()),
            max_reward=float(returns.max()),
            mean_slowdown=float(np.nanmean(slowdown)),
            samples=total,
            dropped=sum(r.dropped for r in results),
            truncated=sum(r.truncated for r in results),
            jobsets=done,
        )
        if done < cfg.jobsets:
            log.info("deeprm iteration %d cut: %d of %d jobsets", self.iteration, done, cfg.jobsets)
        self.history.append(stats)
        log.debug("deeprm iteration %d: %s", self.iteration, stats)
        return stats

    def pretrain(self, epochs: int | None = None, stop: Callable[[], bool] | None = None) -> float:
        """Fit the network to the teacher's decisions on the training jobsets (cross-entropy,
        Adam); ``stop`` is asked after each epoch (True: no more; `pretrained_epochs` says how
        many were done).

        Returns:
            The final epoch's accuracy (fraction of SJF's choices the arg-max reproduces).
        """
        cfg = self.config
        epochs = cfg.pretrain_epochs if epochs is None else epochs
        jobsets = cfg.training_jobsets(range(cfg.jobsets))
        batch = DeepRMBatch(jobsets, cfg.shape, objective=cfg.objective, max_steps=cfg.max_steps)
        if cfg.teacher not in TEACHERS:
            raise ValueError(f"teacher {cfg.teacher!r}: choose one of {', '.join(TEACHERS)}")
        samples = run_batch(batch, TEACHERS[cfg.teacher], record=True, mask_invalid=True).samples
        optimizer = torch.optim.Adam(self.net.parameters(), lr=cfg.pretrain_lr)
        index = torch.from_numpy(samples.state.astype(np.int64))
        mask = torch.from_numpy(samples.mask)
        target = torch.from_numpy(samples.action)
        accuracy = 0.0
        self.pretrained_epochs = 0
        for _ in range(epochs):
            if self.pretrained_epochs and stop is not None and stop():
                break
            self.pretrained_epochs += 1
            perm = torch.from_numpy(self.rng.permutation(len(target)))
            hits = 0
            for chunk in perm.split(512):
                logits = self.net.forward_index(index[chunk])
                if cfg.mask_invalid:
                    logits = logits.masked_fill(~mask[chunk], float("-inf"))
                loss = F.cross_entropy(logits, target[chunk])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                hits += int((logits.argmax(1) == target[chunk]).sum())
            accuracy = hits / max(1, len(target))
        log.info("deeprm pre-training: %d samples, accuracy %.3f", len(target), accuracy)
        if cfg.pretrain_temperature != 1.0:
            last = self.net.rest[-1]
            assert isinstance(last, torch.nn.Linear)
            with torch.no_grad():
                last.weight.mul_(1.0 / cfg.pretrain_temperature)
                last.bias.mul_(1.0 / cfg.pretrain_temperature)
        return accuracy


def evaluate(
    net: DeepRMPolicyNet,
    jobsets: Sequence[Jobset],
    *,
    greedy: bool = False,
    seed: int = 0,
    objective: Objective = "slowdown",
    mask_invalid: bool = True,
    shape: DeepRMShape | None = None,
    max_steps: int = 1000,
    idle_guard: bool = True,
) -> Rollout:
    """Run ``net`` once on each jobset (in DeepRM's own discrete-time cluster), as deployed:
    ``idle_guard`` on (see `policy_chooser`)."""
    batch = DeepRMBatch(jobsets, shape or net.shape, objective=objective, max_steps=max_steps)
    choose = policy_chooser(
        net,
        np.random.default_rng(seed),
        greedy=greedy,
        mask_invalid=mask_invalid,
        idle_guard=idle_guard,
    )
    return run_batch(batch, choose, mask_invalid=mask_invalid)
