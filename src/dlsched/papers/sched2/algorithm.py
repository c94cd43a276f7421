"""SCED²'s learner (§III-E, §III-F): shared-weight Q-network and DQN with prioritized replay.

One readable file, CleanRL style: `DQNConfig` holds every hyper-parameter, `Sched2QNet` is the
network of SCED² Eq. 3–5, `PrioritizedReplay` the proportional prioritized replay of Schaul
et al. (SCED² ref. [12]), and `train` the episodic loop (one episode = one trace of 1,000 jobs
drawn from the workload's distributions, SCED² §IV-A) with ε-greedy exploration over legal
actions and a periodically copied target network.

Network (Eq. 3–5)::

    F_i = f(S_i; w_shared)            i = 1..N   (one MLP for every server's M GPU times)
    G   = f(J_1..J_J, Stat; w_1)                 (one MLP for the job rows and statistics)
    E   = Concat(F_1, …, F_N, G)
    A   = f(f(E; w_2); w_3)                      (J + 1 Q-values)

Targets use double DQN (the online network picks the next action, the target network values it)
when ``double`` is set; illegal next actions are masked out of the max.

This file is a little over 500 lines on purpose: the Q-network, the prioritized replay and the
DQN loop read top to bottom in one place, CleanRL style; splitting it would scatter one
algorithm over files.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from dlsched.papers.sched2.state import Sched2Shape

log = logging.getLogger(__name__)


@dataclass
class DQNConfig:
    """Hyper-parameters of SCED²'s DQN (every field has a unit or a range)."""

    seed: int = 0
    """Seeds torch, NumPy and the episodes' trace draws."""
    episodes: int = 100
    """Training episodes (traces); SCED² trained 2,400."""
    time_budget_s: float | None = None
    """Stop after this many wall-clock seconds (None: run every episode)."""
    gamma: float = 0.99
    """Discount per action."""
    lr: float = 2.5e-4
    """Adam learning rate."""
    batch_size: int = 64
    """Transitions per gradient step."""
    buffer_size: int = 100_000
    """Replay capacity, transitions."""
    learning_starts: int = 2_000
    """Steps of experience before the first gradient step."""
    train_freq: int = 4
    """Environment steps per gradient step."""
    target_update: int = 1_000
    """Environment steps between copies of the online network into the target network."""
    eps_start: float = 1.0
    """Initial ε of ε-greedy."""
    eps_end: float = 0.05
    """Final ε."""
    eps_decay_steps: int = 50_000
    """Steps over which ε decays linearly."""
    alpha: float = 0.6
    """Prioritization exponent (0 = uniform replay)."""
    beta_start: float = 0.4
    """Initial importance-sampling exponent; annealed linearly to 1 over training."""
    prio_eps: float = 1e-3
    """Added to |TD error| so every transition keeps a chance."""
    grad_clip: float = 10.0
    """Max gradient norm."""
    double: bool = True
    """Double-DQN targets."""
    server_hidden: int = 32
    """Width of the shared per-server encoder's hidden layer."""
    server_out: int = 16
    """Features per server (F_i)."""
    job_hidden: int = 128
    """Features of the job/statistics encoder (G)."""
    hidden: int = 256
    """Width of the head's hidden layer (w_2)."""
    demo_episodes: int = 0
    """Episodes played by the teacher first; their transitions are flagged as demonstrations."""
    pretrain_steps: int = 0
    """Gradient steps on the demonstrations alone, after the demo episodes."""
    margin: float = 0.8
    """Large-margin value of DQfD's supervised loss (Q of other actions + margin ≤ Q of the
    demonstrated one)."""
    margin_weight: float = 1.0
    """Weight of the large-margin loss on demonstration transitions (0 disables it)."""
    teacher_explore: float = 0.5
    """Share of ε-exploration actions taken from the teacher (the rest uniform over legal)."""
    eval_every: int = 5
    """Episodes between greedy evaluations on the validation traces (0: never)."""
    threads: int = 1
    """torch threads (the shared machine has 2 cores)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Free-form settings recorded with the run (workload options, …)."""


