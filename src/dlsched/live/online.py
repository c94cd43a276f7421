"""Online learning from a live cluster (DL2's online phase, seed 000 §4.3) — the hook only.

The live loop gives a learning scheduler every slot's `ClusterView` and its `Decision`; the
scheduler turns the measured progress into rewards, updates its policy and saves it. Learned
schedulers that support this implement `OnlineLearning`; this module holds no RL code. A paper
declares its learning schedulers in its plugin manifest (``online_learners``,
`dlsched.plugins.OnlineLearnerEntry`: DL2's online phase is `dlsched.papers.dl2.online`), and
`make_learning_scheduler` builds them from there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from dlsched.core import ClusterView, Decision
from dlsched.plugins import OnlineLearnerEntry, plugins, resolve
from dlsched.schedulers.base import Scheduler


def learning_schedulers() -> dict[str, OnlineLearnerEntry]:
    """The schedulers ``--learn`` is meant for, by name (every plugin's ``online_learners``)."""
    return {entry.scheduler: entry for plugin in plugins() for entry in plugin.online_learners}


def _needs_learner(what: str) -> str:
    names = " or ".join(f"--scheduler {name}" for name in sorted(learning_schedulers()))
    return f"--learn needs {names or 'a learning scheduler'} (online RL); {what} does not learn"


@runtime_checkable
class OnlineLearning(Protocol):
    """A scheduler that keeps learning from live feedback.

    ``observe_slot`` is called after every decision with the view it decided from (progress and
    speeds as measured) and what it decided; ``save_policy`` writes the updated policy as a
    checkpoint directory ``path`` and returns the weights file written in it.
    """

    def observe_slot(self, view: ClusterView, decision: Decision) -> None: ...

    def save_policy(self, path: Path) -> Path: ...


class OnlineLearner:
    """Feeds a learning scheduler from the live loop and saves its policy at the end.

    Args:
        scheduler: the learning scheduler.
        out_dir: where the policy goes (checkpoint directory ``policy_online/``, loadable as
            ``--scheduler dl2:OUT/policy_online``; the working directory if None).
    """

    def __init__(self, scheduler: OnlineLearning, out_dir: Path | None) -> None:
        self.scheduler = scheduler
        self.path = (out_dir or Path.cwd()) / "policy_online"
        self.slots = 0

    def observe(self, view: ClusterView, decision: Decision) -> None:
        self.scheduler.observe_slot(view, decision)
        self.slots += 1

    def save(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return self.scheduler.save_policy(self.path)


def make_learning_scheduler(name: str) -> Scheduler:
    """Build ``name`` for ``--learn``: it must be a learning scheduler and registered.

    ``NAME`` (or ``NAME:PATH``) gives the online-learning variant its plugin declares (``dl2``:
    `dlsched.papers.dl2.online`), starting from the shipped policy (or PATH); the registered
    ``NAME`` stays greedy.

    Raises:
        ValueError: naming what is missing.
    """
    from dlsched.schedulers.registry import schedulers

    base, _, arg = name.partition(":")
    entry = learning_schedulers().get(base)
    if entry is None:
        raise ValueError(_needs_learner(repr(base)))
    if base not in schedulers():
        raise ValueError(f"--learn: no {base!r} scheduler is registered in this installation")
    scheduler: Scheduler = resolve(entry.target)(arg or None)
    return scheduler


def online_learner(scheduler: Scheduler, out_dir: Path | None) -> OnlineLearner:
    """The learner for ``--learn``.

    Raises:
        ValueError: if the scheduler is not one that learns online, or does not (yet) offer
            the `OnlineLearning` API.
    """
    base = scheduler.name.partition(":")[0]
    if base not in learning_schedulers():
        raise ValueError(_needs_learner(repr(scheduler.name)))
    if not isinstance(scheduler, OnlineLearning):
        raise ValueError(
            f"--learn: scheduler {scheduler.name!r} has no online-update API "
            "(observe_slot/save_policy) yet"
        )
    return OnlineLearner(scheduler, out_dir)
