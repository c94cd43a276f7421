"""PPO for DL2's slot problem: the RL phase that improves on its supervised start (issue 16).

DL2's own actor-critic (`dlsched.papers.dl2.algorithm.actor_critic`) learns from the paper's slot
reward ``Σ t_i/E_i`` (epochs trained), which does not measure what the policy is judged on
(average JCT), with one-step TD advantages from a replay buffer of stale samples. From a good
supervised start it made validation worse. This file is the alternative, one readable file in
CleanRL's style, `PpoConfig` holding every hyper-parameter:

* **Reward = minus the jobs in the system.** A slot's reward is ``-(Σ_j seconds job j spent in
  the system during the slot) / reward_scale_s``; its undiscounted sum over an episode is minus
  the total JCT (Little's law), so maximising the return minimises average JCT. It is computed
  from what the simulator already reports (submission and completion times), not from speeds.
* **On-policy rollouts of whole traces**, sampled from the current policy (no job-aware
  exploration); every incremental action of slot ``k`` shares the slot's advantage, computed by
  GAE(λ) over slots with a value network evaluated at every sample's state.
* **Clipped surrogate** (PPO-clip) over a few epochs of mini-batches, advantages normalised per
  mini-batch, plus a **KL term towards the supervised start** (``kl_coef``) so the first
  updates cannot wreck what imitation learned.

The policy only ever sees the scheduler's view (the environment's observation); no true speed is
read anywhere here.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from dlsched.papers.dl2.env import Dl2Env
from dlsched.papers.dl2.network import Dl2Config, make_value, masked_logits

log = logging.getLogger(__name__)


@dataclass
class PpoConfig:
    """Hyper-parameters of `ppo` (ours; CleanRL's names where they exist)."""

    episodes_per_iter: int = 2
    """Whole training traces simulated per iteration (on-policy data of one update round)."""
    epochs: int = 4
    """Passes over an iteration's samples."""
    minibatch: int = 512
    """Samples per gradient step."""
    lr: float = 3e-5
    """Adam learning rate of the policy."""
    value_lr: float = 1e-3
    """Adam learning rate of the value network."""
    gamma: float = 0.97
    """Discount per time slot."""
    gae_lambda: float = 0.95
    """GAE's λ over slots."""
    clip: float = 0.2
    """PPO's ratio clip."""
    kl_coef: float = 0.5
    """Weight of KL(start policy ‖ policy) in the loss: keeps the policy near its supervised
    start while the value network is still poor."""
    entropy_coef: float = 0.0
    """Entropy bonus weight."""
    grad_clip: float = 1.0
    """Global gradient-norm clip."""
    reward_scale_s: float = 36_000.0
    """Job-seconds per unit of reward (10 job-hours)."""
    value_warmup_iters: int = 2
    """Iterations that train the value network only (the policy is not changed yet)."""


def jobs_in_system_s(env: Dl2Env, t0: float, t1: float) -> float:
    """Seconds that jobs spent in the system (submitted, not finished) during ``[t0, t1]``."""
    assert env.driver is not None
    total = 0.0
    for run in env.driver.sim.runs.values():
        start = max(run.spec.submit_time_s, t0)
        end = t1 if run.finish_s is None else min(run.finish_s, t1)
        if end > start:
            total += end - start
    return total


@dataclass
class _Episode:
    obs: list[npt.NDArray[np.float32]]
    masks: list[npt.NDArray[np.bool_]]
    actions: list[int]
    logps: list[float]
    slot_of: list[int]
    rewards: list[float]
    avg_jct_s: float


def _collect(
    env: Dl2Env, policy: nn.Module, cfg: PpoConfig, gen: torch.Generator, seed: int
) -> _Episode:
    """One whole training trace sampled from ``policy``."""
    obs, info = env.reset(seed=seed)
    ep = _Episode([], [], [], [], [], [], float("nan"))
    assert env.driver is not None
    t0 = env.driver.sim.now_s
    slot = 0
    policy.eval()
    while True:
        mask = info["action_mask"]
        with torch.inference_mode():
            logits = masked_logits(policy(torch.from_numpy(obs)[None])[0], torch.from_numpy(mask))
            logp_all = torch.log_softmax(logits, dim=0)
            action = int(torch.multinomial(logp_all.exp(), 1, generator=gen).item())
        ep.obs.append(obs)
        ep.masks.append(mask)
        ep.actions.append(action)
        ep.logps.append(float(logp_all[action]))
        ep.slot_of.append(slot)
        obs, _, terminated, truncated, info = env.step(action)
        if info["slot_end"]:
            t1 = env.driver.sim.now_s
            ep.rewards.append(-jobs_in_system_s(env, t0, t1) / cfg.reward_scale_s)
            t0 = t1
            slot += 1
            if terminated or truncated:
                break
    runs = env.driver.sim.runs.values()
    jcts = [r.finish_s - r.spec.submit_time_s for r in runs if r.finish_s is not None]
    ep.avg_jct_s = float(np.mean(jcts)) if len(jcts) == len(runs) else float("inf")
    return ep


def _advantages(
    rewards: npt.NDArray[np.float64], slot_values: npt.NDArray[np.float64], cfg: PpoConfig
) -> npt.NDArray[np.float64]:
    """GAE(λ) per slot; the episode ends after the last slot (value 0 beyond it)."""
    adv = np.zeros_like(rewards)
    last = 0.0
    for k in range(len(rewards) - 1, -1, -1):
        nxt = slot_values[k + 1] if k + 1 < len(rewards) else 0.0
        delta = rewards[k] + cfg.gamma * nxt - slot_values[k]
        last = delta + cfg.gamma * cfg.gae_lambda * last
        adv[k] = last
    return adv


class Ppo:
    """PPO learner for a DL2 policy network, starting from ``policy`` (its supervised start).

    Args:
        policy: trained in place.
        dl2: DL2's configuration (shape, hidden sizes of the value network).
        cfg: PPO's hyper-parameters.
        seed: seeds sampling and mini-batch order.
    """

    def __init__(self, policy: nn.Module, dl2: Dl2Config, cfg: PpoConfig, seed: int) -> None:
        self.policy = policy
        self.start = copy.deepcopy(policy).eval()
        for p in self.start.parameters():
            p.requires_grad_(False)
        self.value = make_value(dl2)
        self.cfg = cfg
        self.policy_opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
        self.value_opt = torch.optim.Adam(self.value.parameters(), lr=cfg.value_lr)
        self.gen = torch.Generator().manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        self.iterations = 0

    def iterate(self, env: Dl2Env, seeds: list[int]) -> dict[str, float]:
        """Collect one episode per trace seed, then update; returns training statistics."""
        cfg = self.cfg
        episodes = [_collect(env, self.policy, cfg, self.gen, s) for s in seeds]
        obs = torch.from_numpy(np.stack([o for ep in episodes for o in ep.obs]))
        masks = torch.from_numpy(np.stack([m for ep in episodes for m in ep.masks]))
        actions = torch.tensor([a for ep in episodes for a in ep.actions])
        old_logp = torch.tensor([p for ep in episodes for p in ep.logps])
        with torch.no_grad():
            values = self.value(obs)[:, 0].numpy().astype(np.float64)
        adv_parts, ret_parts = [], []
        offset = 0
        for ep in episodes:
            n = len(ep.actions)
            slot_of = np.asarray(ep.slot_of)
            first = np.searchsorted(slot_of, np.arange(len(ep.rewards)))
            slot_values = values[offset + first]
            slot_adv = _advantages(np.asarray(ep.rewards), slot_values, cfg)
            adv_parts.append(slot_adv[slot_of])
            ret_parts.append((slot_adv + slot_values)[slot_of])
            offset += n
        advantages = torch.from_numpy(np.concatenate(adv_parts)).float()
        returns = torch.from_numpy(np.concatenate(ret_parts)).float()
        with torch.no_grad():
            start_logp = torch.log_softmax(masked_logits(self.start(obs), masks), dim=1)
        train_policy = self.iterations >= cfg.value_warmup_iters
        stats = {"kl": 0.0, "clipfrac": 0.0, "value_loss": 0.0}
        steps = 0
        self.policy.train()
        for _ in range(cfg.epochs):
            order = self.rng.permutation(len(actions))
            for lo in range(0, len(order), cfg.minibatch):
                idx = torch.from_numpy(order[lo : lo + cfg.minibatch])
                value_loss = nn.functional.mse_loss(self.value(obs[idx])[:, 0], returns[idx])
                self.value_opt.zero_grad()
                value_loss.backward()
                nn.utils.clip_grad_norm_(self.value.parameters(), cfg.grad_clip)
                self.value_opt.step()
                stats["value_loss"] += float(value_loss.detach())
                steps += 1
                if not train_policy:
                    continue
                logp_all = torch.log_softmax(masked_logits(self.policy(obs[idx]), masks[idx]), 1)
                logp = logp_all.gather(1, actions[idx, None])[:, 0]
                ratio = torch.exp(logp - old_logp[idx])
                adv = advantages[idx]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                surrogate = torch.min(
                    ratio * adv, torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip) * adv
                ).mean()
                start = start_logp[idx]
                legal = masks[idx]
                kl = (start.exp() * (start - logp_all)).where(legal, 0.0).sum(1).mean()
                entropy = -(logp_all.exp() * logp_all).where(legal, 0.0).sum(1).mean()
                loss = -surrogate + cfg.kl_coef * kl - cfg.entropy_coef * entropy
                self.policy_opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.grad_clip)
                self.policy_opt.step()
                stats["kl"] += float(kl.detach())
                stats["clipfrac"] += float(((ratio - 1).abs() > cfg.clip).float().mean())
        self.iterations += 1
        stats = {k: v / max(1, steps) for k, v in stats.items()}
        stats["train_avg_jct_s"] = float(np.mean([ep.avg_jct_s for ep in episodes]))
        stats["samples"] = float(len(actions))
        return stats


def ppo(
    learner: Ppo,
    env: Dl2Env,
    iterations: int,
    *,
    seed: int,
    on_iteration: Callable[[int, dict[str, float]], None] | None = None,
) -> None:
    """``iterations`` PPO iterations on training traces drawn by ``env`` (seeds ≥ its
    `TRAIN_SEED_MIN`, never validation seeds)."""
    rng = np.random.default_rng(seed)
    for _ in range(iterations):
        seeds = [int(s) for s in rng.integers(0, 2**31 - 1, learner.cfg.episodes_per_iter)]
        stats = learner.iterate(env, seeds)
        if on_iteration is not None:
            on_iteration(learner.iterations, stats)
