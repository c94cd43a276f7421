"""``dlsched train sched2 --paper``: SCED²'s own method at the paper's scale of experience.

SCED² (§III, §IV-A): state = remaining time of every GPU (N × M) + for each of the first J = 10
waiting jobs in arrival order its k = 4 profiled times, GPUs and waiting time + 4 statistics of
the other waiting jobs; J + 1 actions (a job, or φ), each picked job placed by packing; reward =
the picked job's execution effectiveness (Eq. 2); the shared-weight per-server Q-network
(Eq. 3–5, `Sched2QNet`); DQN with ε-greedy exploration and proportional prioritized replay;
15 servers × 8 GPUs, episodes of 1,000-job traces, 2,400 episodes. No demonstrations.

Experience comes from `BatchedSched2Env` (``num_envs`` traces stepped at once; per seed the same
trajectories as `Sched2Env`). One loop, CleanRL style: act ε-greedily on all episodes with one
forward pass, store the ``B`` transitions, take ``updates_per_step`` double-DQN gradient steps
on prioritized batches, copy the target network every ``target_update`` gradient steps, restart
finished episodes on fresh trace seeds, evaluate the greedy policy on the validation traces
every ``eval_every`` episodes and keep the best network by the paper's objective (validation
average execution effectiveness). Every choice the paper leaves open is a field of
`PaperConfig`; those that depart from the paper are listed in the README's deviation table.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from dlsched.papers.sched2.algorithm import Sched2QNet
from dlsched.papers.sched2.batched_env import BatchedSched2Env, resolve_device
from dlsched.papers.sched2.replay import ReplayBatch, VectorReplay
from dlsched.rl.checkpoint import PolicyCard, save_checkpoint

log = logging.getLogger(__name__)

PAPER_VALIDATION_SEEDS = tuple(range(90_001, 90_009))
"""Validation traces (held out from training and from the test seeds 100001-100030)."""


@dataclass
class PaperConfig:
    """Hyper-parameters of ``train sched2 --paper`` (SCED² leaves all numbers but J, k, the
    cluster, the trace length and the episode count open; each is documented here)."""

    seed: int = 0
    """Seeds torch, NumPy and the training trace draws."""
    episodes: int = 2400
    """Training episodes, each a fresh 1,000-job trace (SCED² §IV-A: 2,400)."""
    time_budget_s: float | None = 3600.0
    """Stop after this many wall-clock seconds (None: run every episode)."""
    num_envs: int = 128
    """Episodes stepped at once by the batched environment."""
    load: float = 1.8
    """Arrival-rate multiplier of the ``sched2`` traces."""
    num_jobs: int = 1000
    """Jobs per trace (SCED² §IV-A)."""
    gamma: float = 0.99
    """Discount per action."""
    reward_scale: float = 0.01
    """Rewards are multiplied by this in the loss (1 − γ: Q-values of order 1, not 1/(1 − γ));
    a constant factor, so the greedy policy it defines is the same."""
    lr: float = 1e-4
    """Adam learning rate."""
    batch_size: int = 256
    """Transitions per gradient step."""
    updates_per_step: int = 1
    """Gradient steps per batched environment step (``num_envs`` transitions)."""
    buffer_size: int = 400_000
    """Replay capacity, transitions."""
    learning_starts: int = 20_000
    """Transitions stored before the first gradient step."""
    target_update: int = 500
    """Gradient steps between copies of the online network into the target network."""
    eps_start: float = 1.0
    """Initial ε of ε-greedy (uniform over legal actions)."""
    eps_end: float = 0.05
    """Final ε."""
    eps_decay_episodes: int = 600
    """Episodes over which ε decays linearly."""
    alpha: float = 0.6
    """Prioritization exponent."""
    beta_start: float = 0.4
    """Initial importance-sampling exponent, annealed linearly to 1 over the episodes."""
    prio_eps: float = 1e-3
    """Added to |TD error| so every transition keeps a chance."""
    grad_clip: float = 10.0
    """Max gradient norm."""
    server_hidden: int = 32
    """Width of the shared per-server encoder's hidden layer (w_shared)."""
    server_out: int = 16
    """Features per server (F_i)."""
    job_hidden: int = 128
    """Features of the job/statistics encoder (G, w_1)."""
    hidden: int = 256
    """Width of the head's hidden layer (w_2)."""
    eval_every: int = 100
    """Episodes between greedy validation runs."""
    threads: int = 1
    """torch threads (the shared machine has 2 cores)."""
    device: str = "auto"
    """``auto``, ``cpu`` (NumPy environment) or ``cuda`` (PyTorch environment and network)."""


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

    def step(self, batch: ReplayBatch) -> dict[str, Any]:
        """One gradient step; loss, Q statistics, |TD| and the new priorities."""
        c, dev = self.config, self.device
        obs = torch.as_tensor(batch.obs, device=dev)
        nxt = torch.as_tensor(batch.next_obs, device=dev)
        masks = torch.as_tensor(batch.next_masks, device=dev)
        actions = torch.as_tensor(batch.actions, device=dev)
        rewards = torch.as_tensor(batch.rewards, device=dev) * c.reward_scale
        dones = torch.as_tensor(batch.dones, device=dev)
        weights = torch.as_tensor(batch.weights, device=dev)
        with torch.no_grad():
            best = self.net(nxt).masked_fill(~masks, float("-inf")).argmax(dim=1, keepdim=True)
            next_value = self.target(nxt).gather(1, best).squeeze(1) * (1.0 - dones)
            y = rewards + c.gamma * next_value
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
                      config.hidden)  # fmt: skip


