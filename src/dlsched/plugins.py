"""The one plugin table: where every scheduler, workload, experiment, ``train`` sub-command,
Gymnasium environment, card check and online learner is found.

`PLUGINS` lists one ``"module:attribute"`` string per plugin; each names a `Plugin` manifest,
itself only strings and one-line descriptions, so reading the table imports no policy, no
generator and no PyTorch. The layers below the papers read it on first use and name no paper:

* `dlsched.schedulers.registry` imports each plugin's ``scheduler_modules`` (each registers its
  schedulers with `dlsched.schedulers.registry.register`);
* `dlsched.workloads.registry` and `dlsched.experiments.registry` resolve ``module:function``
  targets only when a workload or experiment is built;
* `dlsched.cli` adds each ``train_commands`` entry as ``dlsched train NAME`` (its module is imported
  only when that command runs or help lists it, `dlsched.cli_lazy`);
* `dlsched.rl.registration` registers each ``envs`` entry with Gymnasium;
* `dlsched.rl.card_limits` runs the ``card_checks`` entry named by a card's ``algorithm``;
* `dlsched.live.online` builds ``--learn``'s scheduler from the ``online_learners`` entries.

Adding a paper: write its package (``dlsched/papers/example`` is the small template to start
from: a learned scheduler trained in seconds, its card check and its test), give it a
``PLUGIN`` manifest in its ``__init__.py``, and add the line ``"dlsched.papers.NAME:PLUGIN"``
to `PLUGINS`: nothing else outside its folder changes.

This module is read by the public API and CLI layer (the registries); the engine
(`dlsched.sim`, `dlsched.core`) never imports it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class WorkloadEntry:
    """A workload by name.

    Attributes:
        name: registry name (the part before ``:``).
        target: ``module:function`` building it; called as ``fn(arg, seed=…, servers=…, load=…)``
            for workloads taking an argument and ``fn(seed=…, servers=…, load=…)`` otherwise.
        takes_arg: whether the name carries an argument after ``:``.
        description: one line for ``dlsched list``.
    """

    name: str
    target: str
    takes_arg: bool
    description: str

    def function(self) -> Any:
        """The builder, imported now."""
        return resolve(self.target)


@dataclass(frozen=True)
class ExperimentEntry:
    """An experiment (``dlsched reproduce NAME``); ``target`` is ``module:function`` with the
    signature ``run(out_dir: Path, *, full: bool = False) -> list[Path]``."""

    name: str
    target: str
    description: str

    def function(self) -> Any:
        """The experiment's ``run``, imported now."""
        return resolve(self.target)


@dataclass(frozen=True)
class TrainCommand:
    """A ``dlsched train NAME`` sub-command; ``target`` is ``module:function``, a Typer command
    function (its parameters are the options)."""

    name: str
    target: str


@dataclass(frozen=True)
class EnvEntry:
    """A Gymnasium environment id (``gymnasium.make(id)``); nothing is imported until then.

    Attributes:
        id: the Gymnasium id (``"dlsched/DL2-v0"``).
        entry_point: ``module:Class`` of the environment.
        kwargs: default keyword arguments (a caller's keyword arguments override them).
        description: one line: what the environment is and what its default reward stands for.
    """

    id: str
    entry_point: str
    kwargs: dict[str, Any] = field(default_factory=dict, hash=False)
    description: str = ""


@dataclass(frozen=True)
class CardCheck:
    """The limits on a checkpoint card of one ``algorithm``, beyond the fields every card has
    (`dlsched.rl.card_limits.validate_card_data`).

    Attributes:
        algorithm: the card's ``algorithm`` field this check is for.
        target: ``module:function``, called as ``fn(data, hyper, where)`` with the parsed card,
            its ``hyperparams`` object and how to name the card; it raises a one-line
            ValueError for a wrong type or a network over the limits, allocating nothing.
    """

    algorithm: str
    target: str


@dataclass(frozen=True)
class OnlineLearnerEntry:
    """A scheduler that can keep learning on a live cluster (``dlsched live --learn``).

    Attributes:
        scheduler: the registered scheduler name it learns for (``"dl2"``).
        target: ``module:function`` called with the argument after ``NAME:`` (a checkpoint
            path) or None, returning a scheduler that implements
            `dlsched.live.online.OnlineLearning`.
    """

    scheduler: str
    target: str