# -- network -------------------------------------------------------------------------------


class Sched2QNet(nn.Module):
    """The shared-weight Q-network of SCED² Eq. 3–5 (module docstring).

    Args:
        shape: N, M, J and k.
        server_hidden: hidden width of the shared server encoder.
        server_out: features per server.
        job_hidden: features of the job/statistics encoder.
        hidden: hidden width of the head.
    """

    def __init__(
        self,
        shape: Sched2Shape,
        server_hidden: int = 32,
        server_out: int = 16,
        job_hidden: int = 128,
        hidden: int = 256,
    ) -> None:
        super().__init__()
        self.shape = shape
        n, m = shape.servers, shape.gpus_per_server
        self.gpu_dim = n * m
        self.server_encoder = nn.Sequential(
            nn.Linear(m, server_hidden), nn.ReLU(), nn.Linear(server_hidden, server_out), nn.ReLU()
        )
        self.job_encoder = nn.Sequential(
            nn.Linear(shape.obs_dim - self.gpu_dim, job_hidden), nn.ReLU()
        )
        self.head = nn.Sequential(
            nn.Linear(n * server_out + job_hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, shape.num_actions),
        )

    def server_features(self, obs: torch.Tensor) -> torch.Tensor:
        """``(B, N, server_out)``: the shared encoder applied to each server's GPU row."""
        n, m = self.shape.servers, self.shape.gpus_per_server
        rows = obs[:, : self.gpu_dim].reshape(-1, n, m)
        out: torch.Tensor = self.server_encoder(rows)
        return out

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """``(B, obs_dim)`` observations → ``(B, J + 1)`` Q-values."""
        f = self.server_features(obs).flatten(1)
        g = self.job_encoder(obs[:, self.gpu_dim :])
        out: torch.Tensor = self.head(torch.cat([f, g], dim=1))
        return out


def make_net(shape: Sched2Shape, config: DQNConfig | None = None) -> Sched2QNet:
    """A `Sched2QNet` with ``config``'s widths."""
    c = config or DQNConfig()
    return Sched2QNet(shape, c.server_hidden, c.server_out, c.job_hidden, c.hidden)


# -- prioritized replay ---------------------------------------------------------------------


class Batch(NamedTuple):
    """A sampled batch (tensors) with its buffer indices and importance weights."""

    obs: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_obs: torch.Tensor
    next_masks: torch.Tensor
    dones: torch.Tensor
    demos: torch.Tensor
    weights: torch.Tensor
    indices: npt.NDArray[np.int64]


class SumTree:
    """A binary sum tree over ``capacity`` priorities: O(log n) update and prefix-sum search."""

    def __init__(self, capacity: int) -> None:
        size = 1
        while size < capacity:
            size *= 2
        self.size = size
        self.tree = np.zeros(2 * size, dtype=np.float64)

    def total(self) -> float:
        return float(self.tree[1])

    def update(self, index: int, value: float) -> None:
        i = index + self.size
        self.tree[i] = value
        i //= 2
        while i >= 1:
            self.tree[i] = self.tree[2 * i] + self.tree[2 * i + 1]
            i //= 2

    def get(self, index: int) -> float:
        return float(self.tree[index + self.size])

    def find(self, mass: float) -> int:
        """Leaf index whose prefix-sum interval contains ``mass``."""
        i = 1
        while i < self.size:
            left = 2 * i
            if mass < self.tree[left] or self.tree[left + 1] <= 0:
                i = left
            else:
                mass -= self.tree[left]
                i = left + 1
        return i - self.size


