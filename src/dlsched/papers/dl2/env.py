"""`Dl2Env`: DL2's scheduling problem (§4.1) as a Gymnasium environment over the simulator.

Registered as ``dlsched/DL2-v0`` (`dlsched.rl.registration`; ``reward="jct"`` there).

* **Action space** ``Discrete(3J + 1)`` (121 by default): one incremental action of
  `dlsched.papers.dl2.state` — add a worker, a PS, or both to one of ``J`` job rows — or the void
  action (the last one), which ends the batch; the void action of the slot's last batch hands
  the slot's `Decision` to the simulator (`SimDriver`), which runs one 20-minute time slot.
  Masks: `action_masks()` (sb3-contrib's convention) and ``info["action_mask"]``; a masked
  action acts as the void action (so random agents and `check_env` still make progress; a
  masked policy never takes one).
* **Observation space** ``Box(0, 10, (obs_dim,), float32)`` (`Dl2Shape.obs_dim`, 724 by
  default): per job row its type, slots run, remaining epochs, share and workers/PS allocated
  so far this slot and a few observable extras, then the free GPU, CPU and memory fractions and
  the jobs waiting beyond this batch (`dlsched.papers.dl2.state` gives every entry and scale).
* **Reward**, paid on the void action that ends a slot (0 on every other step):

  - ``reward="jct"``: minus the job-hours spent in the system during the slot (jobs arrived and
    not finished, integrated exactly over the slot's simulated time, `dlsched.rl.time_in_system`).
    Its undiscounted sum over an episode is ``−Σ_j JCT_j / 3600`` (Little's law), so maximising
    the plain return minimises average JCT.
  - ``reward="paper"`` (the default of this class, used by DL2's own trainer): DL2's slot reward
    ``Σ_i t_i / E_i``, epochs each job trained during the slot over its total epochs. Every job
    yields 1 in total, so its undiscounted return is the number of jobs whatever the policy;
    DL2 relies on discounting per *slot* (``info["slot_reward"]`` repeats it and ``info["slot"]``
    counts slots, so an algorithm can give the reward to every sample of the slot, DL2 §4.2).

* **Episode end**: ``terminated`` when every job finished; ``truncated`` after ``max_slots``
  slots. When the simulator reports a stall (the policy left every job idle too long: nothing
  will ever finish), the episode is ``truncated`` with ``reward="paper"``; with ``reward="jct"``
  it is ``terminated`` and the step's reward also charges every unfinished job for the rest of
  the ``max_slots`` slots (at the mean slot length so far): the return a stalled run would have
  had if it had been simulated to the slot limit, so that stalling never pays.

Traces come from the named workload with a seed drawn from ``self.np_random`` (or taken in turn
from ``seeds``; drawn seeds are ≥ `TRAIN_SEED_MIN`); the simulator's noise is seeded from the
same draw, so ``reset(seed=s)`` makes an episode reproducible.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from dlsched.core import ClusterView
from dlsched.papers.dl2.state import OBS_HIGH, Dl2Encoder, Dl2Shape, Dl2Slot
from dlsched.rl.actions import EPISODE_OVER, discrete_action
from dlsched.rl.sim_driver import SimDriver
from dlsched.rl.time_in_system import HOUR_S, TimeInSystem
from dlsched.sim import SimulationStalled
from dlsched.workloads.base import Workload
from dlsched.workloads.registry import make_workload

log = logging.getLogger(__name__)

Dl2Reward = Literal["paper", "jct"]

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
        reward: ``"paper"`` (DL2's slot reward) or ``"jct"`` (minus job-hours in the system;
            module docstring).
        **workload_options: generator options (``servers=13``, ``load=1.0``, ``num_jobs=200``).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium convention
    preemptive: ClassVar[bool] = True
    """Decisions are the whole desired allocation (DL2 is elastic)."""

    def __init__(
        self,
        workload: str = "dl2",
        *,
        shape: Dl2Shape | None = None,
        seeds: Sequence[int] | None = None,
        max_slots: int = 2000,
        transform: Callable[[Workload], Workload] | None = None,
        vary: Mapping[str, Sequence[Any]] | None = None,
        reward: Dl2Reward = "paper",
        **workload_options: Any,
    ) -> None:
        super().__init__()
        if reward not in ("paper", "jct"):
            raise ValueError(f"reward must be 'paper' or 'jct', got {reward!r}")
        self.reward: Dl2Reward = reward
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
        self.time_in_system: TimeInSystem | None = None
        self.slots = 0
        self.stalled = False
        self.ended = False  # the last step ended the episode: step() needs a reset()

    # -- Gymnasium API -----------------------------------------------------------------------

    def workload_setting(self) -> tuple[str, dict[str, Any]]:
        """The workload and generator options its episodes are drawn from (what an evaluation
        of a policy trained here should simulate; `dlsched.rl.adapter.PolicyAdapter`)."""
        return self.workload_name, dict(self.workload_options)

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
        self.time_in_system = TimeInSystem(self.driver.sim)
        self.slots = 0
        self.stalled = False
        self.ended = False
        t = self.driver.next_point()
        if t is None:
            raise ValueError(f"workload {self.workload_name!r} seed {self.trace_seed}: no jobs")
        self.slot = Dl2Slot(self.driver.view(), self.shape)
        return self.slot.observation(), self._info(0.0)

    def step(
        self, action: np.int64 | int
    ) -> tuple[npt.NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        a = discrete_action(action, self.shape.num_actions, type(self).__name__)
        if self.ended:
            raise ValueError(f"{type(self).__name__}.step: {EPISODE_OVER}")
        if self.slot is None or self.driver is None:
            raise ValueError("call reset() before step()")
        if not self.slot.action_mask()[a]:
            a = self.shape.void  # a masked action acts as the void action
        if not self.slot.apply(a):
            return self.slot.observation(), 0.0, False, False, self._info(0.0)
        reward = self._run_slot()
        terminated = self.slot is None and (not self.stalled or self.reward == "jct")
        truncated = not terminated and (self.stalled or self.slots >= self.max_slots)
        self.ended = terminated or truncated
        return self._observation(), reward, terminated, truncated, self._info(reward, True)

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Legal actions now (sb3-contrib's MaskablePPO convention)."""
        if self.slot is None:
            mask = np.zeros(self.shape.num_actions, dtype=bool)
            mask[self.shape.void] = True
            return mask
        return self.slot.action_mask()

    def slot_encoder(self) -> Dl2Encoder:
        """The state encoding of this environment for a deployed scheduler
        (`dlsched.rl.adapter.PolicyAdapter`): same observations and masks."""
        return Dl2Encoder(self.shape)

    # -- helpers -----------------------------------------------------------------------------

    def view(self) -> ClusterView:
        """The scheduler's view at the current slot (teachers decide from it)."""
        if self.driver is None:
            raise ValueError("call reset() first")
        return self.driver.view()

    def _run_slot(self) -> float:
        """Apply the slot's decision, simulate one slot, and return its reward."""
        assert self.slot is not None and self.driver is not None
        assert self.time_in_system is not None
        sim = self.driver.sim
        jobs = self.slot.jobs
        before = {run.job_id: run.work_done(sim.now_s) for run in jobs}
        self.slots += 1
        try:
            self.driver.apply(self.slot.decision())
            t1 = self.driver.next_point()
        except SimulationStalled:
            log.warning("trace %d: the policy left every job idle too long", self.trace_seed)
            t1 = None
            self.stalled = True
        self.slot = None if t1 is None else Dl2Slot(self.driver.view(), self.shape)
        if self.reward == "jct":
            job_s = self.time_in_system.advance()
            if self.stalled:  # the unfinished jobs stay in the system up to the slot limit
                left = len(self.driver.sim.specs) - len(self.driver.sim.finished)
                job_s += left * max(self.max_slots - self.slots, 0) * sim.now_s / self.slots
            return -job_s / HOUR_S
        if self.stalled:
            return 0.0
        t_end = sim.now_s if t1 is None else t1
        reward = 0.0
        for run in jobs:
            done = run.spec.total_work if run.finished else run.work_done(t_end)
            reward += (done - before[run.job_id]) / max(run.spec.total_work, 1e-12)
        return float(reward)

    def _observation(self) -> npt.NDArray[np.float32]:
        """The slot's observation; zeros once the episode has ended (no slot)."""
        if self.slot is None:
            return np.zeros(self.shape.obs_dim, dtype=np.float32)
        return self.slot.observation()

    def _info(self, reward: float, slot_end: bool = False) -> dict[str, Any]:
        return {
            "action_mask": self.action_masks(),
            "slot": self.slots,
            "slot_end": slot_end,
            "slot_reward": reward,
            "trace_seed": self.trace_seed,
        }
