"""Paired rollouts for DL2's policy gradient: K copies of one trace, one baseline from the others.

Not the paper's method (DL2 §4.2 uses a critic's TD error as the advantage); a variance
reduction of the same objective (the paper's discounted slot reward, γ per slot), tried for
issue 29 because the paper's gradient at its supervised start shows no signal in 524,288
samples (`benchmarks/RESULTS.md`).

`paired_rollout` runs ``K`` copies of each of ``P`` traces in one `Dl2BatchedEnv` with
``noise="per_job"`` (each job's speed factor at a tick depends on the trace, the tick and the
job only, so copies that differ in actions still share their noise: common random numbers).
Each trace's copies first run the start's greedy policy for ``burn_in`` slots (identical
copies: a random phase of the trace), then sample from π for ``window`` recorded slots and
``horizon`` more slots whose rewards only enter the returns (``after``: keep sampling from π,
or act greedily). `rloo_advantages` gives every action of a copy's slot ``t`` its discounted
return from ``t`` minus the mean of the other copies' returns from ``t`` (leave-one-out, as
RLOO / GRPO): an unbiased baseline, since the other copies never see this copy's draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from dlsched.papers.dl2.batched_env import Dl2BatchedEnv
from dlsched.papers.dl2.network import masked_logits
from dlsched.rl.time_in_system import HOUR_S


@dataclass
class PairedBatch:
    """One group of paired rollouts (``n`` recorded actions of ``B = P × K`` copies).

    Attributes:
        obs, masks, actions: the recorded actions' states, legal masks and actions ``(n, …)``.
        env: which copy took each action ``(n,)``; ``trace = env // copies``.
        slot: the window slot (0 … ``window − 1``) of each action ``(n,)``.
        rewards: ``(B, window + horizon)`` the slot reward (the paper's, or minus job-hours
            with ``reward="jct"``) of each copy's slots after its burn-in (0 after its
            episode ended).
        copies: K.
        window: recorded slots per copy.
        job_hours: ``(B, window + horizon)`` job-hours the slot's jobs spent in the system in
            the same slots, whatever ``reward`` (``−job_hours`` is the ``"jct"`` reward).
    """

    obs: npt.NDArray[np.float32]
    masks: npt.NDArray[np.bool_]
    actions: npt.NDArray[np.int64]
    env: npt.NDArray[np.int64]
    slot: npt.NDArray[np.int64]
    rewards: npt.NDArray[np.float64]
    copies: int
    window: int
    job_hours: npt.NDArray[np.float64] | None = None


def _act(
    policy: nn.Module, env: Dl2BatchedEnv, sample: npt.NDArray[np.bool_], gen: torch.Generator
) -> npt.NDArray[np.int64]:
    obs, mask = env.tensors()
    with torch.inference_mode():
        logits = masked_logits(policy(obs), mask)
        drawn = torch.multinomial(torch.softmax(logits, 1), 1, generator=gen)[:, 0]
    return np.where(sample, drawn.numpy(), logits.argmax(1).numpy()).astype(np.int64)


def paired_rollout(
    env: Dl2BatchedEnv,
    policy: nn.Module,
    trace_seeds: list[int],
    burn_in: list[int],
    *,
    window: int,
    horizon: int,
    gen: torch.Generator,
    after: str = "sample",
    reward: str = "paper",
) -> PairedBatch:
    """Run the copies (module docstring); ``env.num_envs`` must be a multiple of the traces.

    ``reward``: ``"paper"`` (DL2's slot reward Σ t_i/E_i) or ``"jct"`` (minus the job-hours
    the slot's jobs spent in the system, `Dl2Env(reward="jct")`'s: its undiscounted sum over an
    episode is −Σ JCT / 3600 s; not the paper's).
    """
    B, P = env.num_envs, len(trace_seeds)
    if B % P or len(burn_in) != P or after not in ("sample", "greedy"):
        raise ValueError("num_envs must be copies × traces; one burn-in per trace; after?")
    if reward not in ("paper", "jct"):
        raise ValueError(f"reward must be 'paper' or 'jct', got {reward!r}")
    K, T = B // P, window + horizon
    env.reset([s for s in trace_seeds for _ in range(K)])
    start = np.repeat(np.asarray(burn_in, dtype=np.int64), K)
    slot = np.zeros(B, dtype=np.int64)  # slots ended since the reset
    alive = np.ones(B, dtype=bool)
    rewards = np.zeros((B, T))
    job_hours = np.zeros((B, T))
    rec: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32], npt.NDArray[np.bool_],
                    npt.NDArray[np.int64], npt.NDArray[np.int64]]] = []  # fmt: skip
    while True:
        rel = slot - start  # the slot after the burn-in (negative: still burning in)
        alive &= rel < T
        if not alive.any():
            break
        in_window = alive & (rel >= 0) & (rel < window)
        sample = in_window | (alive & (rel >= window) & (after == "sample"))
        act = _act(policy, env, sample, gen)
        act = np.where(alive, act, env.shape.num_actions - 1)
        idx = np.flatnonzero(in_window)
        if len(idx):
            rec.append((idx, env.obs[idx].copy(), env.mask[idx].copy(), act[idx], rel[idx]))
        _, _, r, term, trunc, slot_end = env.step(act)
        counted = slot_end & alive & (rel >= 0)
        hours = env.job_s / HOUR_S
        job_hours[counted, rel[counted]] = hours[counted]
        paid = r if reward == "paper" else -hours
        rewards[counted, rel[counted]] = paid[counted]
        slot += slot_end
        alive &= ~(term | trunc)  # a trace that ends in its burn-in records nothing
    if not rec:
        raise ValueError(f"traces {trace_seeds} all ended in their burn-in; burn in less")
    envs = np.concatenate([r[0] for r in rec])
    return PairedBatch(
        obs=np.concatenate([r[1] for r in rec]),
        masks=np.concatenate([r[2] for r in rec]),
        actions=np.concatenate([r[3] for r in rec]),
        env=envs,
        slot=np.concatenate([r[4] for r in rec]),
        rewards=rewards,
        copies=K,
        window=window,
        job_hours=job_hours,
    )


def returns_to_go(rewards: npt.NDArray[np.float64], gamma: float, window: int) -> npt.NDArray:
    """``(B, window)``: Σ_{u ≥ t} γ^(u − t) r[b, u] over the recorded horizon."""
    out = np.zeros(rewards.shape)
    acc = np.zeros(rewards.shape[0])
    for t in range(rewards.shape[1] - 1, -1, -1):
        acc = rewards[:, t] + gamma * acc
        out[:, t] = acc
    return out[:, :window]


def rloo_advantages(batch: PairedBatch, gamma: float) -> npt.NDArray[np.float32]:
    """Each recorded action's return from its slot minus the other copies' mean (module
    docstring); ``(n,)``."""
    K = batch.copies
    if K < 2:
        raise ValueError("leave-one-out needs at least 2 copies of a trace")
    window = batch.window
    G = returns_to_go(batch.rewards, gamma, window)
    per_trace = G.reshape(-1, K, window)
    loo = (per_trace.sum(1, keepdims=True) - per_trace) / (K - 1)
    adv = (per_trace - loo).reshape(-1, window)
    return adv[batch.env, batch.slot].astype(np.float32)


def policy_gradient_loss(
    policy: nn.Module, batch: PairedBatch, advantages: npt.NDArray[np.float32]
) -> torch.Tensor:
    """``−mean(A · log π(a|s))`` over the batch's recorded actions (its gradient ascends)."""
    logits = masked_logits(policy(torch.from_numpy(batch.obs)), torch.from_numpy(batch.masks))
    logp = torch.log_softmax(logits, 1).gather(1, torch.from_numpy(batch.actions)[:, None])[:, 0]
    return -(logp * torch.from_numpy(advantages)).mean()
