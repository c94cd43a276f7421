"""``dlsched train sched2 --paper``: SCED²'s own method at the paper's scale of experience.

SCED² (§III, §IV-A): state = remaining time of every GPU (N × M) + for each of the first J = 10
waiting jobs in arrival order its k = 4 profiled times, GPUs and waiting time + 4 statistics of
the other waiting jobs; J + 1 actions (a job, or φ), each picked job placed by packing; reward =
the picked job's execution effectiveness (Eq. 2); the shared-weight per-server Q-network
(Eq. 3–5, `Sched2QNet`); DQN with ε-greedy exploration and proportional prioritized replay;
15 servers × 8 GPUs, episodes of 1,000-job traces, 2,400 episodes. No demonstrations.

Experience comes from `BatchedSched2Env` (``num_envs`` traces stepped at once; per seed the same
trajectories as `Sched2Env`). `PaperLearner` is the algorithm, CleanRL style: act ε-greedily on
all episodes with one forward pass, store the ``B`` transitions, take ``updates_per_step``
double-DQN gradient steps on prioritized batches (`DQNLearner`, target network copied every
``target_update`` gradient steps), restart finished episodes on fresh trace seeds.
`dlsched.rl.training.train` runs it (one step per episode): budget, greedy validation every
``eval_every`` episodes, the best network by the paper's objective (validation average execution
effectiveness), log, resume. Every choice the paper leaves open is a field of
`PaperConfig`; those that depart from the paper are listed in the README's deviation table.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from dlsched.papers.sched2.algorithm import Sched2QNet
from dlsched.papers.sched2.batched_env import BatchedSched2Env, resolve_device
from dlsched.papers.sched2.paper_config import (
    NEW_PRIORITIES,
    PAPER_VALIDATION_SEEDS,
    PaperConfig,
)
from dlsched.papers.sched2.replay import ReplayBatch, VectorReplay
from dlsched.rl.checkpoint import PolicyCard
from dlsched.rl.training import Progress, RunResult, RunSettings, Validation, every, train

log = logging.getLogger(__name__)


@dataclass
class PaperLog:
    """One row of the training log, written when an episode ends (units in the names)."""

    episode: int
    transitions: int
    grad_steps: int
    epsilon: float
    train_effectiveness: float
    train_avg_jct_s: float
    train_makespan_s: float
    loss: float
    q_mean: float
    q_gap: float
    td_abs: float
    grad_norm: float
    replay_age: float
    """Mean over the sampled transitions of the transitions added after them."""
    replay_fresh: float
    """Share of the sampled transitions drawn for the first time."""
    newest_weight: float
    """The newest ``num_envs`` transitions' mean priority^α over all stored ones' (how much
    more often each is drawn than the average)."""
    eval_effectiveness: float
    eval_avg_jct_s: float
    eval_makespan_s: float
    wall_s: float


def greedy(net: nn.Module, obs: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Arg-max of the Q-values over legal actions, per row."""
    with torch.no_grad():
        return net(obs).masked_fill(~masks, float("-inf")).argmax(dim=1)


def evaluate_batched(
    net: nn.Module, seeds: tuple[int, ...], *, device: str = "cpu", **options: Any
) -> dict[str, float]:
    """The greedy policy on the traces of ``seeds``, all at once; mean metrics.

    The batched environment gives the same trajectories as the simulator (`BatchedSched2Env`),
    so these are the numbers ``dlsched simulate`` would report for the same network.
    """
    env = BatchedSched2Env(len(seeds), device=device, **options)
    obs, masks = env.reset(list(seeds))
    rows: list[dict[str, float]] = []
    torch_dev = next(net.parameters()).device
    while len(rows) < len(seeds):
        o = torch.as_tensor(obs, device=torch_dev)
        m = torch.as_tensor(masks, device=torch_dev)
        obs, _, _, masks, info = env.step(greedy(net, o, m))
        rows.extend(metrics for _, metrics in info["episodes"])
    keys = ("avg_effectiveness", "avg_jct_s", "makespan_s")
    return {k: float(np.mean([r[k] for r in rows])) for k in keys}


