"""DL2 (Peng et al., arXiv 1909.06040): supervised warm-up from a heuristic, then actor-critic RL.

One readable file, CleanRL style: `Dl2Config` holds every hyper-parameter (defaults from DL2
§6.2), the networks are two small MLPs, and three functions do the work:

* `collect_teacher` + `supervised` — **offline supervised learning** (§4.2): replay a heuristic
  (``drf``, ``fifo``, ``srtf``, ``tetris``, ``optimus``, ``efficient-srtf``, …) on generated
  traces, decompose each slot's allocation into DL2's incremental actions
  (`Dl2Slot.teacher_action`) and fit the policy with cross-entropy over legal actions.
  ``dagger`` > 0 lets the learner drive part of the time while the teacher still labels
  (DAgger), so the policy also learns to recover from its own mistakes.
* `actor_critic` — **online RL** (§4.2–4.3): actor-critic; the advantage of every sample of slot
  ``k`` is ``r_k + γ V(s_{k+1}) − V(s)`` with ``V`` a value network trained by TD, ``r_k`` the
  slot's reward ``Σ t_i/E_i``; entropy bonus β; job-aware exploration (with probability ε the
  policy's action is replaced by one that fixes a job in a poor state: workers without PS, PS
  without workers, worker/PS ratio beyond 10); mini-batches drawn from an experience replay
  buffer of recent samples.
* Ablations (Table 2): ``value_net=False`` uses a moving average of slot rewards as baseline
  (advantage ``r_k − b``); ``exploration=False``; ``replay=False`` trains on the latest rollout
  only.

The configuration, the networks, `evaluate` (a policy run greedily through `dlsched.simulate`,
so validation numbers are the same ones ``dlsched compare`` reports) and `save` / `load` are in
`dlsched.papers.dl2.network`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from dlsched.papers.dl2.env import Dl2Env
from dlsched.papers.dl2.network import (
    Dl2Config,
    make_policy,
    make_value,
    masked_logits,
)
from dlsched.schedulers.registry import make_scheduler

log = logging.getLogger(__name__)


class Batch(NamedTuple):
    """Samples for one update (tensors of equal first dimension).

    ``pg_weights`` (optional): per-sample weight of the policy-gradient term (0 drops a sample
    from it, e.g. an action the exploration rule chose instead of the policy; the value network
    still learns from it); None = every sample weighs 1. ``discounts`` (optional): per-sample
    factor of ``V(next_obs)`` in the TD target instead of ``γ (1 − done)``.
    """

    obs: torch.Tensor
    masks: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_obs: torch.Tensor
    dones: torch.Tensor
    pg_weights: torch.Tensor | None = None
    discounts: torch.Tensor | None = None


# -- supervised learning -----------------------------------------------------------------------


@dataclass
class TeacherData:
    """Imitation samples: observations, legal-action masks and the teacher's actions."""

    obs: list[npt.NDArray[np.float32]] = field(default_factory=list)
    masks: list[npt.NDArray[np.bool_]] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.actions)

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return (
            torch.from_numpy(np.stack(self.obs)),
            torch.from_numpy(np.stack(self.masks)),
            torch.tensor(self.actions, dtype=torch.long),
        )


