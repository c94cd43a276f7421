"""Every scheduler by name, with the setting it is meant for and where it comes from.

Names may carry an argument after a colon (``dl2:PATH`` loads another checkpoint). Each policy
module registers itself with `register`; the modules to import are the ``scheduler_modules`` of
the plugins in `dlsched.plugins.PLUGINS`. A lookup by name first imports only the plugin modules
named after it (``fifo`` → ``dlsched.schedulers.fifo``, ``tetris-star`` → ``…tetris_star``,
``dl2`` → ``dlsched.papers.dl2.scheduler``, ``optimus-oracle`` → ``…optimus``), so that
``simulate -s fifo`` does not import every policy (SciPy's optimiser comes with SRTF and Optimus);
a name not registered by those, and every listing, imports them all. A plugin should therefore
not register a name already registered by the module named after that name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dlsched.core import JobSpec, Resources
from dlsched.plugins import plugins
from dlsched.schedulers.arguments import Check, check_argument
from dlsched.schedulers.base import Scheduler

Factory = Callable[[str | None], Scheduler]
Refusal = Callable[[str | None, Sequence[JobSpec], Sequence[Resources]], str | None]
"""``(argument after name:, jobs, servers) -> why it could never run them (one line), or None``:
what the built scheduler's `cannot_run` would say, asked without building it (no checkpoint
read; at most its card)."""


@dataclass(frozen=True)
class SchedulerEntry:
    """A registered scheduler.

    Attributes:
        name: registry name.
        factory: builds the scheduler from the argument after ``:`` (None without one).
        setting: the workloads it is meant for (``"elastic PS (dl2)"``, ``"fixed-GPU"``, ``"any"``).
        source: paper or system it comes from.
        description: one line for ``dlsched list``.
        argument: what the text after ``name:`` is and its check (None: the built-in table,
            `dlsched.schedulers.arguments.ARGUMENTS`, or no argument).
        refuses: its refusal asked before it is built (`refusal`), where it needs no
            checkpoint: a refused run then stops before PyTorch is even imported.
    """

    name: str
    factory: Factory
    setting: str
    source: str
    description: str
    argument: tuple[str, Check] | None = None
    refuses: Refusal | None = None


REGISTRY: dict[str, SchedulerEntry] = {}


def register(
    name: str,
    *,
    setting: str,
    source: str,
    description: str,
    argument: tuple[str, Check] | None = None,
    refuses: Refusal | None = None,
) -> Callable[[Factory], Factory]:
    """Decorator registering a factory (a class whose constructor takes no argument works too);
    ``argument``: (what the text after ``name:`` is, its check), for a factory that reads it;
    ``refuses``: `SchedulerEntry.refuses`."""

    def wrap(factory: Factory) -> Factory:
        REGISTRY[name] = SchedulerEntry(
            name, factory, setting, source, description, argument, refuses
        )
        return factory

    return wrap


_all_loaded = False


def _named_after(name: str) -> list[str]:
    """The plugin scheduler modules named after ``name``: whose last part, or whose package's,
    is the name or its part before the first ``-`` (with ``-`` read as ``_``)."""
    stems = {name.replace("-", "_"), name.partition("-")[0]}
    found = []
    for plugin in plugins():
        for module in plugin.scheduler_modules:
            parts = module.split(".")
            if parts[-1] in stems or (len(parts) > 1 and parts[-2] in stems):
                found.append(module)
    return found


def _load(name: str | None = None) -> None:
    """Import the scheduler modules that register ``name`` (`_named_after` first, then every
    plugin's), or every plugin's for None; each module is imported once."""
    global _all_loaded
    if _all_loaded or (name is not None and name in REGISTRY):
        return
    if name is not None:
        for module in _named_after(name):
            importlib.import_module(module)
        if name in REGISTRY:
            return
    for plugin in plugins():
        for module in plugin.scheduler_modules:
            importlib.import_module(module)
    _all_loaded = True


def import_policy(spec: str) -> None:
    """Import the module(s) registering the scheduler ``spec`` names, without building it (no
    checkpoint is read); an unknown name imports every plugin's modules and raises nothing."""
    _load(spec.partition(":")[0])


def schedulers() -> dict[str, SchedulerEntry]:
    """All registered schedulers, by name."""
    _load()
    return dict(sorted(REGISTRY.items()))


def made_for(spec: str) -> frozenset[str] | None:
    """The workload names a scheduler is meant for, read from its ``setting`` (the names in
    parentheses, ``"elastic PS (dl2)"`` → ``{"dl2"}``); None when a part says ``"any"``.

    Raises:
        ValueError: an unknown scheduler name.
    """
    name = spec.partition(":")[0]
    _load(name)
    entry = REGISTRY.get(name)
    if entry is None:
        raise ValueError(f"unknown scheduler {name!r}; choose one of {', '.join(sorted(REGISTRY))}")
    names: set[str] = set()
    for part in entry.setting.split(";"):
        if part.strip() == "any":
            return None
        inside = part.partition("(")[2].partition(")")[0]
        names.update(n.strip() for n in inside.split(",") if n.strip())
    return frozenset(names)


def refusal(spec: str, jobs: Sequence[JobSpec], servers: Sequence[Resources]) -> str | None:
    """Why the scheduler ``spec`` names could never run ``jobs`` on ``servers``, asked before
    it is built (`SchedulerEntry.refuses`); None when it does not say (or is unknown)."""
    name, colon, arg = spec.partition(":")
    _load(name)
    entry = REGISTRY.get(name)
    if entry is None or entry.refuses is None:
        return None
    return entry.refuses(arg if colon else None, jobs, servers)


def make_scheduler(spec: str) -> Scheduler:
    """Build a scheduler from ``name`` or ``name:ARG``; ValueError listing choices if unknown."""
    name, colon, arg = spec.partition(":")
    _load(name)
    entry = REGISTRY.get(name)
    if entry is None:
        raise ValueError(f"unknown scheduler {name!r}; choose one of {', '.join(sorted(REGISTRY))}")
    check_argument(name, arg if colon else None, entry.argument)  # bounds; none if it takes none
    return entry.factory(arg or None)