def train_paper(
    config: PaperConfig,
    *,
    log_csv: str | Path | None = None,
    on_episode: Callable[[PaperLog], None] | None = None,
    on_best: Callable[[Sched2QNet, dict[str, float], PaperLog], None] | None = None,
) -> tuple[Sched2QNet, list[PaperLog], dict[str, float]]:
    """Train SCED²'s DQN as the paper does (module docstring); the best network by validation
    effectiveness, the per-episode log and that network's validation metrics.

    This loop is longer than 80 lines: acting, storing, learning, restarting episodes and
    logging read top to bottom as one algorithm (CleanRL style).
    """
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    device = resolve_device(config.device)
    options: dict[str, Any] = {"num_jobs": config.num_jobs, "load": config.load}
    env = BatchedSched2Env(config.num_envs, device=device, **options)
    shape = env.shape
    learner = DQNLearner(make_paper_net(shape, config), config, device)
    replay = VectorReplay(
        config.buffer_size, shape.obs_dim, shape.num_actions, config.alpha, config.seed
    )
    to_np = env.ops.numpy

    def fresh_seeds(n: int) -> list[int]:
        return [int(s) for s in rng.integers(0, 2**31 - 1, size=n)]

    obs, masks = env.reset(fresh_seeds(config.num_envs))
    history: list[PaperLog] = []
    best_state: dict[str, torch.Tensor] | None = None
    best: dict[str, float] = {}
    stats: list[dict[str, Any]] = []
    episodes = transitions = 0
    wall0 = time.perf_counter()
    writer = handle = None
    with contextlib.ExitStack() as stack:
        if log_csv is not None:
            Path(log_csv).parent.mkdir(parents=True, exist_ok=True)
            handle = stack.enter_context(Path(log_csv).open("w", newline=""))
            writer = csv.DictWriter(handle, fieldnames=list(PaperLog.__dataclass_fields__))
            writer.writeheader()
        while episodes < config.episodes:
            eps = config.eps_start + min(1.0, episodes / max(1, config.eps_decay_episodes)) * (
                config.eps_end - config.eps_start
            )
            o = torch.as_tensor(obs, device=device)
            m = torch.as_tensor(masks, device=device)
            actions = greedy(learner.net, o, m).cpu().numpy()
            masks_np = to_np(masks)
            explore = rng.random(config.num_envs) < eps
            uniform = (rng.random(masks_np.shape) * masks_np).argmax(axis=1)
            actions = np.where(explore, uniform, actions)
            next_obs, rewards, ended, next_masks, info = env.step(actions)
            replay.add(
                to_np(obs), actions, to_np(rewards), to_np(next_obs), to_np(next_masks),
                to_np(ended),
            )  # fmt: skip
            transitions += config.num_envs
            obs, masks = next_obs, next_masks
            if len(replay) >= config.learning_starts:
                beta = config.beta_start + min(1.0, episodes / config.episodes) * (
                    1.0 - config.beta_start
                )
                for _ in range(config.updates_per_step):
                    batch = replay.sample(config.batch_size, beta)
                    out = learner.step(batch)
                    replay.update_priorities(batch.indices, out.pop("priorities"))
                    stats.append(out)
            finished = info["episodes"]
            if not finished:
                continue
            obs, masks = env.reset_some([i for i, _ in finished], fresh_seeds(len(finished)))
            for _, metrics in finished:
                episodes += 1
                evaluated: dict[str, float] = {}
                out_of_time = (
                    config.time_budget_s is not None
                    and time.perf_counter() - wall0 > config.time_budget_s
                )
                if episodes % config.eval_every == 0 or episodes >= config.episodes or out_of_time:
                    evaluated = evaluate_batched(
                        learner.net, PAPER_VALIDATION_SEEDS, device=device, **options
                    )
                mean = {k: float(np.mean([s[k] for s in stats])) if stats else float("nan")
                        for k in ("loss", "q_mean", "q_gap", "td_abs", "grad_norm")}  # fmt: skip
                stats = []
                row = PaperLog(
                    episode=episodes,
                    transitions=transitions,
                    grad_steps=learner.steps,
                    epsilon=eps,
                    train_effectiveness=metrics["avg_effectiveness"],
                    train_avg_jct_s=metrics["avg_jct_s"],
                    train_makespan_s=metrics["makespan_s"],
                    **mean,
                    eval_effectiveness=evaluated.get("avg_effectiveness", float("nan")),
                    eval_avg_jct_s=evaluated.get("avg_jct_s", float("nan")),
                    eval_makespan_s=evaluated.get("makespan_s", float("nan")),
                    wall_s=time.perf_counter() - wall0,
                )
                history.append(row)
                if writer is not None and handle is not None:
                    writer.writerow(asdict(row))
                    handle.flush()
                if on_episode is not None:
                    on_episode(row)
                if evaluated and evaluated["avg_effectiveness"] > best.get(
                    "avg_effectiveness", -1.0
                ):
                    best = evaluated
                    best_state = copy.deepcopy(learner.net.state_dict())
                    if on_best is not None:
                        on_best(learner.net, best, row)
                if out_of_time:
                    log.info("sched2 --paper: time budget reached after %d episodes", episodes)
                    episodes = config.episodes
                    break
    if best_state is not None:
        learner.net.load_state_dict(best_state)
    return learner.net.cpu(), history, best


