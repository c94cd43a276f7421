"""`DeepRMEnv`: DeepRM's scheduling problem (DeepRM §3) as a Gymnasium environment.

State, actions and rewards are those of `dlsched.papers.deeprm.state` (which states every rule and
its source): the observation is the ``T × W`` binary image of the cluster over the next ``T``
steps, the ``M`` waiting-job slots and the backlog count; action 0 is ∅ and ``i`` schedules slot
``i``'s job at the first step at which it fits; time is frozen until ∅ or an invalid action;
the reward on each time advance is ``−Σ 1/T_j`` (``objective="slowdown"``) or ``−|J|``
(``"completion"``).

Each episode is one jobset of the ``deeprm`` workload (``horizon_steps`` steps of Bernoulli
arrivals at ``load``, seeded from ``self.np_random``), or the `Jobset` passed as
``reset(options={"jobset": ...})``. Jobs beyond the backlog are dropped and counted in
``info["dropped"]``.

`action_masks` (sb3-contrib's convention, also ``info["action_mask"]``) marks the valid
actions; ``mask_invalid=False`` offers every action, as in the paper, where an invalid choice
simply lets time move on.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from dlsched.papers.deeprm.state import DeepRMBatch, DeepRMShape, Jobset, Objective
from dlsched.workloads.deeprm import make_deeprm

Obs = npt.NDArray[np.float32]


class DeepRMEnv(gym.Env[Obs, np.int64]):
    """One DeepRM episode at a time (module docstring).

    Args:
        load: offered load of generated jobsets (fraction of capacity; §4.1 uses 0.1–1.9).
        objective: ``"slowdown"`` or ``"completion"`` (§3.4).
        horizon_steps: steps of arrivals per generated jobset (50, §4.1).
        shape: state sizes (``T``, ``M``, backlog, slots per resource).
        mask_invalid: True: `action_masks` marks only valid actions; False: all actions.
        max_steps: truncate after this many time steps.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium convention

    def __init__(
        self,
        load: float = 0.7,
        objective: Objective = "slowdown",
        *,
        horizon_steps: int = 50,
        shape: DeepRMShape | None = None,
        mask_invalid: bool = True,
        max_steps: int = 400,
    ) -> None:
        self.load = load
        self.objective: Objective = objective
        self.horizon_steps = horizon_steps
        self.shape = shape or DeepRMShape()
        self.mask_invalid = mask_invalid
        self.max_steps = max_steps
        self.observation_space = spaces.Box(
            0.0, 1.0, (self.shape.horizon, self.shape.image_width), np.float32
        )
        self.action_space = spaces.Discrete(self.shape.num_actions)
        self.batch: DeepRMBatch | None = None
        self.jobset: Jobset | None = None

    def _state(self) -> DeepRMBatch:
        if self.batch is None:
            raise RuntimeError("DeepRMEnv: call reset() before step()")
        return self.batch

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Obs, dict[str, Any]]:
        super().reset(seed=seed)
        jobset = (options or {}).get("jobset")
        if jobset is None:
            workload = make_deeprm(
                int(self.np_random.integers(2**31 - 1)),
                load=self.load,
                horizon_steps=self.horizon_steps,
            )
            jobset = Jobset.from_workload(workload, self.shape)
        elif not isinstance(jobset, Jobset):
            raise ValueError("DeepRMEnv.reset: options['jobset'] must be a Jobset")
        self.jobset = jobset
        self.batch = DeepRMBatch(
            [jobset], self.shape, objective=self.objective, max_steps=self.max_steps
        )
        return self.batch.images()[0], self._info(advanced=False)

    def step(self, action: np.int64 | int) -> tuple[Obs, SupportsFloat, bool, bool, dict[str, Any]]:
        state = self._state()
        if not self.action_space.contains(np.int64(action)):
            raise ValueError(f"DeepRMEnv.step: action {action!r} not in 0..{self.shape.slots}")
        reward, advanced = state.step(np.array([int(action)]))
        info = self._info(advanced=bool(advanced[0]))
        return (
            state.images()[0],
            float(reward[0]),
            bool(state.terminated[0]),
            bool(state.truncated[0]),
            info,
        )

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Valid actions now (all True with ``mask_invalid=False``)."""
        if not self.mask_invalid:
            return np.ones(self.shape.num_actions, bool)
        return self._state().action_masks()[0]

    def _info(self, *, advanced: bool) -> dict[str, Any]:
        state = self._state()
        return {
            "action_mask": self.action_masks(),
            "time_step": int(state.now[0]),
            "advanced": advanced,
            "dropped": int(state.dropped[0]),
            "backlog": int(state.backlog[0]),
            "jobs_in_system": int(state.sys_cnt[0]),
        }
