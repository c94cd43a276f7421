"""Proportional prioritized replay (Schaul et al. 2016, SCED² ref. [12]) with array operations.

``P(i) = p_i^α / Σ p^α``, one draw per equal-mass segment of the priority sum, importance weights
``(N·P(i))^-β`` over their max; a whole batch of transitions is added, sampled and
re-prioritized with NumPy operations over the sum tree's levels: the batched trainer adds ``B``
transitions per step and replays hundreds of thousands.

A new transition enters at ``priorities`` when the caller gives them (``--replay-priority td``:
its |TD error| under the current networks, as Ape-X, Horgan et al. 2018), else at the largest
priority ever set, never below 1.0 (Schaul et al. 2016, Algorithm 1: every transition is then
replayed at least once, soon; `dlsched.papers.sched2.algorithm.DQN`, and ``train sched2
--paper``'s default ``--replay-priority max``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt


class ReplayBatch(NamedTuple):
    """Sampled transitions (NumPy arrays) with their buffer indices and importance weights."""

    obs: npt.NDArray[np.float32]
    actions: npt.NDArray[np.int64]
    rewards: npt.NDArray[np.float32]
    next_obs: npt.NDArray[np.float32]
    next_masks: npt.NDArray[np.bool_]
    dones: npt.NDArray[np.float32]
    weights: npt.NDArray[np.float32]
    indices: npt.NDArray[np.int64]
    ages: npt.NDArray[np.int64]
    """Transitions added after each sampled one (0: the newest)."""
    fresh: npt.NDArray[np.bool_]
    """Whether each sampled transition is drawn for the first time."""
    demos: npt.NDArray[np.float32]
    """1.0 for a teacher's transition (DQfD), else 0.0."""
    elapsed_s: npt.NDArray[np.float32] | None = None
    """Simulated seconds between each transition's decision and the next (0 if not given)."""


class VectorSumTree:
    """A binary sum tree over ``capacity`` leaves, updated and searched a batch at a time."""

    def __init__(self, capacity: int) -> None:
        size = 1
        while size < capacity:
            size *= 2
        self.size = size
        self.tree = np.zeros(2 * size, dtype=np.float64)

    def total(self) -> float:
        return float(self.tree[1])

    def leaves(self, indices: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        return self.tree[indices + self.size]

    def update(self, indices: npt.NDArray[np.int64], values: npt.NDArray[np.float64]) -> None:
        """Set leaves ``indices`` (the last value wins for a repeated index) and their sums."""
        nodes = indices + self.size
        self.tree[nodes] = values
        nodes = np.unique(nodes // 2)
        while nodes[0] >= 1:
            self.tree[nodes] = self.tree[2 * nodes] + self.tree[2 * nodes + 1]
            if nodes[0] == 1:
                break
            nodes = np.unique(nodes // 2)

    def find(self, masses: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
        """Leaf index whose prefix-sum interval holds each mass."""
        nodes = np.ones(len(masses), dtype=np.int64)
        mass = masses.astype(np.float64).copy()
        while nodes[0] < self.size:
            left = 2 * nodes
            left_sum = self.tree[left]
            go_left = (mass < left_sum) | (self.tree[left + 1] <= 0)
            mass = np.where(go_left, mass, mass - left_sum)
            nodes = np.where(go_left, left, left + 1)
        return nodes - self.size


class VectorReplay:
    """Prioritized replay of ``capacity`` transitions (module docstring).

    Args:
        capacity: transitions kept, oldest overwritten.
        obs_dim: observation length.
        num_actions: action count (next-state masks).
        alpha: prioritization exponent (0: uniform).
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
        self.elapsed_s = np.zeros(capacity, dtype=np.float32)
        self.added_at = np.zeros(capacity, dtype=np.int64)  # value of `added` when stored
        self.replayed = np.zeros(capacity, dtype=bool)
        self.tree = VectorSumTree(capacity)
        self.max_priority = 1.0
        self.pos = 0
        self.count = 0
        self.added = 0
        """Transitions added so far."""
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.count

    def add(
        self,
        obs: npt.NDArray[np.float32],
        actions: npt.NDArray[np.int64],
        rewards: npt.NDArray[np.float64],
        next_obs: npt.NDArray[np.float32],
        next_masks: npt.NDArray[np.bool_],
        dones: npt.NDArray[np.bool_],
        priorities: npt.NDArray[np.float64] | None = None,
        demos: npt.NDArray[np.bool_] | None = None,
        elapsed_s: npt.NDArray[np.float64] | None = None,
    ) -> None:
        """Store a batch of transitions at ``priorities`` (before ^α; default the largest
        ever set), ``demos`` flagging a teacher's ones, ``elapsed_s`` the simulated seconds
        to each next decision (default 0)."""
        n = len(actions)
        idx = (self.pos + np.arange(n)) % self.capacity
        self.obs[idx] = obs
        self.actions[idx] = actions
        self.rewards[idx] = rewards
        self.next_obs[idx] = next_obs
        self.next_masks[idx] = next_masks
        self.dones[idx] = dones
        self.demos[idx] = 0.0 if demos is None else demos
        self.elapsed_s[idx] = 0.0 if elapsed_s is None else elapsed_s
        self.added_at[idx] = self.added + np.arange(n)
        self.replayed[idx] = False
        if priorities is None:
            values = np.full(n, self.max_priority**self.alpha)
        else:
            values = np.asarray(priorities, dtype=np.float64) ** self.alpha
        self.tree.update(idx, values)
        self.pos = int((self.pos + n) % self.capacity)
        self.count = min(self.count + n, self.capacity)
        self.added += n

    def newest_weight(self, n: int) -> float:
        """The mean priority^α of the ``n`` newest transitions over all stored ones' (how much
        more often each is drawn than the average transition)."""
        newest = (self.pos - 1 - np.arange(min(n, self.count))) % self.capacity
        return float(self.tree.leaves(newest).mean() / max(self.tree.total() / self.count, 1e-300))

    def sample(self, batch_size: int, beta: float) -> ReplayBatch:
        """``batch_size`` transitions drawn in proportion to priority^α (stratified), with
        importance-sampling weights for exponent ``beta``."""
        total = self.tree.total()
        bounds = np.linspace(0.0, total, batch_size + 1)
        masses = self.rng.uniform(bounds[:-1], bounds[1:])
        idx = np.minimum(self.tree.find(masses), self.count - 1)
        probs = self.tree.leaves(idx) / total
        weights = (self.count * np.maximum(probs, 1e-300)) ** (-beta)
        weights /= weights.max()
        fresh = ~self.replayed[idx]
        self.replayed[idx] = True
        return ReplayBatch(
            self.obs[idx],
            self.actions[idx],
            self.rewards[idx],
            self.next_obs[idx],
            self.next_masks[idx],
            self.dones[idx],
            weights.astype(np.float32),
            idx,
            self.added - 1 - self.added_at[idx],
            fresh,
            self.demos[idx],
            self.elapsed_s[idx],
        )

    def update_priorities(
        self, indices: npt.NDArray[np.int64], priorities: npt.NDArray[np.float64]
    ) -> None:
        """New priorities (|TD error| + ε) of sampled transitions."""
        self.tree.update(indices, np.asarray(priorities, dtype=np.float64) ** self.alpha)
        self.max_priority = max(self.max_priority, float(np.max(priorities)))
