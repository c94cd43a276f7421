"""SCED²'s learner (§III-E, §III-F): shared-weight Q-network and DQN with prioritized replay.

One readable file, CleanRL style: `DQNConfig` holds every hyper-parameter, `Sched2QNet` is the
network of SCED² Eq. 3–5, `dlsched.papers.sched2.replay.VectorReplay` the proportional
prioritized replay of Schaul et al. (SCED² ref. [12]; new transitions at the largest priority
ever set), and `DQN` the learning step: one episode (one trace of 1,000 jobs
drawn from the workload's distributions, SCED² §IV-A) with ε-greedy exploration over legal
actions and a periodically copied target network. Validation, keeping the best, the log and
the budget are the shared training run's (`dlsched.rl.training`).

Network (Eq. 3–5)::

    F_i = f(S_i; w_shared)            i = 1..N   (one MLP for every server's M GPU times)
    G   = f(J_1..J_J, Stat; w_1)                 (one MLP for the job rows and statistics)
    E   = Concat(F_1, …, F_N, G)
    A   = f(f(E; w_2); w_3)                      (J + 1 Q-values)

With ``dueling`` (Wang et al. 2016; not in SCED², a deviation) w_3 splits into a value and an
advantage stream, Q = V + A − mean(A): the state's value is learnt once for every action, so
the small differences between actions (φ beside a pick) are not drowned by its noise.

Targets use double DQN (the online network picks the next action, the target network values it)
when ``double`` is set; illegal next actions are masked out of the max.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from dlsched.papers.sched2.config import DQNConfig as DQNConfig  # re-exported
from dlsched.papers.sched2.replay import ReplayBatch, VectorReplay
from dlsched.papers.sched2.state import Sched2Shape

log = logging.getLogger(__name__)


# -- network -------------------------------------------------------------------------------


class Sched2QNet(nn.Module):
    """The shared-weight Q-network of SCED² Eq. 3–5 (module docstring).

    Args:
        shape: N, M, J and k.
        server_hidden: hidden width of the shared server encoder.
        server_out: features per server.
        job_hidden: features of the job/statistics encoder.
        hidden: hidden width of the head.
        dueling: value and advantage streams after the head's hidden layer (module docstring).
    """

    def __init__(
        self,
        shape: Sched2Shape,
        server_hidden: int = 32,
        server_out: int = 16,
        job_hidden: int = 128,
        hidden: int = 256,
        dueling: bool = False,
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
        # dueling: head[2] is the advantage stream, value the state's (one output)
        self.value = nn.Linear(hidden, 1) if dueling else None

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
        if self.value is None:
            out: torch.Tensor = self.head(torch.cat([f, g], dim=1))
            return out
        h = self.head[1](self.head[0](torch.cat([f, g], dim=1)))
        advantage = self.head[2](h)
        q: torch.Tensor = self.value(h) + advantage - advantage.mean(dim=1, keepdim=True)
        return q


def make_net(shape: Sched2Shape, config: DQNConfig | None = None) -> Sched2QNet:
    """A `Sched2QNet` with ``config``'s widths."""
    c = config or DQNConfig()
    return Sched2QNet(shape, c.server_hidden, c.server_out, c.job_hidden, c.hidden, c.dueling)


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
    sampled: ReplayBatch,
    config: DQNConfig,
) -> tuple[float, npt.NDArray[np.float64]]:
    """One gradient step on a prioritized batch; returns (loss, new priorities)."""
    obs, next_obs = torch.from_numpy(sampled.obs), torch.from_numpy(sampled.next_obs)
    actions, weights = torch.from_numpy(sampled.actions), torch.from_numpy(sampled.weights)
    demos = torch.from_numpy(sampled.demos)
    with torch.no_grad():
        next_q_target = target(next_obs)
        illegal = ~torch.from_numpy(sampled.next_masks)
        if config.double:
            next_online = net(next_obs).masked_fill(illegal, float("-inf"))
            best = next_online.argmax(dim=1, keepdim=True)
            next_value = next_q_target.gather(1, best).squeeze(1)
        else:
            next_value = next_q_target.masked_fill(illegal, float("-inf")).max(dim=1).values
        dones = torch.from_numpy(sampled.dones)
        next_value = torch.where(dones > 0, torch.zeros_like(next_value), next_value)
        y = torch.from_numpy(sampled.rewards) + config.gamma * next_value
    q_all = net(obs)
    q = q_all.gather(1, actions.unsqueeze(1)).squeeze(1)
    td = y - q
    loss = (weights * nn.functional.smooth_l1_loss(q, y, reduction="none")).mean()
    if config.margin_weight > 0 and bool(demos.any()):
        margins = torch.full_like(q_all, config.margin)
        margins.scatter_(1, actions.unsqueeze(1), 0.0)
        violation = (q_all + margins).max(dim=1).values - q
        supervised = (weights * demos * violation).sum() / demos.sum()
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


class Teacher(Protocol):
    """A demonstrator: ``act(builder)`` gives its action; ``reset()`` at each episode start."""

    def reset(self) -> None: ...

    def act(self, builder: Any) -> int: ...