class PrioritizedReplay:
    """Proportional prioritized replay: P(i) = p_i^α / Σ p^α (Schaul et al. 2016).

    New transitions get the largest priority seen so far. `sample` draws one transition per
    equal-mass segment of the priority sum (stratified, as the paper's proportional variant)
    and returns importance weights ``(N·P(i))^-β`` normalised by their max.

    Args:
        capacity: transitions kept (oldest overwritten).
        obs_dim: observation length.
        num_actions: action count (for masks).
        alpha: prioritization exponent.
        seed: seed of the sampling generator.
    """

    def __init__(
        self, capacity: int, obs_dim: int, num_actions: int, alpha: float = 0.6, seed: int = 0
    ) -> None:
        self.capacity = capacity
        self.alpha = alpha
        self.obs = np.zeros((capacity, obs_dim), dtype=np.float32)
        self.next_obs = np.zeros((capacity, obs_dim), dtype=np.float32)
        self.next_masks = np.zeros((capacity, num_actions), dtype=bool)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.dones = np.zeros(capacity, dtype=np.float32)
        self.demos = np.zeros(capacity, dtype=np.float32)
        self.tree = SumTree(capacity)
        self.max_priority = 1.0
        self.pos = 0
        self.count = 0
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.count

    def add(
        self,
        obs: npt.NDArray[np.float32],
        action: int,
        reward: float,
        next_obs: npt.NDArray[np.float32],
        next_mask: npt.NDArray[np.bool_],
        done: bool,
        priority: float | None = None,
        demo: bool = False,
    ) -> None:
        """Store a transition with ``priority`` (default: the max so far), before ^α.

        ``demo`` flags a teacher's transition (it also gets the large-margin loss).
        """
        i = self.pos
        self.obs[i] = obs
        self.actions[i] = action
        self.rewards[i] = reward
        self.next_obs[i] = next_obs
        self.next_masks[i] = next_mask
        self.dones[i] = float(done)
        self.demos[i] = float(demo)
        p = self.max_priority if priority is None else priority
        self.tree.update(i, p**self.alpha)
        self.pos = (i + 1) % self.capacity
        self.count = min(self.count + 1, self.capacity)

    def sample_indices(self, batch_size: int) -> npt.NDArray[np.int64]:
        """``batch_size`` indices drawn in proportion to priority^α (stratified)."""
        total = self.tree.total()
        bounds = np.linspace(0.0, total, batch_size + 1)
        masses = self.rng.uniform(bounds[:-1], bounds[1:])
        idx = [min(self.tree.find(float(m)), self.count - 1) for m in masses]
        return np.asarray(idx, dtype=np.int64)

    def sample(self, batch_size: int, beta: float) -> Batch:
        """A batch with importance-sampling weights for exponent ``beta``."""
        idx = self.sample_indices(batch_size)
        total = self.tree.total()
        probs = np.array([self.tree.get(int(i)) for i in idx]) / total
        weights = (self.count * probs) ** (-beta)
        weights /= weights.max()
        return Batch(
            torch.from_numpy(self.obs[idx]),
            torch.from_numpy(self.actions[idx]),
            torch.from_numpy(self.rewards[idx]),
            torch.from_numpy(self.next_obs[idx]),
            torch.from_numpy(self.next_masks[idx]),
            torch.from_numpy(self.dones[idx]),
            torch.from_numpy(self.demos[idx]),
            torch.as_tensor(weights, dtype=torch.float32),
            idx,
        )

    def update_priorities(
        self, indices: npt.NDArray[np.int64], priorities: Sequence[float]
    ) -> None:
        """Set new priorities (|TD error| + ε) for sampled transitions."""
        for i, p in zip(indices.tolist(), priorities, strict=True):
            self.tree.update(int(i), float(p) ** self.alpha)
            self.max_priority = max(self.max_priority, float(p))


# -- acting and learning --------------------------------------------------------------------


def greedy_action(net: nn.Module, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]) -> int:
    """Arg-max of the Q-values over legal actions."""
    with torch.inference_mode():
        q = net(torch.from_numpy(obs).unsqueeze(0))[0]
    q = q.masked_fill(~torch.from_numpy(mask), float("-inf"))
    return int(torch.argmax(q).item())


def epsilon_at(config: DQNConfig, step: int) -> float:
    """ε after ``step`` environment steps (linear decay)."""
    frac = min(1.0, step / max(1, config.eps_decay_steps))
    return config.eps_start + frac * (config.eps_end - config.eps_start)


