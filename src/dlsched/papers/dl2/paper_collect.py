"""The paper preset's experience (`dlsched.papers.dl2.paper`): the replay ring filled a slot at
a time, DL2's job-aware exploration over a batch, and `Collector`, which runs the policy in
`Dl2BatchedEnv` and records each finished slot."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from dlsched.papers.dl2 import batched_kernels as bk
from dlsched.papers.dl2.algorithm import Batch, Learner, Replay
from dlsched.papers.dl2.batched_env import Dl2BatchedEnv
from dlsched.papers.dl2.batched_kernels import SLOT_S
from dlsched.papers.dl2.network import masked_logits

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
        idx = (self.pos + np.arange(len(actions))) % self.capacity
        self.obs[idx], self.masks[idx], self.actions[idx] = obs, masks, actions
        self.rewards[idx], self.next_obs[idx], self.dones[idx] = reward, next_obs, float(done)
        self.explored[idx] = False if explored is None else explored
        if gamma is not None:
            self.rewards[idx[:-1]], self.next_obs[idx[:-1]] = 0.0, obs[1:]
            self.dones[idx[:-1]], self.discounts[idx[:-1]] = 0.0, 1.0
            self.discounts[idx[-1]] = 0.0 if done else gamma
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


def exploration_fixes(env: Dl2BatchedEnv) -> npt.NDArray[np.bool_]:
    """``(B, 3J + 1)``: legal actions that fix a job in one of DL2's poor states (§4.3) —
    workers without PS, PS without workers, a worker:PS ratio beyond 10 — as
    `Dl2Slot.poor_state_fixes`."""
    counts = env.row_counts()
    w, p = counts[..., 0].astype(np.float64), counts[..., 1].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        add_ps = ((w > 0) & (p == 0)) | ((p > 0) & (w / np.maximum(p, 1) > 10))
        add_w = ~add_ps & (((p > 0) & (w == 0)) | ((w > 0) & (p / np.maximum(w, 1) > 10)))
    fixes = np.zeros_like(env.mask)
    J = env.shape.J
    fixes[:, 0 : 3 * J : 3] = add_w
    fixes[:, 1 : 3 * J : 3] = add_ps
    return fixes & env.mask


class Collector:
    """Runs the policy in `Dl2BatchedEnv` and fills the replay a slot at a time (``reward``:
    see `PaperSpec`)."""

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
        self.gen = torch.Generator(device=env.device).manual_seed(seed)
        env.reset()
        self.slot_before = env.before.copy()  # each job's work done when its slot began
        self.staged: list[list[tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_], int, bool]]]
        self.staged = [[] for _ in range(env.num_envs)]
        self.skip = (
            np.random.default_rng(seed + 7).integers(0, stagger_slots + 1, size=env.num_envs)
            if stagger_slots
            else np.zeros(env.num_envs, dtype=np.int64)
        )
        self.slots = 0
        self.episodes = 0
        self.returns: list[float] = []
        self.episode_jct: list[float] = []
        self._ret = np.zeros(env.num_envs)
        self._jobs: list[list[int]] = [[] for _ in range(env.num_envs)]
        self._job_s = np.zeros(env.num_envs)

    def act(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """The policy's sampled actions, some replaced by the job-aware exploration rule; and
        which were replaced."""
        env, cfg = self.env, self.learner.cfg
        obs, mask = env.tensors()
        with torch.inference_mode():
            logits = masked_logits(self.learner.policy(obs), mask)
            actions = torch.multinomial(torch.softmax(logits, 1), 1, generator=self.gen)[:, 0]
        out = actions.cpu().numpy()
        use = np.zeros(env.num_envs, dtype=bool)
        if cfg.exploration:
            fixes = exploration_fixes(env)
            use = fixes.any(axis=1) & (self.rng.random(env.num_envs) < cfg.epsilon)
            if use.any():
                keys = np.where(fixes[use], self.rng.random(fixes[use].shape), -1.0)
                out[use] = keys.argmax(axis=1)
        return out, use

    def step(self) -> int:
        """One action in every environment; returns the slots that ended and were recorded."""
        env = self.env
        obs, mask = env.obs.copy(), env.mask.copy()
        actions, explored = self.act()
        J = env.shape.J
        jobs = np.where(
            actions < 3 * J,
            np.take_along_axis(env.row_job, np.minimum(actions // 3, J - 1)[:, None], 1)[:, 0],
            -1,
        )  # the job each action gives a task to (-1: void), before the step moves the rows
        _, _, rewards, terminated, truncated, slot_end = env.step(actions)
        if self.jct_reward:
            rewards = -env.job_s / (SLOT_S * env.shape.J)
        for b in range(env.num_envs):
            self.staged[b].append((obs[b], mask[b], int(actions[b]), bool(explored[b])))
            self._jobs[b].append(int(jobs[b]))
        recorded = 0
        self._job_s += np.where(slot_end, env.job_s, 0.0)
        for b in np.flatnonzero(slot_end).tolist():
            rows = self.staged[b]
            if self.skip[b] > 0:  # a staggered start: this slot is not recorded
                self.skip[b] -= 1
                rows.clear()
                continue
            recorded += 1
            slot_reward = float(rewards[b])
            self.replay.add_slot(
                np.stack([r[0] for r in rows]),
                np.stack([r[1] for r in rows]),
                np.array([r[2] for r in rows], dtype=np.int64),
                self._job_rewards(b, slot_reward) if self.job_reward else slot_reward,
                env.obs[b],
                bool(terminated[b]),
                np.array([r[3] for r in rows], dtype=bool),
                self.chain_gamma,
            )
            rows.clear()
            self._ret[b] += rewards[b]
        for b in np.flatnonzero(slot_end).tolist():
            self._jobs[b].clear()
            self.slot_before[b] = env.before[b]
        done = terminated | truncated
        for b in np.flatnonzero(done).tolist():
            self.staged[b].clear()
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

    def _job_rewards(self, b: int, slot_reward: float) -> npt.NDArray[np.float64]:
        """``reward="job"`` (the authors' code's ``TS_REWARD_PLUS_JOB_REWARD``, not the paper's):
        each action of the slot just ended gets the share of its job's epochs trained in the
        slot (Σ over the slot's jobs = the paper's slot reward); a void action the slot reward
        over the jobs that progressed."""
        env, jobs = self.env, np.asarray(self._jobs[b], dtype=np.int64)
        finished = env.status[b] == bk.FINISHED
        done_now = np.where(finished, env.total[b], env.before[b])
        share = (done_now - self.slot_before[b]) / np.maximum(env.total[b], 1e-12)
        share = np.clip(share, 0.0, None)
        progressed = int((share[np.unique(jobs[jobs >= 0])] > 0).sum()) if (jobs >= 0).any() else 0
        void = slot_reward / max(progressed, 1)
        return np.where(jobs >= 0, share[np.maximum(jobs, 0)], void)
