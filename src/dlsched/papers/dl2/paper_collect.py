"""The paper preset's experience (`dlsched.papers.dl2.paper`): the replay ring filled a slot at
a time, DL2's job-aware exploration over a batch, and `Collector`, which runs the policy in
`Dl2BatchedEnv` and records each finished slot."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from torch import nn

from dlsched.papers.dl2 import batched_kernels as bk
from dlsched.papers.dl2.algorithm import Batch, Learner, Replay
from dlsched.papers.dl2.batched_env import Dl2BatchedEnv
from dlsched.papers.dl2.batched_kernels import SLOT_S
from dlsched.papers.dl2.sample_kernels import choose_actions, poor_fixes

STAGGER_SLOTS = 400
"""Most slots an environment runs unrecorded before its first recorded slot (`PaperSpec.stagger`;
a 200-job DL2 trace lasts about 420–530 slots)."""


class SlotReplay(Replay):
    """Experience replay ring (§4.3) filled a slot at a time (arrays, no per-sample Python),
    also recording which actions the exploration rule chose and per-sample discounts."""

    def __init__(self, capacity: int, obs_dim: int, num_actions: int) -> None:
        super().__init__(capacity, obs_dim, num_actions)
        self.explored = np.zeros(capacity, dtype=bool)
        self.discounts = np.zeros(capacity, dtype=np.float32)

    def add_slot(
        self,
        obs: npt.NDArray[np.float32],
        masks: npt.NDArray[np.bool_],
        actions: npt.NDArray[np.int64],
        reward: float | npt.NDArray[np.float64],
        next_obs: npt.NDArray[np.float32],
        done: bool,
        explored: npt.NDArray[np.bool_] | None = None,
        gamma: float | None = None,
    ) -> None:
        """One slot's samples: every action gets the slot's reward (or, an array, its own) and
        next state; with ``gamma`` (`PaperSpec.slot_td` ``"chain"``) an action inside the slot
        gets instead the slot's next state, no reward and discount 1, the last one ``reward``,
        ``next_obs`` and discount ``gamma`` (0 when ``done``)."""
        k, pos = len(actions), self.pos
        idx: slice | npt.NDArray[np.int64]  # a slice where the slot does not wrap (faster)
        head: slice | npt.NDArray[np.int64]
        if pos + k <= self.capacity:
            idx, head, last = slice(pos, pos + k), slice(pos, pos + k - 1), pos + k - 1
        else:
            idx = (pos + np.arange(k)) % self.capacity
            head, last = idx[:-1], int(idx[-1])
        self.obs[idx], self.masks[idx], self.actions[idx] = obs, masks, actions
        self.rewards[idx], self.next_obs[idx], self.dones[idx] = reward, next_obs, float(done)
        self.explored[idx] = False if explored is None else explored
        if gamma is not None:
            self.rewards[head], self.next_obs[head] = 0.0, obs[1:]
            self.dones[head], self.discounts[head] = 0.0, 1.0
            self.discounts[last] = 0.0 if done else gamma
        self.pos = int((self.pos + len(actions)) % self.capacity)
        self.size = min(self.size + len(actions), self.capacity)

    def sample(
        self,
        n: int,
        rng: np.random.Generator,
        device: torch.device,
        *,
        explored_in_pg: bool = True,
        chain: bool = False,
    ) -> Batch:
        """``n`` samples drawn uniformly with replacement; ``explored_in_pg`` False weighs the
        exploration rule's actions 0 in the policy gradient; ``chain``: per-sample discounts
        (`add_slot`'s ``gamma``)."""
        idx = rng.integers(self.size, size=n)

        def take(a: npt.NDArray[Any]) -> torch.Tensor:
            return torch.from_numpy(a[idx]).to(device)

        weights = None if explored_in_pg else take((~self.explored).astype(np.float32))
        return Batch(
            take(self.obs),
            take(self.masks),
            take(self.actions),
            take(self.rewards),
            take(self.next_obs),
            take(self.dones),
            weights,
            take(self.discounts) if chain else None,
        )


def exploration_fixes(
    env: Dl2BatchedEnv, rows: npt.NDArray[np.int64] | None = None
) -> npt.NDArray[np.bool_]:
    """``(B, 3J + 1)`` (or ``(len(rows), 3J + 1)`` for those environments): legal actions that
    fix a job in one of DL2's poor states (§4.3) — workers without PS, PS without workers, a
    worker:PS ratio beyond 10 — as `Dl2Slot.poor_state_fixes`."""
    if rows is None:
        return poor_fixes(env.row_counts(), env.mask)
    return poor_fixes(env.row_counts()[rows], env.mask[rows])


def policy_logits(policy: nn.Module, obs: torch.Tensor) -> torch.Tensor:
    """``policy(obs)``; a plain `nn.Sequential` of `nn.Linear` and `nn.ReLU` layers (the paper's
    MLP) is run layer by layer on the transposed batch, ``h' = W h' + b`` with ``h'`` of shape
    (features, batch): the same products and sums as ``F.linear``, equal up to the matrix
    library's order of summation (``tests/rl/test_dl2_collector.py``), ~15 % less time at 64
    environments (the weights are used as stored, not transposed)."""
    layers = list(policy) if type(policy) is nn.Sequential else []
    if not layers or any(type(m) not in (nn.Linear, nn.ReLU) for m in layers):
        return policy(obs)
    h = obs.t()
    for m in layers:
        if not isinstance(m, nn.Linear):
            h = F.relu(h)
        elif m.bias is None:
            h = torch.mm(m.weight, h)
        else:
            h = torch.addmm(m.bias[:, None], m.weight, h)
    return h.t()  # a view: `choose_actions` reads it strided, a copy costs more


class Collector:
    """Runs the policy in `Dl2BatchedEnv` and fills the replay a slot at a time (``reward``:
    see `PaperSpec`).

    Each action is drawn from the policy's softmax over the legal actions by the inverse CDF
    (`sample_kernels.choose_actions`, uniforms from ``seed``'s NumPy generator): the
    distribution `torch.multinomial` drew from before 2026-11-27, another random stream (runs
    before then are not reproduced bit for bit). The actions of a slot are staged in
    preallocated arrays and copied to the replay when the slot ends (the rows the per-tuple
    staging of ``benchmarks/dl2_collector_before.py`` recorded,
    `tests/rl/test_dl2_collector.py`)."""

    def __init__(
        self,
        env: Dl2BatchedEnv,
        learner: Learner,
        replay: SlotReplay,
        seed: int,
        reward: str = "paper",
        *,
        chain_gamma: float | None = None,
        stagger_slots: int = 0,
    ):
        if reward not in ("paper", "jct", "job"):
            raise ValueError(f"reward must be paper, jct or job, got {reward!r}")
        self.env, self.learner, self.replay = env, learner, replay
        self.jct_reward = reward == "jct"
        self.job_reward = reward == "job"
        self.chain_gamma = chain_gamma
        self.rng = np.random.default_rng(seed)
        env.reset()
        B = env.num_envs
        self.slot_before = env.before.copy()  # each job's work done when its slot began
        self.skip = (
            np.random.default_rng(seed + 7).integers(0, stagger_slots + 1, size=B)
            if stagger_slots
            else np.zeros(B, dtype=np.int64)
        )
        self.slots = 0
        self.episodes = 0
        self.returns: list[float] = []
        self.episode_jct: list[float] = []
        self._ret = np.zeros(B)
        self._job_s = np.zeros(B)
        self._rows = np.arange(B)
        self.staged = np.zeros(B, dtype=np.int64)
        """Actions staged so far in each environment's current slot."""
        shape = env.shape
        self._obs = np.zeros((B, 64, shape.obs_dim), dtype=np.float32)
        self._masks = np.zeros((B, 64, shape.num_actions), dtype=bool)
        self._actions = np.zeros((B, 64), dtype=np.int64)
        self._explored = np.zeros((B, 64), dtype=bool)
        self._jobs = np.zeros((B, 64), dtype=np.int64)

    def _grow(self) -> None:
        """Twice the staging arrays' length of a slot (the staged actions kept)."""

        def twice(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
            out = np.zeros((a.shape[0], 2 * a.shape[1], *a.shape[2:]), dtype=a.dtype)
            out[:, : a.shape[1]] = a
            return out

        self._obs, self._masks = twice(self._obs), twice(self._masks)
        self._actions, self._explored = twice(self._actions), twice(self._explored)
        self._jobs = twice(self._jobs)

    def act(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """The policy's sampled actions, some replaced by the job-aware exploration rule
        (`dlsched.papers.dl2.sample_kernels`); and which were replaced."""
        env, cfg = self.env, self.learner.cfg
        u = self.rng.random((3, env.num_envs))
        with torch.inference_mode():
            obs = torch.from_numpy(env.obs).to(env.device)
            logits = policy_logits(self.learner.policy, obs).cpu().numpy()
        out = np.empty(env.num_envs, dtype=np.int64)
        use = np.empty(env.num_envs, dtype=bool)
        epsilon = cfg.epsilon if cfg.exploration else 0.0
        choose_actions(logits, u, epsilon, env.rows, env.mask, out, use)
        return out, use

    def step(self) -> int:
        """One action in every environment; returns the slots that ended and were recorded."""
        env, n, rows = self.env, self.staged, self._rows
        if int(n.max()) >= self._actions.shape[1]:
            self._grow()
        self._obs[rows, n] = env.obs
        self._masks[rows, n] = env.mask
        actions, explored = self.act()
        self._actions[rows, n] = actions
        self._explored[rows, n] = explored
        if self.job_reward:  # the job each action gives a task to (-1: void), before the step
            J = env.shape.J
            job = env.row_job[rows, np.minimum(actions // 3, J - 1)]
            self._jobs[rows, n] = np.where(actions < 3 * J, job, -1)
        n += 1
        _, _, rewards, terminated, truncated, slot_end = env.step(actions)
        if self.jct_reward:
            rewards = -env.job_s / (SLOT_S * env.shape.J)
        recorded = 0
        ended = np.flatnonzero(slot_end)
        self._job_s[ended] += env.job_s[ended]
        for b in ended.tolist():
            k = int(n[b])
            n[b] = 0
            if self.skip[b] > 0:  # a staggered start: this slot is not recorded
                self.skip[b] -= 1
                continue
            recorded += 1
            slot_reward = float(rewards[b])
            self.replay.add_slot(
                self._obs[b, :k],
                self._masks[b, :k],
                self._actions[b, :k],
                self._job_rewards(b, k, slot_reward) if self.job_reward else slot_reward,
                env.obs[b],
                bool(terminated[b]),
                self._explored[b, :k],
                self.chain_gamma,
            )
            self._ret[b] += rewards[b]
        self.slot_before[ended] = env.before[ended]
        done = terminated | truncated
        for b in np.flatnonzero(done).tolist():
            n[b] = 0
            self.returns.append(float(self._ret[b]))
            if terminated[b]:  # every job done: the job-seconds' sum is the trace's total JCT
                self.episode_jct.append(self._job_s[b] / np.isfinite(env.submit[b]).sum())
            self._ret[b] = self._job_s[b] = 0.0
            self.episodes += 1
        if done.any():
            restarted = env.reset_done()
            self.slot_before[restarted] = env.before[restarted]
        self.slots += recorded
        return recorded

    def _job_rewards(self, b: int, k: int, slot_reward: float) -> npt.NDArray[np.float64]:
        """``reward="job"`` (the authors' code's ``TS_REWARD_PLUS_JOB_REWARD``, not the paper's):
        each of the ``k`` actions of the slot just ended gets the share of its job's epochs
        trained in the slot (Σ over the slot's jobs = the paper's slot reward); a void action
        the slot reward over the jobs that progressed."""
        env, jobs = self.env, self._jobs[b, :k]
        finished = env.status[b] == bk.FINISHED
        done_now = np.where(finished, env.total[b], env.before[b])
        share = (done_now - self.slot_before[b]) / np.maximum(env.total[b], 1e-12)
        share = np.clip(share, 0.0, None)
        progressed = int((share[np.unique(jobs[jobs >= 0])] > 0).sum()) if (jobs >= 0).any() else 0
        void = slot_reward / max(progressed, 1)
        return np.where(jobs >= 0, share[np.maximum(jobs, 0)], void)