@dataclass(frozen=True)
class Plugin:
    """What one plugin (a paper's package, or the built-in baselines) adds.

    Attributes:
        name: the plugin's name (for messages).
        scheduler_modules: modules that register schedulers when imported.
        workloads: workload entries.
        experiments: experiment entries.
        train_commands: ``dlsched train`` sub-commands.
        envs: Gymnasium environment ids.
        card_checks: checks of its checkpoints' cards, by ``algorithm``.
        online_learners: schedulers that learn on a live cluster.
    """

    name: str
    scheduler_modules: tuple[str, ...] = ()
    workloads: tuple[WorkloadEntry, ...] = ()
    experiments: tuple[ExperimentEntry, ...] = ()
    train_commands: tuple[TrainCommand, ...] = ()
    envs: tuple[EnvEntry, ...] = ()
    card_checks: tuple[CardCheck, ...] = ()
    online_learners: tuple[OnlineLearnerEntry, ...] = ()


BUILTIN = Plugin(
    name="builtin",
    scheduler_modules=tuple(
        f"dlsched.schedulers.{module}"
        for module in (
            "fifo",
            "drf",
            "srtf",
            "tetris",
            "optimus",
            "efficient_srtf",
            "sjf",
            "packer",
            "tetris_star",
            "random_policy",
            "sif",
            "dsif",
            "saf",
            "lrf",
            "spf",
            "kubeflow_dynamic",
            "kubeflow_static",
            "tiresias",
            "las",
            "pollux",
        )
    ),
    workloads=(
        WorkloadEntry(
            "pollux",
            "dlsched.workloads.pollux:make_pollux",
            False,
            "Pollux §5.3: 160 data-parallel jobs of 6 models on 16 nodes x 4 GPUs, goodput",
        ),
        WorkloadEntry(
            "kubeflow",
            "dlsched.workloads.kubeflow:make_kubeflow",
            False,
            "Kubeflow dynamic scheduler: prioritised jobs with min/max replicas on CPU nodes",
        ),
        WorkloadEntry(
            "philly",
            "dlsched.workloads.traces:load_philly",
            True,
            "Microsoft Philly trace (82,247 jobs, 2017); philly:VC for one virtual cluster",
        ),
        WorkloadEntry(
            "trace",
            "dlsched.workloads.traces:load_trace",
            True,
            "your CSV/Parquet trace: trace:PATH (submit_time, duration, num_gpus, …)",
        ),
    ),
    experiments=(
        ExperimentEntry(
            "pollux",
            "dlsched.experiments.pollux:run",
            "Pollux §5.3: avg JCT, 8 workloads × policies, and vs job load",
        ),
        ExperimentEntry(
            "kubeflow",
            "dlsched.experiments.kubeflow:run",
            "Kubeflow dynamic vs static scheduler on three workload mixes",
        ),
    ),
)
"""The heuristic schedulers and Pollux, the trace, Kubeflow and Pollux workloads, and their
experiments."""

PLUGINS: tuple[str, ...] = (
    "dlsched.papers.dl2:PLUGIN",
    "dlsched.papers.deeprm:PLUGIN",
    "dlsched.papers.sched2:PLUGIN",
    "dlsched.papers.example:PLUGIN",
    "dlsched.papers.gavel:PLUGIN",
    "dlsched.papers.hetero:PLUGIN",
    "dlsched.plugins:BUILTIN",
)
"""The plugin table: one ``module:attribute`` line per plugin, each naming a `Plugin`."""


def resolve(target: str) -> Any:
    """Import ``module`` and return its ``attribute`` from a ``module:attribute`` string."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


_loaded: tuple[Plugin, ...] | None = None


def plugins() -> tuple[Plugin, ...]:
    """Every plugin's manifest, in table order (imported once, on first call)."""
    global _loaded
    if _loaded is None:
        found = []
        for target in PLUGINS:
            plugin = resolve(target)
            if not isinstance(plugin, Plugin):
                raise TypeError(f"plugin table entry {target!r} is not a dlsched.plugins.Plugin")
            found.append(plugin)
        _loaded = tuple(found)
    return _loaded