class DQNLearner:
    """The online and target Q-networks, their optimizer and one double-DQN step."""

    def __init__(self, net: Sched2QNet, config: PaperConfig, device: str) -> None:
        self.config = config
        self.device = device
        self.net = net.to(device)
        self.target = copy.deepcopy(self.net)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=config.lr)
        self.steps = 0

    def targets(self, rewards: Any, next_obs: Any, next_masks: Any, dones: Any,
                elapsed_s: Any = None) -> torch.Tensor:  # fmt: skip
        """Double-DQN targets ``r·scale + γ·Q_target(s', argmax_a Q(s', a))`` (0 past the end;
        γ^(Δt / discount_time_s) with ``elapsed_s`` = Δt when ``discount_time_s`` > 0)."""
        c, dev = self.config, self.device
        gamma: Any = c.gamma
        if c.discount_time_s > 0:
            dt = torch.as_tensor(elapsed_s, device=dev, dtype=torch.float32)
            gamma = c.gamma ** (dt / c.discount_time_s)
        nxt = torch.as_tensor(next_obs, device=dev)
        masks = torch.as_tensor(next_masks, device=dev)
        done = torch.as_tensor(dones, device=dev, dtype=torch.float32)
        with torch.no_grad():
            best = self.net(nxt).masked_fill(~masks, float("-inf")).argmax(dim=1, keepdim=True)
            next_value = self.target(nxt).gather(1, best).squeeze(1) * (1.0 - done)
            reward = torch.as_tensor(rewards, device=dev, dtype=torch.float32)
            return reward * c.reward_scale + gamma * next_value

    def td_abs(self, obs: Any, actions: Any, rewards: Any, next_obs: Any, next_masks: Any,
               dones: Any, elapsed_s: Any = None) -> npt.NDArray[np.float64]:  # fmt: skip
        """|TD error| of transitions under the current networks (their replay priority)."""
        y = self.targets(rewards, next_obs, next_masks, dones, elapsed_s)
        with torch.no_grad():
            q = self.net(torch.as_tensor(obs, device=self.device))
            taken = torch.as_tensor(actions, device=self.device).unsqueeze(1)
            td = (y - q.gather(1, taken).squeeze(1)).abs()
        return td.cpu().numpy().astype(np.float64)

    def step(self, batch: ReplayBatch) -> dict[str, Any]:
        """One gradient step; loss, Q statistics, |TD| and the new priorities."""
        c, dev = self.config, self.device
        obs = torch.as_tensor(batch.obs, device=dev)
        actions = torch.as_tensor(batch.actions, device=dev)
        weights = torch.as_tensor(batch.weights, device=dev)
        y = self.targets(batch.rewards, batch.next_obs, batch.next_masks, batch.dones,
                         batch.elapsed_s)  # fmt: skip
        q_all = self.net(obs)
        q = q_all.gather(1, actions.unsqueeze(1)).squeeze(1)
        loss = (weights * nn.functional.smooth_l1_loss(q, y, reduction="none")).mean()
        self.optimizer.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(self.net.parameters(), c.grad_clip)
        self.optimizer.step()
        self.steps += 1
        if self.steps % c.target_update == 0:
            self.target.load_state_dict(self.net.state_dict())
        td = (y - q).detach().abs()
        top2 = q_all.detach().topk(2, dim=1).values
        return {
            "loss": float(loss.item()),
            "q_mean": float(q.detach().mean().item()),
            "q_gap": float((top2[:, 0] - top2[:, 1]).mean().item()),
            "td_abs": float(td.mean().item()),
            "grad_norm": float(norm.item()),
            "priorities": td.cpu().numpy().astype(np.float64) + c.prio_eps,
        }


def make_paper_net(shape: Any, config: PaperConfig) -> Sched2QNet:
    """SCED²'s shared-weight Q-network (Eq. 3–5) with ``config``'s widths."""
    return Sched2QNet(shape, config.server_hidden, config.server_out, config.job_hidden,
                      config.hidden, config.dueling)  # fmt: skip