def collect_teacher(
    env: Dl2Env,
    teacher: str,
    episodes: int,
    *,
    learner: nn.Module | None = None,
    dagger: float = 0.0,
    seed: int = 0,
    stop: Callable[[], bool] | None = None,
) -> TeacherData:
    """Run ``teacher`` in ``env`` and record (state, mask, teacher action) for every step.

    Args:
        env: the environment (its traces are the training traces).
        teacher: scheduler registry name of the heuristic to imitate.
        episodes: traces to run.
        learner: policy network acting in a ``dagger`` fraction of slots (labels stay the
            teacher's).
        dagger: fraction of slots in which ``learner`` acts.
        seed: seeds the environment resets and the DAgger coin.
        stop: asked at every scheduling point; True ends the collection there (a spent
            wall-time budget), keeping what was recorded.
    """
    rng = np.random.default_rng(seed)
    data = TeacherData()
    for episode in range(episodes):
        scheduler = make_scheduler(teacher)
        scheduler.reset()
        obs, info = env.reset(seed=seed * 100_003 + episode)
        done = False
        while not done:
            if stop is not None and stop():
                log.warning("teacher data: stopped after %d samples (budget spent)", len(data))
                return data
            view = env.view()
            if scheduler.is_oracle and env.workload is not None:
                # a privileged teacher in simulation labels; the learner never sees the oracle
                view = dataclasses.replace(view, _oracle=env.workload.model.speed)
            decision = scheduler.decide(view).whole(view.running)
            targets = {j: (t.num_workers, t.num_ps) for j, t in decision.targets.items()}
            order = list(decision.targets)
            learner_acts = learner is not None and rng.random() < dagger
            slot_end = False
            while not slot_end and not done:
                assert env.slot is not None
                label = env.slot.teacher_action(targets, order)
                mask = info["action_mask"]
                data.obs.append(obs)
                data.masks.append(mask)
                data.actions.append(label)
                action = label
                if learner_acts and learner is not None:
                    with torch.inference_mode():
                        logits = learner(torch.from_numpy(obs).unsqueeze(0))[0]
                    action = int(torch.argmax(masked_logits(logits, torch.from_numpy(mask))))
                obs, _, terminated, truncated, info = env.step(action)
                slot_end = bool(info["slot_end"])
                done = terminated or truncated
    return data


