"""`Sched2Env`: SCED²'s job-selection problem (§III) as a Gymnasium environment.

Registered as ``dlsched/SCED2-v0`` (`dlsched.rl.registration`; ``reward="jct"`` there).

* **Action space** ``Discrete(J + 1)``: pick one of the first ``J`` waiting jobs (placed at once
  by packing), or φ (the last action). Time is frozen while the agent picks; φ — or a pick after
  which no waiting job fits — hands the round's `Decision` to the simulator (`SimDriver`), which
  runs to the next event (a submission or a completion). Scheduling points where no waiting job
  fits are passed to the simulator without asking the agent. A masked (illegal) action acts as
  φ, or as the first legal pick when φ itself is masked, so random agents and `check_env`
  progress; ``info["illegal_action"]`` says when that happened. Masks: `action_masks()` and
  ``info["action_mask"]``.
* **Observation space** ``Box(0, 1000, (obs_dim,), float32)`` (`Sched2Shape.obs_dim`,
  ``N·M + J·(k + 2) + 4``): each GPU's remaining busy time, the ``J`` waiting jobs' profiles,
  demands and waiting times, and statistics of the other waiting jobs, times as
  ``log1p(t / 1 h)`` (`dlsched.papers.sched2.state`); clipped at 1,000.
* **Reward**:

  - ``reward="jct"``: on the step that hands a round to the simulator, minus the job-hours spent
    in the system (jobs arrived and not finished) from the previous round to the next choice,
    integrated exactly (`dlsched.rl.time_in_system`); 0 on picks. Its undiscounted sum over an
    episode is ``−Σ_j JCT_j / 3600`` (Little's law).
  - ``reward="paper"`` (the default of this class, used by SCED²'s trainer): on a pick, the job's
    execution effectiveness (SCED² Eq. 2) ``E_j = T_ideal / (T_wait + T_actual)`` with
    ``T_ideal`` its duration at the best placement, ``T_wait`` the time it waited until now and
    ``T_actual`` its remaining work over its true speed on the placement it got (the simulator's
    outcome, used as the reward only; the agent observes profiles); φ earns 0. Without noise,
    ``E_j`` equals the job's effectiveness in the `Result`.

* **Episode end**: an episode is one trace (``num_jobs`` jobs, 1,000 by default as SCED² §IV-A;
  its seed in ``info["trace_seed"]``);
  it ends (``terminated``) when every job finished and is ``truncated`` after ``max_steps``
  steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from dlsched.papers.sched2.profiling import Profiler
from dlsched.papers.sched2.state import Sched2Builder, Sched2Encoder, Sched2Shape, cluster_shape
from dlsched.rl.actions import EPISODE_OVER, discrete_action
from dlsched.rl.sim_driver import SimDriver
from dlsched.rl.time_in_system import HOUR_S, TimeInSystem
from dlsched.workloads.base import Workload
from dlsched.workloads.registry import make_workload

OBS_HIGH = 1000.0
TraceFactory = Callable[[int], Workload]
"""Builds the trace of an episode from a seed."""
Sched2Reward = Literal["paper", "jct"]


def workload_traces(name: str = "sched2", **options: Any) -> TraceFactory:
    """Traces of a registered workload: ``seed → make_workload(name, seed=seed, **options)``.

    For generators (``sched2``) each seed draws a new trace from the workload's distributions;
    for a fixed trace (``philly:VC``) pass ``window=N`` to take ``N`` consecutive jobs starting
    at a seeded offset (re-timed to start at 0), so episodes differ.
    """
    window = options.pop("window", None)
    if window is None:
        return lambda seed: make_workload(name, seed=seed, **options)
    full = make_workload(name, seed=0, **options)
    return lambda seed: trace_window(full, int(window), seed)


def trace_window(workload: Workload, size: int, seed: int) -> Workload:
    """``size`` consecutive jobs of ``workload`` from an offset drawn with ``seed``, from 0 s."""
    from dataclasses import replace

    jobs = workload.jobs
    if size >= len(jobs):
        return workload
    start = int(np.random.default_rng(seed).integers(0, len(jobs) - size + 1))
    part = jobs[start : start + size]
    t0 = part[0].submit_time_s
    shifted = tuple(replace(j, submit_time_s=j.submit_time_s - t0) for j in part)
    params = {**dict(workload.params), "window_start": start, "window_size": size}
    return replace(workload, jobs=shifted, params=params)


class Sched2Env(gym.Env[npt.NDArray[np.float32], np.int64]):
    """SCED²'s environment (module docstring).

    Args:
        traces: seed → the episode's workload (default: `workload_traces` of ``sched2`` with
            ``workload_options``).
        slots: J, waiting jobs the agent sees.
        order: ``"arrival"`` (SCED²) or ``"shortest"`` (`Sched2Shape.order`).
        max_steps: steps before truncation.
        profile_seed: seed of the profiler's measurement noise.
        reward: ``"paper"`` (effectiveness per pick) or ``"jct"`` (minus job-hours in the
            system; module docstring).
        hold_mask: ``"none"`` (SCED²) or ``"local"`` (`Sched2Builder.action_mask`).
        **workload_options: options of the default ``sched2`` traces (``num_jobs``, ``load``,
            ``one_gpu_frac``, ``servers``, …).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium convention
    preemptive: ClassVar[bool] = False
    """Decisions only start waiting jobs."""

    def __init__(
        self,
        traces: TraceFactory | None = None,
        *,
        slots: int = 10,
        order: str = "arrival",
        max_steps: int = 200_000,
        profile_seed: int = 0,
        reward: Sched2Reward = "paper",
        hold_mask: str = "none",
        **workload_options: Any,
    ) -> None:
        super().__init__()
        if reward not in ("paper", "jct"):
            raise ValueError(f"reward must be 'paper' or 'jct', got {reward!r}")
        self.reward: Sched2Reward = reward
        self.profile_seed = profile_seed
        self._setting = None if traces else ("sched2", dict(workload_options))
        self.traces = traces or workload_traces("sched2", **workload_options)
        probe = self.traces(0)
        servers, gpus = len(probe.servers), int(probe.servers[0].gpu)
        self.shape = Sched2Shape(servers, gpus, slots, order=order)
        self.profiler = Profiler(gpus, k=self.shape.k, seed=profile_seed)
        self.encoder = Sched2Encoder(self.shape, self.profiler, hold_mask=hold_mask)
        self.max_steps = max_steps
        self.observation_space = gym.spaces.Box(
            0.0, OBS_HIGH, shape=(self.shape.obs_dim,), dtype=np.float32
        )
        self.action_space = gym.spaces.Discrete(self.shape.num_actions)
        self.driver: SimDriver | None = None
        self.builder: Sched2Builder | None = None
        self.workload: Workload | None = None
        self.time_in_system: TimeInSystem | None = None
        self.trace_seed = 0
        self.steps = 0
        self.picks = 0
        self.effectiveness_sum = 0.0
        self.ended = False  # the last step ended the episode: step() needs a reset()

    # -- gymnasium API ---------------------------------------------------------------------

    def workload_setting(self) -> tuple[str, dict[str, Any]] | None:
        """The workload and generator options its traces are drawn from (what an evaluation
        of a policy trained here should simulate; `dlsched.rl.adapter.PolicyAdapter`); None
        for traces given as a factory."""
        return None if self._setting is None else (self._setting[0], dict(self._setting[1]))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        super().reset(seed=seed)
        trace_seed = (options or {}).get("trace_seed")
        if trace_seed is None:
            trace_seed = int(self.np_random.integers(0, 2**31 - 1))
        self.trace_seed = int(trace_seed)
        self.workload = self.traces(self.trace_seed)
        self.driver = SimDriver(self.workload, seed=int(trace_seed), preemptive=False)
        self.time_in_system = TimeInSystem(self.driver.sim)
        self.steps = 0
        self.picks = 0
        self.effectiveness_sum = 0.0
        self.ended = False
        self.profiler._cache.clear()
        done = self._to_next_choice()
        obs = self._observation(done)
        return obs, self._info(done, illegal=False)

    def step(
        self, action: np.int64 | int
    ) -> tuple[npt.NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        a = discrete_action(action, self.shape.num_actions, "Sched2Env")
        if self.ended:
            raise ValueError(f"Sched2Env.step: {EPISODE_OVER}")
        if self.builder is None or self.driver is None:
            raise RuntimeError("call reset() before step()")
        self.steps += 1
        builder = self.builder
        mask = builder.action_mask()
        illegal = not mask[a]
        if illegal:
            a = len(mask) - 1 if mask[-1] else int(np.flatnonzero(mask)[0])
        reward = 0.0
        if a == self.shape.slots:
            over = True
        else:
            over = builder.apply(a)
            picked = builder.picked[-1]
            effectiveness = self._effectiveness(picked.run, picked.placement)
            self.picks += 1
            self.effectiveness_sum += effectiveness
            if self.reward == "paper":
                reward = effectiveness
        done = False
        if over:
            self.driver.apply(builder.decision())
            done = self._to_next_choice()
            if self.reward == "jct":
                assert self.time_in_system is not None
                reward = -self.time_in_system.advance() / HOUR_S
        truncated = not done and self.steps >= self.max_steps
        self.ended = done or truncated
        return self._observation(done), reward, done, truncated, self._info(done, illegal)

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Legal actions now (sb3-contrib convention)."""
        if self.builder is None:
            mask = np.zeros(self.shape.num_actions, dtype=bool)
            mask[-1] = True
            return mask
        return self.builder.action_mask()

    def slot_encoder(self) -> Sched2Encoder:
        """This environment's state encoding for a deployed scheduler
        (`dlsched.rl.adapter.PolicyAdapter`): same observations (clipped there to the
        observation space) and masks."""
        profiler = Profiler(self.shape.gpus_per_server, k=self.shape.k, seed=self.profile_seed)
        return Sched2Encoder(self.shape, profiler)

    # -- internals ---------------------------------------------------------------------------

    def _effectiveness(self, run: Any, placement: Any) -> float:
        assert self.workload is not None and self.builder is not None
        spec = run.spec
        speed = self.workload.model.speed(spec, placement)
        actual = run.remaining_work(self.builder.now_s) / max(speed, 1e-12)
        wait = self.builder.now_s - spec.submit_time_s
        return float(spec.total_work / max(wait + actual, 1e-9))

    def _to_next_choice(self) -> bool:
        """Run to the next point where a pick is possible; True when the episode is over."""
        assert self.driver is not None
        while True:
            t = self.driver.next_point()
            if t is None:
                self.builder = None
                return True
            view = self.driver.view()
            if (self.shape.servers, self.shape.gpus_per_server) != cluster_shape(view):
                raise ValueError("sched2 env: trace cluster shape changed between episodes")
            builder = self.encoder.start(view)
            if builder.action_mask()[:-1].any():
                self.builder = builder
                return False
            self.driver.apply(builder.decision())

    def _observation(self, done: bool) -> npt.NDArray[np.float32]:
        if done or self.builder is None:
            return np.zeros(self.shape.obs_dim, dtype=np.float32)
        return np.minimum(self.builder.observation(), OBS_HIGH)

    def _info(self, done: bool, illegal: bool) -> dict[str, Any]:
        info: dict[str, Any] = {
            "action_mask": self.action_masks(),
            "illegal_action": illegal,
            "trace_seed": self.trace_seed,
        }
        if done and self.driver is not None:
            result = self.driver.result()
            info["result"] = result.summary()
            info["avg_effectiveness"] = self.effectiveness_sum / max(self.picks, 1)
        return info
