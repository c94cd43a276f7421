"""Gymnasium ids of the papers' environments, registered on ``import dlsched``.

Each paper declares its ids in its plugin manifest (``envs``, `dlsched.plugins.EnvEntry`: id,
``module:Class``, default keyword arguments, one line); `env_entries` lists them all
(for the built-in papers: ``dlsched/DL2-v0``, ``dlsched/DL2Slot-v0``, ``dlsched/DeepRM-v0``,
``dlsched/SCED2-v0``).

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

from dlsched.plugins import EnvEntry, plugins


def env_entries() -> list[EnvEntry]:
    """Every plugin's environment ids, in plugin-table order."""
    return [entry for plugin in plugins() for entry in plugin.envs]


def register_envs() -> None:
    """Register every plugin's environment ids with Gymnasium (ids already registered are
    kept)."""
    for entry in env_entries():
        if entry.id not in gym.registry:
            gym.register(entry.id, entry_point=entry.entry_point, kwargs=dict(entry.kwargs))


register_envs()