class PaperLearner:
    """SCED²'s DQN as a `dlsched.rl.training.Learner`: one `step` is one finished training
    episode (its log row); `validate` runs the greedy policy on the validation traces.

    The loop CleanRL-style: act ε-greedily on all ``num_envs`` episodes with one forward pass,
    store their transitions, take ``updates_per_step`` gradient steps, restart finished
    episodes on fresh trace seeds. Several episodes can end in one batched step; their rows
    wait in a queue and are handed out one `step` at a time (counters as when they ended).
    A resumed run restores the networks, optimizer, counters and generator; the replay buffer
    and the episodes in flight start afresh.
    """

    columns = tuple(PaperLog.__dataclass_fields__)

    def __init__(self, config: PaperConfig, command: str = "") -> None:
        torch.set_num_threads(config.threads)
        self.command = command
        torch.manual_seed(config.seed)
        self.config = config
        self.rng = np.random.default_rng(config.seed)
        self.device = resolve_device(config.device)
        self.options: dict[str, Any] = {"num_jobs": config.num_jobs, "load": config.load,
                                        "hold_mask": config.hold_mask}  # fmt: skip
        self.env = BatchedSched2Env(
            config.num_envs, device=self.device, reward=config.reward, **self.options
        )
        shape = self.env.shape
        self.dqn = DQNLearner(make_paper_net(shape, config), config, self.device)
        if config.new_priority not in NEW_PRIORITIES:
            raise ValueError(f"sched2 --paper: new_priority must be one of {NEW_PRIORITIES}, "
                             f"got {config.new_priority!r}")  # fmt: skip
        self.replay = VectorReplay(
            config.buffer_size, shape.obs_dim, shape.num_actions, config.alpha, config.seed
        )
        self.obs, self.masks = self.env.reset(self._fresh_seeds(config.num_envs))
        self.episodes = 0  # finished training episodes
        self.transitions = 0
        self.stats: list[dict[str, Any]] = []
        self.ready: list[dict[str, object]] = []  # rows of finished episodes not yet handed out
        self.last_validation: dict[str, float] = {}
        self.last_row: dict[str, object] = {}

    def _fresh_seeds(self, n: int) -> list[int]:
        return [int(s) for s in self.rng.integers(0, 2**31 - 1, size=n)]

    def _epsilon(self) -> float:
        c = self.config
        frac = min(1.0, self.episodes / max(1, c.eps_decay_episodes))
        return c.eps_start + frac * (c.eps_end - c.eps_start)

    def _batched_step(self) -> None:
        """One action in every episode, its transitions stored, the gradient steps taken."""
        c, env, to_np = self.config, self.env, self.env.ops.numpy
        eps = self._epsilon()
        o = torch.as_tensor(self.obs, device=self.device)
        m = torch.as_tensor(self.masks, device=self.device)
        actions = greedy(self.dqn.net, o, m).cpu().numpy()
        masks_np = to_np(self.masks)
        before_s = to_np(env.now).copy()
        explore = self.rng.random(c.num_envs) < eps
        uniform = (self.rng.random(masks_np.shape) * masks_np).argmax(axis=1)
        actions = np.where(explore, uniform, actions)
        next_obs, rewards, ended, next_masks, info = env.step(actions)
        new = (to_np(self.obs), actions, to_np(rewards), to_np(next_obs), to_np(next_masks),
                 to_np(ended))  # fmt: skip
        elapsed_s = to_np(env.now) - before_s
        td = c.new_priority == "td"
        priorities = self.dqn.td_abs(*new, elapsed_s) + c.prio_eps if td else None
        self.replay.add(*new, priorities=priorities, elapsed_s=elapsed_s)
        self.transitions += c.num_envs
        self.obs, self.masks = next_obs, next_masks
        if len(self.replay) >= c.learning_starts:
            beta = c.beta_start + min(1.0, self.episodes / c.episodes) * (1.0 - c.beta_start)
            for _ in range(c.updates_per_step):
                batch = self.replay.sample(c.batch_size, beta)
                out = self.dqn.step(batch)
                self.replay.update_priorities(batch.indices, out.pop("priorities"))
                out["replay_age"] = float(batch.ages.mean())
                out["replay_fresh"] = float(batch.fresh.mean())
                out["newest_weight"] = self.replay.newest_weight(c.num_envs)
                self.stats.append(out)
        finished = info["episodes"]
        if not finished:
            return
        self.obs, self.masks = env.reset_some(
            [i for i, _ in finished], self._fresh_seeds(len(finished))
        )
        for _, metrics in finished:
            self.episodes += 1
            keys = ("loss", "q_mean", "q_gap", "td_abs", "grad_norm", "replay_age",
                    "replay_fresh", "newest_weight")  # fmt: skip
            mean = {k: float(np.mean([x[k] for x in self.stats])) if self.stats else math.nan
                    for k in keys}  # fmt: skip
            self.stats = []
            self.ready.append(
                {
                    "episode": self.episodes,
                    "transitions": self.transitions,
                    "grad_steps": self.dqn.steps,
                    "epsilon": eps,
                    "train_effectiveness": metrics["avg_effectiveness"],
                    "train_avg_jct_s": metrics["avg_jct_s"],
                    "train_makespan_s": metrics["makespan_s"],
                    **mean,
                }
            )

    # -- the Learner protocol -------------------------------------------------------------

    def step(self) -> dict[str, object]:
        while not self.ready:
            self._batched_step()
        self.last_row = self.ready.pop(0)
        return dict(self.last_row)

    def validate(self) -> Validation:
        # on the CPU: 8 episodes are too few for a GPU to pay its per-step launch costs
        net = copy.deepcopy(self.dqn.net).cpu() if self.device != "cpu" else self.dqn.net
        self.last_validation = evaluate_batched(net, PAPER_VALIDATION_SEEDS, **self.options)
        v = self.last_validation
        return Validation(
            (-v["avg_effectiveness"],),
            {
                "eval_effectiveness": v["avg_effectiveness"],
                "eval_avg_jct_s": v["avg_jct_s"],
                "eval_makespan_s": v["makespan_s"],
            },
        )

    def policy_files(self) -> tuple[dict[str, torch.Tensor], PolicyCard]:
        net = self.dqn.net
        state = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
        card = paper_card(self.config, net, self.last_validation, self.last_row, self.command)
        return state, card

    def state_dict(self) -> dict[str, Any]:
        return {
            "net": self.dqn.net.state_dict(),
            "target": self.dqn.target.state_dict(),
            "optimizer": self.dqn.optimizer.state_dict(),
            "grad_steps": self.dqn.steps,
            "episodes": self.episodes,
            "transitions": self.transitions,
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.dqn.net.load_state_dict(state["net"])
        self.dqn.target.load_state_dict(state["target"])
        self.dqn.optimizer.load_state_dict(state["optimizer"])
        self.dqn.steps = int(state["grad_steps"])
        self.episodes = int(state["episodes"])
        self.transitions = int(state["transitions"])
        self.rng.bit_generator.state = dict(state["rng"])


def paper_card(
    config: PaperConfig,
    net: Sched2QNet,
    validation: dict[str, float],
    row: Mapping[str, object],
    command: str = "",
) -> PolicyCard:
    """The card of a ``--paper`` network: how it was made, in words and numbers; its
    hyper-parameters carry the widths `dlsched.papers.sched2.policy.load_policy` reads."""
    episodes, steps, grads = (int(str(row.get(k, 0))) for k in ("episode", "transitions",
                                                                   "grad_steps"))  # fmt: skip
    reward = (
        "execution effectiveness of each picked job (Eq. 2)"
        if config.reward == "paper"
        else "the same objective paid as it accrues (--reward incremental: the change per step of "
        "the sum over submitted jobs of effectiveness - 1, a waiting job at the best it can "
        f"still reach; a deviation from the paper), gamma {config.gamma}, reward scale "
        f"{config.reward_scale}, target copy every {config.target_update} gradient steps"
    )
    if config.hold_mask == "local":
        reward += (
            "; hold (phi) masked out while a window job fits at its best locality under "
            "packing (--hold-mask local, action masking; a deviation from the paper, whose "
            "agent may hold at any time), in training and when the network schedules"
        )
    if config.dueling:
        reward += (
            "; dueling Q-network head (value + advantage streams, Q = V + A - mean(A), Wang "
            "et al. 2016; --dueling, a deviation: SCED²'s head is one MLP)"
        )
    if config.discount_time_s > 0:
        reward += (
            f"; semi-MDP discounting gamma^(dt / {config.discount_time_s} s) over the simulated "
            "time dt between decisions (--discount-time-s, a deviation: the paper does not say "
            "how it discounts)"
        )
    if config.new_priority == "td":
        reward += (
            "; new transitions enter the replay at their own |TD error| under the current "
            "networks (--replay-priority td, as Ape-X; a deviation from the paper's prioritized "
            "replay, which enters them at the largest priority ever set)"
        )
    notes = (
        (
            "SCED² paper method"
            if config.hold_mask == "none" and not config.dueling and config.discount_time_s == 0
            else "NOT the paper's method"
        )
        + " (train sched2 --paper): DQN with epsilon-greedy and proportional "
        "prioritized replay, double-DQN targets, the shared-weight per-server Q-network "
        "(Eq. 3-5), the paper's state (N x M GPU remaining times, k=4 profiles + GPUs + waiting "
        "time for the first J=10 waiting jobs in arrival order, 4 statistics), J+1 actions with "
        f"packing placement, reward = {reward}; no demonstrations, no teacher. Experience: "
        f"{config.num_envs} episodes at once (BatchedSched2Env), fresh sched2 traces of "
        f"{config.num_jobs} jobs at load {config.load}. This network: the best greedy "
        f"validation effectiveness (seeds {PAPER_VALIDATION_SEEDS[0]}-"
        f"{PAPER_VALIDATION_SEEDS[-1]}) so far, after {episodes} episodes ({steps} agent steps, "
        f"{grads} gradient steps). Deviations from the paper: README, 'SCED² by the paper's "
        "method'." + (f" Command: {command}" if command else "")
    )
    return PolicyCard(
        algorithm="sched2",
        workload="sched2",
        workload_params={
            "load": config.load,
            "num_jobs": config.num_jobs,
            "window_order": "arrival",
            "teacher": "none",
        },
        shapes=net.shape.as_card(),
        seeds={"train": [config.seed], "validation": list(PAPER_VALIDATION_SEEDS)},
        steps={"env_steps": steps, "episodes": episodes, "grad_steps": grads},
        validation=dict(validation),
        hyperparams={"policy": "qnet", "method": "paper", **asdict(config)},
        notes=notes,
        trained_setting={"workload": "sched2", "params": {"load": config.load}},
    )


def train_paper(
    config: PaperConfig,
    out: str | Path,
    *,
    force: bool = False,
    resume: bool = False,
    tensorboard: Path | None = None,
    progress: Progress | None = None,
    command: str = "",
) -> RunResult:
    """``train sched2 --paper``: `PaperLearner` under `dlsched.rl.training.train` — one step
    per episode, validation every ``eval_every`` episodes, the best network by validation
    effectiveness in ``out`` (policy.pt + card.json), train_log.csv, last/."""
    settings = RunSettings(
        out=Path(out),
        steps=config.episodes,
        max_seconds=config.time_budget_s,
        validate_when=every(config.eval_every),
        resume=resume,
        force=force,
        tensorboard=tensorboard,
        step_column="episode",
        name="sched2 --paper",
    )
    return train(lambda _budget: PaperLearner(config, command), settings, progress)
