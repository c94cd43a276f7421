"""The DL2 paper preset's collector as it was before the collector was engineered (issue 29,
helper dl2col10): `torch.multinomial` sampling, rows staged per environment as Python tuples
and `np.stack`-ed at each slot's end. Kept frozen as the "before" of `env_steps.py --only dl2`
and as the reference the new `paper_collect.Collector` records the same replay rows as
(`tests/rl/test_dl2_collector.py`). Not used by any trainer."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch

from dlsched.papers.dl2 import batched_kernels as bk
from dlsched.papers.dl2.algorithm import Learner
from dlsched.papers.dl2.batched_env import Dl2BatchedEnv
from dlsched.papers.dl2.batched_kernels import SLOT_S
from dlsched.papers.dl2.network import masked_logits
from dlsched.papers.dl2.paper_collect import SlotReplay, exploration_fixes


class StackingCollector:
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