def td_step(
    net: nn.Module,
    target: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: Batch,
    config: DQNConfig,
) -> tuple[float, npt.NDArray[np.float64]]:
    """One gradient step on a prioritized batch; returns (loss, new priorities)."""
    with torch.no_grad():
        next_q_target = target(batch.next_obs)
        illegal = ~batch.next_masks
        if config.double:
            next_online = net(batch.next_obs).masked_fill(illegal, float("-inf"))
            best = next_online.argmax(dim=1, keepdim=True)
            next_value = next_q_target.gather(1, best).squeeze(1)
        else:
            next_value = next_q_target.masked_fill(illegal, float("-inf")).max(dim=1).values
        next_value = torch.where(batch.dones > 0, torch.zeros_like(next_value), next_value)
        y = batch.rewards + config.gamma * next_value
    q_all = net(batch.obs)
    q = q_all.gather(1, batch.actions.unsqueeze(1)).squeeze(1)
    td = y - q
    loss = (batch.weights * nn.functional.smooth_l1_loss(q, y, reduction="none")).mean()
    if config.margin_weight > 0 and bool(batch.demos.any()):
        margins = torch.full_like(q_all, config.margin)
        margins.scatter_(1, batch.actions.unsqueeze(1), 0.0)
        violation = (q_all + margins).max(dim=1).values - q
        supervised = (batch.weights * batch.demos * violation).sum() / batch.demos.sum()
        loss = loss + config.margin_weight * supervised
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(net.parameters(), config.grad_clip)
    optimizer.step()
    prios = td.detach().abs().numpy().astype(np.float64) + config.prio_eps
    return float(loss.item()), prios


@dataclass
class EpisodeLog:
    """One row of the training CSV log."""

    episode: int
    steps: int
    epsilon: float
    train_effectiveness: float
    train_avg_jct_s: float
    loss: float
    eval_effectiveness: float
    eval_avg_jct_s: float
    wall_s: float


EnvFactory = Callable[[], Any]
Evaluate = Callable[[Sched2QNet], dict[str, float]]


class Teacher(Protocol):
    """A demonstrator: ``act(builder)`` gives its action; ``reset()`` at each episode start."""

    def reset(self) -> None: ...

    def act(self, builder: Any) -> int: ...


