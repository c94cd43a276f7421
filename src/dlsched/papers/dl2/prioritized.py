"""The authors' code's prioritised replay for the paper preset (`PaperSpec.priority`; NOT in the
paper, whose text names only "experience replay"): a diagnosis of issue 29's DL2 part.

pengyanghua/DL2 trains its actor-critic with ``PRIORITY_REPLAY = True``
(``prioritized_memory.py``, ``train.py``; read, not copied): a sample enters with priority
``max(1, r − mean stored reward)``, mini-batches are drawn stratified in proportion to priority,
each sample's policy-gradient term is weighted by ``(P(i) / min P)^(−β)`` (β from 0.1, +10⁻⁴ per
mini-batch, at most 1), and after the update a drawn sample's priority becomes
``min(|δ| + 0.01, 4)^0.9`` with δ its advantage before the update. The hypothesis this tests:
such replay concentrates the updates on the rare samples whose advantage is large — near the
supervised start, the few non-greedy actions — and so lets the weak signal move the policy.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch

from dlsched.papers.dl2.algorithm import Batch
from dlsched.papers.dl2.paper_collect import SlotReplay

PRIORITY_EPS = 0.01
"""Added to |δ| so that no sample's priority is 0 (the code's ``epsilon``)."""
PRIORITY_CAP = 4.0
"""Largest |δ| that counts (the code's ``abs_err_upper`` with its mean-reward baseline)."""
PRIORITY_ALPHA = 0.9
"""Priority = capped |δ| to this power (the code's ``alpha``)."""
IS_BETA_START = 0.1
"""First importance-sampling exponent (the code's ``beta``)."""
IS_BETA_STEP = 1e-4
"""Exponent added per drawn mini-batch, up to 1 (the code's ``beta_increment_per_sampling``)."""


class PrioritizedSlotReplay(SlotReplay):
    """`SlotReplay` drawing mini-batches in proportion to per-sample priorities (module doc)."""

    def __init__(self, capacity: int, obs_dim: int, num_actions: int) -> None:
        super().__init__(capacity, obs_dim, num_actions)
        self.priority = np.zeros(capacity, dtype=np.float64)
        self.beta = IS_BETA_START
        self.last_idx: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)

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
        """`SlotReplay.add_slot`, each new sample at priority max(1, r − mean stored r)."""
        if gamma is not None:
            raise ValueError("prioritised replay supports only the paper's slot targets")
        idx = (self.pos + np.arange(len(actions))) % self.capacity
        super().add_slot(obs, masks, actions, reward, next_obs, done, explored, gamma)
        mean_r = float(self.rewards[: self.size].mean())
        self.priority[idx] = np.maximum(1.0, self.rewards[idx] - mean_r)

    def sample(
        self,
        n: int,
        rng: np.random.Generator,
        device: torch.device,
        *,
        explored_in_pg: bool = True,
        chain: bool = False,
    ) -> Batch:
        """``n`` samples, one from each of ``n`` equal segments of the cumulative priority; the
        batch's ``pg_weights`` are the importance weights (times 0 for an exploration rule's
        action when ``explored_in_pg`` is False)."""
        if chain:
            raise ValueError("prioritised replay supports only the paper's slot targets")
        p = self.priority[: self.size]
        cum = np.cumsum(p)
        points = (np.arange(n) + rng.random(n)) * (cum[-1] / n)
        idx = np.minimum(np.searchsorted(cum, points, side="left"), self.size - 1)
        self.beta = min(1.0, self.beta + IS_BETA_STEP)
        weights = (p[idx] / p.min()) ** (-self.beta)
        if not explored_in_pg:
            weights = weights * ~self.explored[idx]
        self.last_idx = idx

        def take(a: npt.NDArray[np.generic]) -> torch.Tensor:
            return torch.from_numpy(a[idx]).to(device)

        return Batch(
            take(self.obs),
            take(self.masks),
            take(self.actions),
            take(self.rewards),
            take(self.next_obs),
            take(self.dones),
            torch.from_numpy(weights.astype(np.float32)).to(device),
            None,
        )

    def update(self, advantages: npt.NDArray[np.float32]) -> None:
        """The last mini-batch's priorities from its advantages |δ| before the update."""
        capped = np.minimum(np.abs(advantages.astype(np.float64)) + PRIORITY_EPS, PRIORITY_CAP)
        self.priority[self.last_idx] = capped**PRIORITY_ALPHA
