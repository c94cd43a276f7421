"""`PolicyAdapter`: a policy from any RL library as a dlsched `Scheduler`.

A policy trained on one of the registered environments (``dlsched/DL2-v0``, ``dlsched/DL2Slot-v0``,
``dlsched/DeepRM-v0``, ``dlsched/SCED2-v0``) maps an observation and an action mask to an action.
`PolicyAdapter` runs it at every scheduling point of `dlsched.simulate` (and so of ``compare`` and
``live run``) through the environment's own state encoding (its ``slot_encoder()``) and the loop the
shipped learned schedulers use (`dlsched.rl.policy_scheduler.SlotLoopScheduler`): the policy sees
exactly the observations and masks it was trained on. Observations are clipped to the environment's
observation space, as the environment clips them.

Example (sb3-contrib)::

    import dlsched
    from dlsched.rl.adapter import from_sb3
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load("ppo_deeprm.zip")
    scheduler = from_sb3(model, "dlsched/DeepRM-v0", load=1.3, horizon_steps=50)
    result = dlsched.simulate(scheduler.workload, scheduler, seed=101, **scheduler.workload_options)
    print(result.summary()["avg_slowdown"])

The adapter carries the environment's workload settings (``workload``, ``workload_options``:
here ``"deeprm"`` with ``load=1.3, horizon_steps=50, interval_s=1.0``) to the evaluation, so
they are given once; a run on the same workload with other settings logs the out-of-setting
notice (``trained_setting``, `dlsched.rl.setting`).

Any callable works: ``PolicyAdapter(lambda obs, mask: int(mask.nonzero()[0][-1]),
"dlsched/DL2-v0")``. DeepRM's policy acts at every step in its environment: its
``workload_options`` hold ``interval_s=1.0`` (one step) to give it those decisions too.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from dlsched.core import ClusterView, Decision
from dlsched.rl.policy_scheduler import SlotEncoder, SlotLoopScheduler

ActionPolicy = Callable[[npt.NDArray[np.float32], npt.NDArray[np.bool_]], Any]
"""``(observation, action_mask) -> action``: the action as an int, a NumPy integer or a
one-element array (what ``model.predict`` returns)."""


class PolicyAdapter(SlotLoopScheduler):
    """``policy`` as a scheduler, seeing what it saw in the environment ``env_id``.

    Args:
        policy: ``(observation, action_mask) -> action``; it must return a legal action.
        env_id: the registered id the policy was trained on (``"dlsched/DL2-v0"``).
        name: the scheduler's name in results.
        **env_kwargs: the options the environment was made with (its state sizes must match;
            ``shape=...``, and for SCED² the cluster's size through the workload options).

    Raises:
        ValueError: ``env_id`` is not a dlsched environment.
    """

    def __init__(
        self, policy: ActionPolicy, env_id: str, *, name: str = "policy", **env_kwargs: Any
    ) -> None:
        env = gym.make(env_id, disable_env_checker=True, **env_kwargs).unwrapped
        make_encoder = getattr(env, "slot_encoder", None)
        if make_encoder is None:
            raise ValueError(f"{env_id!r} is not a dlsched environment (it has no slot_encoder)")
        self._make_encoder: Callable[[], SlotEncoder] = make_encoder
        space = env.observation_space
        assert isinstance(space, gym.spaces.Box)
        self._low, self._high = space.low, space.high
        actions = env.action_space
        self._nvec: npt.NDArray[np.int64] | None = (
            np.asarray(actions.nvec, dtype=np.int64).ravel()
            if isinstance(actions, gym.spaces.MultiDiscrete)
            else None
        )
        super().__init__(name, make_encoder(), preemptive=bool(env.preemptive))  # type: ignore[attr-defined]
        setting = getattr(env, "workload_setting", lambda: None)()
        self.workload: str | None = setting[0] if setting else None
        """The workload the environment drew its episodes from (None: unknown)."""
        self.workload_options: dict[str, Any] = dict(setting[1]) if setting else {}
        """Its generator options, to pass on to ``simulate``/``compare``."""
        self.trained_setting: dict[str, Any] | None = (
            {"workload": self.workload.partition(":")[0], "params": self.workload_options}
            if self.workload
            else None
        )
        env.close()
        self.policy = policy

    def reset(self) -> None:
        """New run: a fresh encoder (DeepRM's slots, SCED²'s profiles start empty)."""
        self.encoder = self._make_encoder()

    def decide(self, view: ClusterView) -> Decision:
        """One action a scheduling point for a ``MultiDiscrete`` environment
        (``dlsched/DL2Slot-v0``), else the loop of `SlotLoopScheduler`."""
        if self._nvec is None:
            return super().decide(view)
        builder: Any = self.encoder.start(view)
        builder.apply(self.choose_vector(builder.observation(), builder.action_mask()))
        decision: Decision = builder.decision()
        return decision

    def choose_vector(
        self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.int64]:
        """The policy's ``MultiDiscrete`` action (one entry per dimension), checked against
        the flat mask (sb3-contrib's convention: the dimensions' masks one after another).

        Raises:
            ValueError: an entry is out of range or masked.
        """
        assert self._nvec is not None
        raw = self.policy(np.clip(obs, self._low, self._high), mask)
        action = np.asarray(raw, dtype=np.int64).ravel()
        if action.shape != self._nvec.shape or (action < 0).any() or (action >= self._nvec).any():
            raise ValueError(
                f"{self.name}: the policy chose {action.tolist()}, not in {self._nvec}"
            )
        offsets = np.concatenate([[0], np.cumsum(self._nvec)[:-1]])
        bad = np.flatnonzero(~mask[offsets + action])
        if bad.size:
            raise ValueError(f"{self.name}: the policy chose masked entries at dimensions {bad}")
        return action

    def choose(self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]) -> int:
        """The policy's action, checked to be legal.

        Raises:
            ValueError: the policy returned an action the mask rules out (or out of range).
        """
        action = int(np.asarray(self.policy(np.clip(obs, self._low, self._high), mask)).item())
        if not (0 <= action < len(mask) and mask[action]):
            legal = np.flatnonzero(mask).tolist()
            raise ValueError(f"{self.name}: the policy chose action {action}; legal now: {legal}")
        return action


def from_sb3(
    model: Any,
    env_id: str,
    *,
    deterministic: bool = True,
    name: str | None = None,
    **env_kwargs: Any,
) -> PolicyAdapter:
    """A Stable-Baselines3 (or sb3-contrib) model as a scheduler.

    Args:
        model: anything with SB3's ``predict(obs, deterministic=...)``; masks are passed as
            ``action_masks=`` when ``predict`` takes them (sb3-contrib's ``MaskablePPO``).
            A model that does not take masks must still choose legal actions.
        env_id: the registered id it was trained on.
        deterministic: greedy actions (True) or samples.
        name: the scheduler's name (default: the model's class name in lower case).
        **env_kwargs: the environment's options at training time.
    """
    masked = "action_masks" in inspect.signature(model.predict).parameters

    def policy(obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]) -> Any:
        if masked:
            return model.predict(obs, action_masks=mask, deterministic=deterministic)[0]
        return model.predict(obs, deterministic=deterministic)[0]

    return PolicyAdapter(policy, env_id, name=name or type(model).__name__.lower(), **env_kwargs)