def train(
    env: Any,
    config: DQNConfig,
    *,
    evaluate: Evaluate | None = None,
    log_csv: str | Path | None = None,
    on_episode: Callable[[EpisodeLog], None] | None = None,
    teacher: Teacher | None = None,
    on_best: Callable[[Sched2QNet, dict[str, float]], None] | None = None,
) -> tuple[Sched2QNet, list[EpisodeLog], dict[str, float]]:
    """Train SCED²'s DQN on ``env`` (a `Sched2Env`) for ``config.episodes`` episodes.

    Args:
        env: the environment; each ``reset`` draws a new trace.
        config: hyper-parameters.
        evaluate: greedy evaluation of a network on held-out traces → metrics with
            ``"avg_effectiveness"``; the best network by it is returned (None: the last).
        log_csv: write one `EpisodeLog` row per episode here.
        on_episode: called after every episode (progress bars).
        teacher: demonstrator for the first ``config.demo_episodes`` episodes and a share of
            the exploration (DQfD); None for plain DQN as SCED².
        on_best: called with the network and its metrics whenever validation improves
            (to checkpoint as training goes).

    Returns:
        ``(net, log, best_metrics)``: the best (or last) network, the per-episode log and the
        evaluation metrics of the returned network (empty without ``evaluate``).
    """
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    shape: Sched2Shape = env.shape
    net = make_net(shape, config)
    target = copy.deepcopy(net)
    optimizer = torch.optim.Adam(net.parameters(), lr=config.lr)
    buffer = PrioritizedReplay(
        config.buffer_size, shape.obs_dim, shape.num_actions, config.alpha, config.seed
    )
    history: list[EpisodeLog] = []
    best_state: dict[str, torch.Tensor] | None = None
    best_metrics: dict[str, float] = {}
    wall0 = time.perf_counter()
    step = 0
    writer = None
    handle = None
    with contextlib.ExitStack() as stack:
        if log_csv is not None:
            Path(log_csv).parent.mkdir(parents=True, exist_ok=True)
            handle = stack.enter_context(Path(log_csv).open("w", newline=""))
            writer = csv.DictWriter(handle, fieldnames=list(EpisodeLog.__dataclass_fields__))
            writer.writeheader()
        for episode in range(config.episodes):
            obs, info = env.reset(seed=int(rng.integers(0, 2**31 - 1)))
            if teacher is not None:
                teacher.reset()
            demo = teacher is not None and episode < config.demo_episodes
            mask = info["action_mask"]
            done = False
            losses: list[float] = []
            result: dict[str, Any] = {}
            while not done:
                eps = epsilon_at(config, step)
                if demo and teacher is not None:
                    action = teacher.act(env.builder)
                elif rng.random() < eps:
                    if teacher is not None and rng.random() < config.teacher_explore:
                        action = teacher.act(env.builder)
                    else:
                        action = int(rng.choice(np.flatnonzero(mask)))
                else:
                    action = greedy_action(net, obs, mask)
                next_obs, reward, terminated, truncated, info = env.step(action)
                next_mask = info["action_mask"]
                buffer.add(obs, action, reward, next_obs, next_mask, terminated, demo=demo)
                obs, mask = next_obs, next_mask
                done = terminated or truncated
                if not demo:
                    step += 1
                if not demo and step >= config.learning_starts and step % config.train_freq == 0:
                    progress = min(1.0, (episode + 1) / max(1, config.episodes))
                    beta = config.beta_start + progress * (1.0 - config.beta_start)
                    batch = buffer.sample(config.batch_size, beta)
                    loss, prios = td_step(net, target, optimizer, batch, config)
                    buffer.update_priorities(batch.indices, prios.tolist())
                    losses.append(loss)
                if not demo and step % config.target_update == 0:
                    target.load_state_dict(net.state_dict())
                if done:
                    result = info.get("result", {})
            pretrained = demo and episode == config.demo_episodes - 1
            if pretrained:
                for _ in range(config.pretrain_steps):
                    batch = buffer.sample(config.batch_size, config.beta_start)
                    loss, prios = td_step(net, target, optimizer, batch, config)
                    buffer.update_priorities(batch.indices, prios.tolist())
                    losses.append(loss)
                target.load_state_dict(net.state_dict())
            metrics: dict[str, float] = {}
            last = episode == config.episodes - 1
            out_of_time = (
                config.time_budget_s is not None
                and time.perf_counter() - wall0 > config.time_budget_s
            )
            if evaluate is not None and (
                (config.eval_every and (episode + 1) % config.eval_every == 0)
                or last
                or out_of_time
                or pretrained
            ):
                metrics = evaluate(net)
                if not best_metrics or metrics["avg_effectiveness"] > best_metrics.get(
                    "avg_effectiveness", -1.0
                ):
                    best_metrics = dict(metrics)
                    best_state = copy.deepcopy(net.state_dict())
                    if on_best is not None:
                        on_best(net, best_metrics)
            row = EpisodeLog(
                episode=episode,
                steps=step,
                epsilon=epsilon_at(config, step),
                train_effectiveness=float(info.get("avg_effectiveness", float("nan"))),
                train_avg_jct_s=float(result.get("avg_jct_s", float("nan"))),
                loss=float(np.mean(losses)) if losses else float("nan"),
                eval_effectiveness=metrics.get("avg_effectiveness", float("nan")),
                eval_avg_jct_s=metrics.get("avg_jct_s", float("nan")),
                wall_s=time.perf_counter() - wall0,
            )
            history.append(row)
            if writer is not None and handle is not None:
                writer.writerow(asdict(row))
                handle.flush()
            if on_episode is not None:
                on_episode(row)
            if out_of_time:
                log.info("sched2: time budget reached after %d episodes", episode + 1)
                break
    if best_state is not None:
        net.load_state_dict(best_state)
    return net, history, best_metrics
