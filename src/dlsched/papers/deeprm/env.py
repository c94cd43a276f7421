"""`DeepRMEnv`: DeepRM's scheduling problem (DeepRM §3) as a Gymnasium environment.

Registered as ``dlsched/DeepRM-v0`` (`dlsched.rl.registration`). State, actions and rewards
are those of `dlsched.papers.deeprm.state` (which states every rule and its source). The
defaults are the paper's; four options (issue 19) make a problem a standard library learns on
with its default hyper-parameters — ``reward="wait", work_conserving=True, window="shortest",
observation="compact"`` (``examples/train_maskable_ppo.py``; ``benchmarks/RESULTS.md``).

* **Observation space**: ``observation="image"`` (default) ``Box(0, 1, (T·W,), float32)``:
  DeepRM's binary ``T × W`` image of the cluster over the next ``T`` steps, the ``M``
  waiting-job slots and the backlog count, flattened row by row (``obs.reshape(T, W)`` gives the
  image back; `DeepRMShape.horizon`, `DeepRMShape.image_width`; 20 × 443 = 8,860 by default).
  ``observation="compact"``: the same information as ``T·d + M·(d + 4) + 1`` numbers in
  ``[0, 1]`` (101 by default; `dlsched.papers.deeprm.compact`), a job's duration and demands
  one number each.
* **Action space** ``Discrete(M + 1)``: 0 is ∅ and ``i`` schedules slot ``i``'s job at the first
  step at which it fits; time is frozen until ∅ or an invalid action. ``shape=DeepRMShape(
  ranked=True)`` gives dlsched's ranked view instead (slots = the ``M`` shortest waiting jobs,
  a job valid only if it fits now; the shipped ``deeprm`` policy's), same spaces. `action_masks`
  (sb3-contrib's convention, also ``info["action_mask"]``) marks the valid actions;
  ``mask_invalid=False`` offers every action, as in the paper, where an invalid choice simply
  lets time move on. ``work_conserving=True`` offers only the slot jobs that fit *now*, and ∅
  only when none does: the policy chooses which waiting jobs start and in what order, never
  idles resources a waiting job could use, and takes one action per job started plus one ∅ per
  time step whatever it does — so a library's per-*action* discount cannot be gamed by taking
  more or fewer actions.
* **Window**: ``window="arrival"`` (DeepRM's) fills the ``M`` slots first come, first in, the
  rest wait in the backlog; ``window="shortest"`` keeps the ``M`` shortest waiting jobs in the
  slots, shortest first (ties: arrival), as SJF sees every waiting job. Durations are in the
  state either way.
* **Reward**, paid on each step at which time advances one DeepRM step (0 while time is
  frozen): ``reward="slowdown"`` (default, DeepRM's own) ``−Σ_j 1/T_j`` over the jobs in the
  system, ``reward="jct"`` ``−|J|`` (DeepRM's completion-time objective, §3.4). Both follow
  Little's law: the undiscounted return of an episode that runs to its end is ``−Σ_j S_j``
  (slowdowns), resp. ``−Σ_j C_j`` (completion times, in steps), of the admitted jobs.
  ``reward="wait"``: ``−Σ_j 1/T_j`` over the admitted jobs *waiting* (arrived, not started);
  its undiscounted return is ``−Σ_j (S_j − 1)``, the same optimum, but a job's own run time
  (a constant) is no longer charged while it runs, so under a discount starting a job sooner
  never moves a cost earlier, where it weighs more — with ``"slowdown"`` it does.
* **Episode end**: ``terminated`` when every job arrived and finished, ``truncated`` after
  ``max_steps`` time steps. Each episode is one jobset of the ``deeprm`` workload
  (``horizon_steps`` steps of Bernoulli arrivals at ``load``, seeded from ``self.np_random``), or
  the `Jobset` passed as ``reset(options={"jobset": ...})``; ``info["trace_seed"]`` is the
  jobset's ``deeprm`` seed (None for a given jobset). Jobs beyond the backlog are dropped and
  counted in ``info["dropped"]``.

`slot_encoder` gives the deployed scheduler (`dlsched.rl.adapter.PolicyAdapter`) the same
options, so a policy sees in `dlsched.simulate` what it saw here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal, SupportsFloat

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from dlsched.papers.deeprm.compact import compact_dim, compact_observation
from dlsched.papers.deeprm.state import DeepRMBatch, DeepRMShape, Jobset, Objective
from dlsched.rl.actions import EPISODE_OVER, discrete_action
from dlsched.workloads.deeprm import STEP_S, make_deeprm

if TYPE_CHECKING:
    from dlsched.papers.deeprm.policy import DeepRMEncoder

Obs = npt.NDArray[np.float32]
DeepRMReward = Literal["slowdown", "jct", "wait"]
DeepRMObservation = Literal["image", "compact"]
DeepRMWindow = Literal["arrival", "shortest"]
_OBJECTIVE: dict[str, Objective] = {"slowdown": "slowdown", "jct": "completion", "wait": "slowdown"}


class DeepRMEnv(gym.Env[Obs, np.int64]):
    """One DeepRM episode at a time (module docstring).

    Args:
        load: offered load of generated jobsets (fraction of capacity; §4.1 uses 0.1–1.9).
        reward: ``"slowdown"`` (``−Σ 1/T_j`` per step) or ``"jct"`` (``−|J|`` per step), §3.4;
            ``"wait"`` (``−Σ 1/T_j`` over waiting jobs per step).
        horizon_steps: steps of arrivals per generated jobset (50, §4.1).
        shape: state sizes (``T``, ``M``, backlog, slots per resource).
        mask_invalid: True: `action_masks` marks only valid actions; False: all actions.
        max_steps: truncate after this many time steps.
        work_conserving: True: `action_masks` offers only the slot jobs that fit at the
            current step, and ∅ only when none does (module docstring).
        observation: ``"image"`` (DeepRM's) or ``"compact"`` (101 numbers).
        window: ``"arrival"`` (DeepRM's slots) or ``"shortest"`` (the shortest waiting jobs).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium convention
    preemptive: ClassVar[bool] = False
    """Decisions only start pending jobs."""

    def __init__(
        self,
        load: float = 0.7,
        reward: DeepRMReward = "slowdown",
        *,
        horizon_steps: int = 50,
        shape: DeepRMShape | None = None,
        mask_invalid: bool = True,
        max_steps: int = 400,
        work_conserving: bool = False,
        observation: DeepRMObservation = "image",
        window: DeepRMWindow = "arrival",
    ) -> None:
        if reward not in _OBJECTIVE:
            raise ValueError(f"reward must be 'slowdown', 'jct' or 'wait', got {reward!r}")
        self.load = load
        self.reward: DeepRMReward = reward
        self.objective: Objective = _OBJECTIVE[reward]
        self.horizon_steps = horizon_steps
        self.shape = shape or DeepRMShape()
        self.mask_invalid = mask_invalid
        self.max_steps = max_steps
        self.work_conserving = work_conserving
        if observation not in ("image", "compact"):
            raise ValueError(f"observation must be 'image' or 'compact', got {observation!r}")
        self.observation: DeepRMObservation = observation
        if window not in ("arrival", "shortest"):
            raise ValueError(f"window must be 'arrival' or 'shortest', got {window!r}")
        self.window: DeepRMWindow = window
        dim = self.shape.obs_dim if observation == "image" else compact_dim(self.shape)
        self.observation_space = spaces.Box(0.0, 1.0, (dim,), np.float32)
        self.action_space = spaces.Discrete(self.shape.num_actions)
        self.batch: DeepRMBatch | None = None
        self.jobset: Jobset | None = None
        self.trace_seed: int | None = None

    def _state(self) -> DeepRMBatch:
        if self.batch is None:
            raise RuntimeError("DeepRMEnv: call reset() before step()")
        return self.batch

    def workload_setting(self) -> tuple[str, dict[str, Any]]:
        """The workload and generator options its jobsets are drawn from, and a scheduling
        point every time step as its agent acts (``interval_s``): what an evaluation of a policy
        trained here should simulate (`dlsched.rl.adapter.PolicyAdapter`)."""
        options = {"load": self.load, "horizon_steps": self.horizon_steps, "interval_s": STEP_S}
        return "deeprm", options

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Obs, dict[str, Any]]:
        super().reset(seed=seed)
        jobset = (options or {}).get("jobset")
        self.trace_seed = None
        if jobset is None:
            self.trace_seed = int(self.np_random.integers(2**31 - 1))
            workload = make_deeprm(
                self.trace_seed,
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
        self._order_window()
        return self._obs(), self._info(advanced=False)

    def step(self, action: np.int64 | int) -> tuple[Obs, SupportsFloat, bool, bool, dict[str, Any]]:
        a = discrete_action(action, self.shape.num_actions, "DeepRMEnv")
        state = self._state()
        if state.terminated[0] or state.truncated[0]:
            raise ValueError(f"DeepRMEnv.step: {EPISODE_OVER}")
        waiting = self._waiting_inv() if self.reward == "wait" else 0.0
        reward, advanced = state.step(np.array([a]))
        if self.reward == "wait":
            reward[0] = -waiting if advanced[0] else 0.0
        self._order_window()
        info = self._info(advanced=bool(advanced[0]))
        return (
            self._obs(),
            float(reward[0]),
            bool(state.terminated[0]),
            bool(state.truncated[0]),
            info,
        )

    def _order_window(self) -> None:
        """``window="shortest"``: the slots hold the shortest waiting jobs, shortest first
        (ties: arrival order); the rest wait in the backlog."""
        state = self._state()
        if self.window != "shortest" or not state.active[0]:
            return
        width = state.queue.shape[1]
        head, count = int(state.queue_head[0]), int(state.backlog[0])
        queued = [int(state.queue[0, (head + k) % width]) for k in range(count)]
        waiting = [int(j) for j in state.slot[0] if j >= 0] + queued
        waiting.sort(key=lambda j: (int(state.length[0, j]), j))
        m = self.shape.slots
        slots = np.array(waiting[:m] + [-1] * max(0, m - len(waiting)), np.int64)
        filled = slots >= 0
        jobs = np.maximum(slots, 0)
        state.slot[0] = slots
        state.slot_len[0] = np.where(filled, state.length[0, jobs], 0)
        state.slot_dem[0] = state.demand[0, jobs] * filled[:, None]
        rest = waiting[m:]
        for k, j in enumerate(rest):
            state.queue[0, (head + k) % width] = j
        state.backlog[0] = len(rest)
        state._fits = None

    def _obs(self) -> Obs:
        state = self._state()
        if self.observation == "image":
            return state.images()[0].ravel()
        return compact_observation(
            self.shape, state.used, state.slot_len, state.slot_dem, state.backlog
        )[0]

    def _waiting_inv(self) -> float:
        """``Σ 1/T_j`` over the admitted jobs that arrived and have not started by now."""
        state = self._state()
        now = state.now[0]
        seen = np.arange(state.arrival.shape[1]) < state.next_job[0]
        start = state.start[0]
        waiting = seen & ~state.was_dropped[0] & ((start < 0) | (start > now))
        return float((1.0 / state.length[0][waiting]).sum())

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Valid actions now (all True with ``mask_invalid=False``)."""
        if not self.mask_invalid:
            return np.ones(self.shape.num_actions, bool)
        state = self._state()
        if self.work_conserving and state.active[0]:
            fits, first = state.fits()
            now = fits[0] & (first[0] == 0)
            return np.concatenate([[not now.any()], now])
        return state.action_masks()[0]

    def slot_encoder(self) -> DeepRMEncoder:
        """This environment's state encoding over the simulator, for a deployed scheduler
        (`dlsched.rl.adapter.PolicyAdapter`): the same image; ∅ is masked while the cluster is
        idle and a slot job fits (`DeepRMEncoder.idle_guard`), and jobs the environment would
        drop wait instead."""
        from dlsched.papers.deeprm.policy import DeepRMEncoder  # imports torch

        return DeepRMEncoder(
            self.shape,
            work_conserving=self.work_conserving,
            observation=self.observation,
            window=self.window,
        )

    def _info(self, *, advanced: bool) -> dict[str, Any]:
        state = self._state()
        return {
            "action_mask": self.action_masks(),
            "time_step": int(state.now[0]),
            "advanced": advanced,
            "dropped": int(state.dropped[0]),
            "backlog": int(state.backlog[0]),
            "jobs_in_system": int(state.sys_cnt[0]),
            "trace_seed": self.trace_seed,
        }