def save_paper_policy(
    directory: str | Path,
    net: Sched2QNet,
    config: PaperConfig,
    *,
    validation: dict[str, float],
    row: PaperLog | None,
    notes: str,
) -> Path:
    """Write the network with a card (`dlsched.rl.checkpoint`); the card's hyper-parameters
    carry the network widths `dlsched.papers.sched2.policy.load_policy` reads."""
    card = PolicyCard(
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
        steps={
            "env_steps": row.transitions if row else 0,
            "episodes": row.episode if row else 0,
            "grad_steps": row.grad_steps if row else 0,
        },
        validation=validation,
        hyperparams={"policy": "qnet", "method": "paper", **asdict(config)},
        notes=notes,
        trained_setting={"workload": "sched2", "params": {"load": config.load}},
    )
    return save_checkpoint(directory, {k: v.cpu() for k, v in net.state_dict().items()}, card)


def run_paper(
    out_dir: str | Path,
    config: PaperConfig,
    *,
    command: str = "",
    on_episode: Callable[[PaperLog], None] | None = None,
) -> tuple[Path, dict[str, float]]:
    """Train (`train_paper`) and keep the best network by validation in ``out_dir``
    (``policy.pt``, ``card.json`` saying how it was made, ``train_log.csv``), written again at
    every improvement so that a stopped run leaves its best policy."""
    out = Path(out_dir)
    log_csv = out / "train_log.csv"

    def notes(row: PaperLog | None, wall_s: float) -> str:
        done = f"{row.episode} episodes" if row else "no episode"
        return (
            "SCED² paper method (train sched2 --paper): DQN with epsilon-greedy and proportional "
            "prioritized replay, double-DQN targets, the shared-weight per-server Q-network "
            "(Eq. 3-5), the paper's state (N x M GPU remaining times, k=4 profiles + GPUs + "
            "waiting time for the first J=10 waiting jobs in arrival order, 4 statistics), J+1 "
            "actions with packing placement, reward = execution effectiveness of each picked "
            "job (Eq. 2); no demonstrations, no teacher. "
            f"Experience: {config.num_envs} batched episodes at once (BatchedSched2Env), fresh "
            f"sched2 traces of {config.num_jobs} jobs at load {config.load}; this network is the "
            f"best greedy validation effectiveness (seeds {PAPER_VALIDATION_SEEDS[0]}-"
            f"{PAPER_VALIDATION_SEEDS[-1]}) seen after {done} "
            f"({row.transitions if row else 0} agent steps, {row.grad_steps if row else 0} "
            f"gradient steps, {wall_s:.0f} s wall on the shared 2-core CPU machine). "
            "Deviations from the paper: see README 'SCED² paper preset'."
            + (f" Command: {command}" if command else "")
        )

    def save(net: Sched2QNet, metrics: dict[str, float], row: PaperLog) -> None:
        save_paper_policy(
            out, net, config, validation=metrics, row=row, notes=notes(row, row.wall_s)
        )

    net, history, best = train_paper(config, log_csv=log_csv, on_episode=on_episode, on_best=save)
    if not best:  # never evaluated (a run shorter than eval_every): keep the last network
        last = history[-1] if history else None
        save_paper_policy(out, net, config, validation={}, row=last,
                          notes=notes(last, last.wall_s if last else 0.0))  # fmt: skip
    return out, best