def supervised(
    policy: nn.Module,
    data: TeacherData,
    cfg: Dl2Config,
    steps: int,
    *,
    optimizer: torch.optim.Optimizer | None = None,
    on_step: Callable[[int, float, float], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> float:
    """Cross-entropy on the teacher's actions for ``steps`` mini-batches; returns agreement.

    Agreement is the fraction of ``data`` where the policy's greedy legal action equals the
    teacher's (measured after training, on all of ``data``).

    Args:
        on_step: called as ``on_step(step, loss, batch_agreement)`` after every update.
        stop: asked before every update; True ends the updates there (a spent budget).
    """
    obs, masks, actions = data.tensors()
    opt = optimizer or torch.optim.Adam(policy.parameters(), lr=cfg.sl_lr)
    gen = torch.Generator().manual_seed(cfg.seed)
    policy.train()
    for step in range(steps):
        if stop is not None and stop():
            break
        idx = torch.randint(len(actions), (min(cfg.batch_size, len(actions)),), generator=gen)
        logits = masked_logits(policy(obs[idx]), masks[idx])
        loss = nn.functional.cross_entropy(logits, actions[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if on_step is not None:
            agree = float((logits.argmax(dim=1) == actions[idx]).float().mean())
            on_step(step + 1, float(loss.detach()), agree)
    return agreement(policy, data)


def agreement(policy: nn.Module, data: TeacherData) -> float:
    """Fraction of samples where the greedy legal action equals the teacher's."""
    obs, masks, actions = data.tensors()
    with torch.inference_mode():
        pred = masked_logits(policy(obs), masks).argmax(dim=1)
    return float((pred == actions).float().mean())


# -- reinforcement learning ----------------------------------------------------------------------


class Replay:
    """Ring buffer of the most recent samples (experience replay, §4.3)."""

    def __init__(self, capacity: int, obs_dim: int, num_actions: int) -> None:
        self.capacity = capacity
        self.obs = np.zeros((capacity, obs_dim), dtype=np.float32)
        self.next_obs = np.zeros((capacity, obs_dim), dtype=np.float32)
        self.masks = np.zeros((capacity, num_actions), dtype=bool)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.dones = np.zeros(capacity, dtype=np.float32)
        self.size = 0
        self.pos = 0

    def add(
        self,
        obs: npt.NDArray[np.float32],
        mask: npt.NDArray[np.bool_],
        action: int,
        reward: float,
        next_obs: npt.NDArray[np.float32],
        done: bool,
    ) -> None:
        i = self.pos
        self.obs[i], self.masks[i], self.actions[i] = obs, mask, action
        self.rewards[i], self.next_obs[i], self.dones[i] = reward, next_obs, float(done)
        self.pos = (self.pos + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def batch(self, idx: npt.NDArray[np.int64]) -> Batch:
        return Batch(
            torch.from_numpy(self.obs[idx]),
            torch.from_numpy(self.masks[idx]),
            torch.from_numpy(self.actions[idx]),
            torch.from_numpy(self.rewards[idx]),
            torch.from_numpy(self.next_obs[idx]),
            torch.from_numpy(self.dones[idx]),
        )

    def latest(self, n: int) -> Batch:
        """The ``n`` most recently added samples."""
        n = min(n, self.size)
        idx = (self.pos - 1 - np.arange(n)) % self.capacity
        return self.batch(idx.astype(np.int64))


@dataclass
class Learner:
    """Networks, optimisers and running state of an RL run (what `--resume` restores)."""

    cfg: Dl2Config
    policy: nn.Module
    value: nn.Module
    policy_opt: torch.optim.Optimizer
    value_opt: torch.optim.Optimizer
    baseline: float = 0.0
    updates: int = 0

    @staticmethod
    def create(cfg: Dl2Config, policy: nn.Module | None = None) -> Learner:
        policy = policy if policy is not None else make_policy(cfg)
        value = make_value(cfg)
        return Learner(
            cfg,
            policy,
            value,
            torch.optim.Adam(policy.parameters(), lr=cfg.rl_lr),
            torch.optim.Adam(value.parameters(), lr=cfg.rl_lr),
        )

    def update(self, batch: Batch) -> dict[str, float]:
        """One actor-critic step on ``batch``; returns losses and the mean entropy."""
        stats = self.backward(batch)
        self.step()
        return stats

    def step(self) -> None:
        """Clip the gradients left by `backward` and apply them with the optimisers."""
        nn.utils.clip_grad_norm_(self.policy.parameters(), self.cfg.grad_clip)
        self.policy_opt.step()
        if self.cfg.value_net:
            nn.utils.clip_grad_norm_(self.value.parameters(), self.cfg.grad_clip)
            self.value_opt.step()
        self.updates += 1

    def backward(self, batch: Batch) -> dict[str, float]:
        """Actor-critic gradients of ``batch`` into the networks' ``.grad`` (no step).

        Federated training (`dlsched.papers.dl2.federated`) ships these gradients to the global
        learner, which applies them with `step`.
        """
        cfg = self.cfg
        self.policy.train()
        logits = masked_logits(self.policy(batch.obs), batch.masks)
        logp_all = torch.log_softmax(logits, dim=1)
        logp = logp_all.gather(1, batch.actions[:, None])[:, 0]
        entropy = -(logp_all.exp() * logp_all).sum(dim=1)
        stats: dict[str, float] = {}
        if cfg.value_net:
            values = self.value(batch.obs)[:, 0]
            with torch.no_grad():
                nxt = self.value(batch.next_obs)[:, 0]
                discount = (
                    cfg.gamma * (1.0 - batch.dones) if batch.discounts is None else batch.discounts
                )
                target = batch.rewards + discount * nxt
            advantage = (target - values).detach()
            value_loss = nn.functional.mse_loss(values, target)
            self.value_opt.zero_grad()
            value_loss.backward()
            stats["value_loss"] = float(value_loss.detach())
        else:
            mean_r = float(batch.rewards.mean())
            advantage = batch.rewards - self.baseline
            self.baseline = cfg.baseline_decay * self.baseline + (1 - cfg.baseline_decay) * mean_r
        if cfg.normalize_advantage and advantage.numel() > 1:
            advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
        if batch.pg_weights is None:
            pg = (logp * advantage).mean()
        else:
            pg = (logp * advantage * batch.pg_weights).sum() / batch.pg_weights.sum().clamp(min=1)
        policy_loss = -pg - cfg.entropy_beta * entropy.mean()
        self.policy_opt.zero_grad()
        policy_loss.backward()
        stats["policy_loss"] = float(policy_loss.detach())
        stats["entropy"] = float(entropy.detach().mean())
        stats["advantage"] = float(advantage.detach().abs().mean())
        return stats


class Rollout:
    """Runs the current policy in the environment, slot by slot, filling the replay buffer."""

    def __init__(self, env: Dl2Env, learner: Learner, seed: int) -> None:
        self.env = env
        self.learner = learner
        cfg = learner.cfg
        shape = cfg.shape()
        self.replay = Replay(cfg.replay_size, shape.obs_dim, shape.num_actions)
        self.rng = np.random.default_rng(seed)
        self.gen = torch.Generator().manual_seed(seed)
        self.seed = seed
        self.episodes = 0
        self.obs, self.info = env.reset(seed=seed)
        self.slot_rewards: list[float] = []
        self.episode_return = 0.0
        self.last_return = float("nan")

    def _act(self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]) -> int:
        cfg = self.learner.cfg
        if cfg.exploration and self.env.slot is not None and self.rng.random() < cfg.epsilon:
            fixes = self.env.slot.poor_state_fixes()
            if fixes:
                return int(fixes[int(self.rng.integers(len(fixes)))])
        with torch.inference_mode():
            logits = self.learner.policy(torch.from_numpy(obs).unsqueeze(0))[0]
        probs = torch.softmax(masked_logits(logits, torch.from_numpy(mask)), dim=0)
        return int(torch.multinomial(probs, 1, generator=self.gen).item())

    def run(self, slots: int) -> int:
        """Simulate ``slots`` time slots; every sample of a slot gets that slot's reward."""
        self.learner.policy.eval()
        added = 0
        for _ in range(slots):
            pending: list[tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_], int]] = []
            while True:
                mask = self.info["action_mask"]
                action = self._act(self.obs, mask)
                pending.append((self.obs, mask, action))
                self.obs, reward, terminated, truncated, self.info = self.env.step(action)
                if self.info["slot_end"]:
                    break
            for obs, mask, action in pending:
                self.replay.add(obs, mask, action, float(reward), self.obs, terminated)
            added += len(pending)
            self.episode_return += float(reward)
            if terminated or truncated:
                self.episodes += 1
                self.last_return = self.episode_return
                self.episode_return = 0.0
                self.obs, self.info = self.env.reset(seed=self.seed * 100_003 + self.episodes)
        return added


def next_batch(cfg: Dl2Config, rollout: Rollout, rng: np.random.Generator) -> Batch:
    """Simulate ``slots_per_update`` slots, then draw the mini-batch to learn from: a random
    sample of the replay buffer, or (without replay) exactly the samples just added."""
    added = rollout.run(cfg.slots_per_update)
    replay = rollout.replay
    if cfg.replay:
        idx = rng.integers(replay.size, size=min(cfg.batch_size, replay.size))
        return replay.batch(idx.astype(np.int64))
    return replay.latest(added)


def actor_critic(
    learner: Learner,
    rollout: Rollout,
    steps: int,
    *,
    on_step: Callable[[int, dict[str, float]], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> None:
    """``steps`` actor-critic updates, each after ``slots_per_update`` simulated slots (fewer
    if ``stop``, asked before each, says True)."""
    cfg = learner.cfg
    rng = np.random.default_rng(cfg.seed + learner.updates)
    for _ in range(steps):
        if stop is not None and stop():
            break
        batch = next_batch(cfg, rollout, rng)
        stats = learner.update(batch)
        if on_step is not None:
            on_step(learner.updates, stats)


# -- evaluation and checkpoints --------------------------------------------------------------