class DQN:
    """SCED²'s DQN on ``env`` (a `Sched2Env`): `episode` plays one episode (one trace) with
    ε-greedy actions, learning from prioritized replay as it goes; the shared training run
    (`dlsched.rl.training`, via `dlsched.papers.sched2.train`) validates and keeps the best.

    Args:
        env: the environment; each ``reset`` draws a new trace.
        config: hyper-parameters.
        teacher: demonstrator for the first ``config.demo_episodes`` episodes and a share of
            the exploration (DQfD); None for plain DQN as SCED².
    """

    def __init__(self, env: Any, config: DQNConfig, teacher: Teacher | None = None) -> None:
        torch.set_num_threads(config.threads)
        torch.manual_seed(config.seed)
        self.env = env
        self.config = config
        self.teacher = teacher
        self.rng = np.random.default_rng(config.seed)
        shape: Sched2Shape = env.shape
        self.net = make_net(shape, config)
        self.target = copy.deepcopy(self.net)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=config.lr)
        self.buffer = VectorReplay(
            config.buffer_size, shape.obs_dim, shape.num_actions, config.alpha, config.seed
        )
        self.episodes = 0
        """Episodes played."""
        self.steps = 0
        """Agent steps (demonstration steps not counted)."""

    def pretrains_after(self, episodes: int) -> bool:
        """Whether the episode numbered ``episodes`` (1-based) ends with DQfD pre-training."""
        return self.teacher is not None and episodes == self.config.demo_episodes > 0

    def episode(self, stop: Callable[[], bool] | None = None) -> EpisodeLog:
        """Play and learn from one episode; its log row (evaluation columns NaN, ``wall_s``
        NaN: the training run fills them). ``stop``, asked before each agent step, ends the
        episode there when True (a spent budget; its training columns are then NaN)."""
        config, env, teacher = self.config, self.env, self.teacher
        episode = self.episodes
        obs, info = env.reset(seed=int(self.rng.integers(0, 2**31 - 1)))
        if teacher is not None:
            teacher.reset()
        demo = teacher is not None and episode < config.demo_episodes
        mask = info["action_mask"]
        done = False
        losses: list[float] = []
        result: dict[str, Any] = {}
        while not done:
            if stop is not None and stop():
                log.warning("sched2 episode %d: stopped part way (budget spent)", episode)
                info = {}
                break
            action = self._act(obs, mask, demo)
            next_obs, reward, terminated, truncated, info = env.step(action)
            next_mask = info["action_mask"]
            one = (obs[None], np.array([action]), np.array([reward]), next_obs[None])
            self.buffer.add(*one, next_mask[None], np.array([terminated]), demos=np.array([demo]))
            obs, mask = next_obs, next_mask
            done = terminated or truncated
            if not demo:
                self.steps += 1
                losses += self._learn(episode)
            if done:
                result = info.get("result", {})
        self.episodes += 1
        if self.pretrains_after(self.episodes):
            losses += self._pretrain()
        return EpisodeLog(
            episode=episode,
            steps=self.steps,
            epsilon=epsilon_at(config, self.steps),
            train_effectiveness=float(info.get("avg_effectiveness", float("nan"))),
            train_avg_jct_s=float(result.get("avg_jct_s", float("nan"))),
            loss=float(np.mean(losses)) if losses else float("nan"),
            eval_effectiveness=float("nan"),
            eval_avg_jct_s=float("nan"),
            wall_s=float("nan"),
        )

    def _act(self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_], demo: bool) -> int:
        """The teacher's action in a demonstration, else ε-greedy (exploring partly with the
        teacher)."""
        teacher, rng = self.teacher, self.rng
        if demo and teacher is not None:
            return teacher.act(self.env.builder)
        if rng.random() < epsilon_at(self.config, self.steps):
            if teacher is not None and rng.random() < self.config.teacher_explore:
                return teacher.act(self.env.builder)
            return int(rng.choice(np.flatnonzero(mask)))
        return greedy_action(self.net, obs, mask)

    def _learn(self, episode: int) -> list[float]:
        """A gradient step and a target copy when the step counter says so; the loss."""
        config, step = self.config, self.steps
        losses = []
        if step >= config.learning_starts and step % config.train_freq == 0:
            progress = min(1.0, (episode + 1) / max(1, config.episodes))
            beta = config.beta_start + progress * (1.0 - config.beta_start)
            batch = self.buffer.sample(config.batch_size, beta)
            loss, prios = td_step(self.net, self.target, self.optimizer, batch, config)
            self.buffer.update_priorities(batch.indices, prios)
            losses.append(loss)
        if step % config.target_update == 0:
            self.target.load_state_dict(self.net.state_dict())
        return losses

    def _pretrain(self) -> list[float]:
        """DQfD: gradient steps on the demonstrations alone, then a target copy."""
        config = self.config
        losses = []
        for _ in range(config.pretrain_steps):
            batch = self.buffer.sample(config.batch_size, config.beta_start)
            loss, prios = td_step(self.net, self.target, self.optimizer, batch, config)
            self.buffer.update_priorities(batch.indices, prios)
            losses.append(loss)
        self.target.load_state_dict(self.net.state_dict())
        return losses

    def state_dict(self) -> dict[str, Any]:
        """Networks, optimiser, counters and generators (not the replay buffer: a resumed run
        refills it, as after ``learning_starts``)."""
        return {
            "net": self.net.state_dict(),
            "target": self.target.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "episodes": self.episodes,
            "steps": self.steps,
            "rng": json.dumps(self.rng.bit_generator.state),
            "torch_rng": torch.get_rng_state(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from `state_dict`'s output."""
        self.net.load_state_dict(state["net"])
        self.target.load_state_dict(state["target"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.episodes = int(state["episodes"])
        self.steps = int(state["steps"])
        self.rng.bit_generator.state = json.loads(state["rng"])
        torch.set_rng_state(state["torch_rng"])
