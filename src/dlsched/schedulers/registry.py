"""Every scheduler by name, with the setting it is meant for and where it comes from.

Names may carry an argument after a colon (``dl2:PATH`` loads another checkpoint). Each policy
module registers itself with `register`; `_MODULES` lists the modules to import.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from dlsched.schedulers.arguments import check_argument
from dlsched.schedulers.base import Scheduler

Factory = Callable[[str | None], Scheduler]


@dataclass(frozen=True)
class SchedulerEntry:
    """A registered scheduler.

    Attributes:
        name: registry name.
        factory: builds the scheduler from the argument after ``:`` (None without one).
        setting: the workloads it is meant for (``"elastic PS (dl2)"``, ``"fixed-GPU"``, ``"any"``).
        source: paper or system it comes from.
        description: one line for ``dlsched list``.
    """

    name: str
    factory: Factory
    setting: str
    source: str
    description: str


REGISTRY: dict[str, SchedulerEntry] = {}

_MODULES = (
    "dlsched.schedulers.fifo",
    "dlsched.schedulers.drf",
    "dlsched.schedulers.srtf",
    "dlsched.schedulers.tetris",
    "dlsched.schedulers.optimus",
    "dlsched.schedulers.efficient_srtf",
    "dlsched.schedulers.sjf",
    "dlsched.schedulers.packer",
    "dlsched.schedulers.tetris_star",
    "dlsched.schedulers.random_policy",
    "dlsched.schedulers.sif",
    "dlsched.schedulers.dsif",
    "dlsched.schedulers.saf",
    "dlsched.schedulers.lrf",
    "dlsched.schedulers.spf",
    "dlsched.schedulers.kubeflow_dynamic",
    "dlsched.schedulers.kubeflow_static",
    "dlsched.schedulers.tiresias",
    "dlsched.schedulers.las",
    "dlsched.schedulers.pollux",
    "dlsched.rl.deeprm_scheduler",
    "dlsched.rl.dl2_scheduler",
    "dlsched.rl.sched2_scheduler",
)


def register(
    name: str, *, setting: str, source: str, description: str
) -> Callable[[Factory], Factory]:
    """Decorator registering a factory (a class whose constructor takes no argument works too)."""

    def wrap(factory: Factory) -> Factory:
        REGISTRY[name] = SchedulerEntry(name, factory, setting, source, description)
        return factory

    return wrap


def _load() -> None:
    for module in _MODULES:
        importlib.import_module(module)


def schedulers() -> dict[str, SchedulerEntry]:
    """All registered schedulers, by name."""
    _load()
    return dict(sorted(REGISTRY.items()))


def make_scheduler(spec: str) -> Scheduler:
    """Build a scheduler from ``name`` or ``name:ARG``; ValueError listing choices if unknown."""
    _load()
    name, colon, arg = spec.partition(":")
    entry = REGISTRY.get(name)
    if entry is None:
        raise ValueError(f"unknown scheduler {name!r}; choose one of {', '.join(sorted(REGISTRY))}")
    check_argument(name, arg if colon else None)  # bounds; none for schedulers that take none
    return entry.factory(arg or None)
