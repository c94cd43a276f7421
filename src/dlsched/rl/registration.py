"""Gymnasium ids of the three papers' environments, registered on ``import dlsched``.

======================  ===========================================  =====================
id                      class                                        default reward
======================  ===========================================  =====================
``dlsched/DL2-v0``      `dlsched.papers.dl2.env.Dl2Env`              ``"jct"``
``dlsched/DL2Slot-v0``  `dlsched.papers.dl2.slot_env.Dl2SlotEnv`     jobs in system ÷ J
``dlsched/DeepRM-v0``   `dlsched.papers.deeprm.env.DeepRMEnv`        ``"slowdown"``
``dlsched/SCED2-v0``    `dlsched.papers.sched2.env.Sched2Env`        ``"jct"``
======================  ===========================================  =====================

Each id's default reward is one whose plain undiscounted sum over an episode is minus the
metric it stands for (total JCT, or total slowdown for DeepRM: Little's law), so a standard
library optimises the metric; ``reward="paper"`` (DL2, SCED²) gives the paper's own reward.
``dlsched/DL2Slot-v0`` is DL2 with one step per time slot (a ``MultiDiscrete`` action), so a
library's discount applies per slot, not per action; DeepRM's options for libraries
(``reward="wait"``, ``work_conserving``, ``window``, ``observation="compact"``) are keyword
arguments of ``dlsched/DeepRM-v0``.
Options are keyword arguments of ``gymnasium.make``::

    import gymnasium as gym
    import dlsched  # registers the ids (or: gym.make("dlsched:dlsched/DL2-v0"))

    env = gym.make("dlsched/DL2-v0", servers=13, load=1.0)
    env = gym.make("dlsched/DeepRM-v0", load=1.3, horizon_steps=50)

Registering stores only ``module:Class`` strings: no environment module (nor PyTorch) is
imported until ``gymnasium.make``.
"""

from __future__ import annotations

import gymnasium as gym

ENV_IDS: dict[str, tuple[str, dict[str, str]]] = {
    "dlsched/DL2-v0": ("dlsched.papers.dl2.env:Dl2Env", {"reward": "jct"}),
    "dlsched/DL2Slot-v0": ("dlsched.papers.dl2.slot_env:Dl2SlotEnv", {}),
    "dlsched/DeepRM-v0": ("dlsched.papers.deeprm.env:DeepRMEnv", {"reward": "slowdown"}),
    "dlsched/SCED2-v0": ("dlsched.papers.sched2.env:Sched2Env", {"reward": "jct"}),
}
"""Gymnasium id → (entry point, default keyword arguments)."""


def register_envs() -> None:
    """Register every id of `ENV_IDS` with Gymnasium (ids already registered are kept)."""
    for env_id, (entry_point, kwargs) in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry_point, kwargs=dict(kwargs))
