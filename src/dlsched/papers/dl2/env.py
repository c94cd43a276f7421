"""`Dl2Env`: DL2's scheduling problem (§4.1) as a Gymnasium environment over the simulator.

One step is one incremental action of `dlsched.papers.dl2.state` (add a worker, a PS, or both to
one of ``J`` job rows, or the void action). The void action of the slot's last batch hands the
slot's `Decision` to the simulator (`SimDriver`), which runs one time slot; the reward of that
step is the slot's reward ``Σ_i t_i / E_i`` — epochs each job trained during the slot over its
total epochs — and every other step's reward is 0. ``info["slot_reward"]`` repeats it and
``info["slot"]`` counts slots, so an algorithm can give the reward to every sample of the slot
(DL2 §4.2). An episode ends (``terminated``) when every job finished; it is ``truncated`` after
``max_slots`` slots, or when the simulator reports a stall (jobs left idle too long).

Observation: a float32 vector in ``[0, 10]`` (`Dl2Shape.obs_dim`); action masks are exposed
as `action_masks()` (sb3-contrib) and ``info["action_mask"]``; a masked action acts as the void
action (so random agents and `check_env` still make progress; a masked policy never takes one).
Traces come from the named workload with a seed drawn from ``self.np_random`` (or taken in turn
from ``seeds``; drawn seeds are ≥ `TRAIN_SEED_MIN`); the simulator's noise is seeded from the
same draw, so ``reset(seed=s)`` makes an episode reproducible.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from dlsched.core import ClusterView
from dlsched.papers.dl2.state import OBS_HIGH, Dl2Shape, Dl2Slot
from dlsched.rl.sim_driver import SimDriver
from dlsched.sim import SimulationStalled
from dlsched.workloads.base import Workload
from dlsched.workloads.registry import make_workload

log = logging.getLogger(__name__)


TRAIN_SEED_MIN = 1_000_000
"""Trace seeds drawn by the environment are at least this, so smaller (validation) seeds are
never trained on."""


class Dl2Env(gym.Env[npt.NDArray[np.float32], np.int64]):
    """DL2's environment (see the module docstring).

    Args:
        workload: registered elastic workload name (``"dl2"``).
        shape: J and the job types of the state.
        seeds: trace seeds to cycle through (None: drawn from ``np_random``).
        max_slots: slots before the episode is truncated.
        transform: applied to every generated trace before it is simulated (OfflineRL swaps
            the measured speed model for a fitted one, `dlsched.papers.dl2.offline_rl`).
        vary: generator options drawn anew for every episode, one of the listed values each
            (``{"servers": (8, 13, 20)}``): train one policy across settings.
        **workload_options: generator options (``servers=13``, ``load=1.0``, ``num_jobs=200``).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium convention

    def __init__(
        self,
        workload: str = "dl2",
        *,
        shape: Dl2Shape | None = None,
        seeds: Sequence[int] | None = None,
        max_slots: int = 2000,
        transform: Callable[[Workload], Workload] | None = None,
        vary: Mapping[str, Sequence[Any]] | None = None,
        **workload_options: Any,
    ) -> None:
        super().__init__()
        self.workload_name = workload
        self.workload_options = dict(workload_options)
        self.vary = {k: tuple(v) for k, v in (vary or {}).items()}
        for key, values in self.vary.items():
            if not values:
                raise ValueError(f"vary {key!r}: give at least one value")
        self.shape = shape or Dl2Shape()
        self.seeds = list(seeds) if seeds is not None else None
        self.max_slots = max_slots
        self.transform = transform
        self.observation_space = gym.spaces.Box(
            0.0, OBS_HIGH, shape=(self.shape.obs_dim,), dtype=np.float32
        )
        self.action_space = gym.spaces.Discrete(self.shape.num_actions)
        self._episode = 0
        self.trace_seed = 0
        self.workload: Workload | None = None
        self.driver: SimDriver | None = None
        self.slot: Dl2Slot | None = None
        self.slots = 0
        self.stalled = False

    # -- Gymnasium API -----------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        super().reset(seed=seed)
        if options and "trace_seed" in options:
            self.trace_seed = int(options["trace_seed"])
        elif self.seeds:
            self.trace_seed = self.seeds[self._episode % len(self.seeds)]
        else:
            self.trace_seed = int(self.np_random.integers(TRAIN_SEED_MIN, 2**31 - 1))
        self._episode += 1
        options = dict(self.workload_options)
        for key, values in self.vary.items():  # one setting per episode (domain randomisation)
            options[key] = values[int(self.np_random.integers(len(values)))]
        self.workload = make_workload(self.workload_name, seed=self.trace_seed, **options)
        if self.transform is not None:
            self.workload = self.transform(self.workload)
        self.driver = SimDriver(self.workload, seed=self.trace_seed, preemptive=True)
        self.slots = 0
        self.stalled = False
        t = self.driver.next_point()
        if t is None:
            raise ValueError(f"workload {self.workload_name!r} seed {self.trace_seed}: no jobs")
        self.slot = Dl2Slot(self.driver.view(), self.shape)
        return self.slot.observation(), self._info(0.0)

    def step(
        self, action: np.int64 | int
    ) -> tuple[npt.NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        if self.slot is None or self.driver is None:
            raise ValueError("call reset() before step()")
        a = int(action)
        if not self.action_space.contains(a):
            raise ValueError(f"action {a} is outside 0..{self.shape.num_actions - 1}")
        if not self.slot.action_mask()[a]:
            a = self.shape.void  # a masked action acts as the void action
        if not self.slot.apply(a):
            return self.slot.observation(), 0.0, False, False, self._info(0.0)
        reward = self._run_slot()
        terminated = self.slot is None and not self.stalled
        truncated = self.stalled or (not terminated and self.slots >= self.max_slots)
        obs = (
            self.slot.observation()
            if self.slot is not None
            else np.zeros(self.shape.obs_dim, dtype=np.float32)
        )
        return obs, reward, terminated, truncated, self._info(reward, slot_end=True)

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Legal actions now (sb3-contrib's MaskablePPO convention)."""
        if self.slot is None:
            mask = np.zeros(self.shape.num_actions, dtype=bool)
            mask[self.shape.void] = True
            return mask
        return self.slot.action_mask()

    # -- helpers -----------------------------------------------------------------------------

    def view(self) -> ClusterView:
        """The scheduler's view at the current slot (teachers decide from it)."""
        if self.driver is None:
            raise ValueError("call reset() first")
        return self.driver.view()

    def _run_slot(self) -> float:
        """Apply the slot's decision, simulate one slot, and return ``Σ t_i / E_i``."""
        assert self.slot is not None and self.driver is not None
        sim = self.driver.sim
        t0 = sim.now_s
        before = {run.job_id: run.work_done(t0) for run in self.slot.jobs}
        self.slots += 1
        try:
            self.driver.apply(self.slot.decision())
            t1 = self.driver.next_point()
        except SimulationStalled:
            log.warning("trace %d: the policy left every job idle too long", self.trace_seed)
            self.slot = None
            self.stalled = True
            return 0.0
        t_end = sim.now_s if t1 is None else t1
        reward = 0.0
        for run in self.slot.jobs:
            done = run.spec.total_work if run.finished else run.work_done(t_end)
            reward += (done - before[run.job_id]) / max(run.spec.total_work, 1e-12)
        self.slot = None if t1 is None else Dl2Slot(self.driver.view(), self.shape)
        return float(reward)

    def _info(self, reward: float, slot_end: bool = False) -> dict[str, Any]:
        return {
            "action_mask": self.action_masks(),
            "slot": self.slots,
            "slot_end": slot_end,
            "slot_reward": reward,
            "trace_seed": self.trace_seed,
        }
