"""Online learning from a live cluster (DL2's online phase, seed 000 §4.3) — the hook only.

The live loop gives a learning scheduler every slot's `ClusterView` and its `Decision`; the
scheduler turns the measured progress into rewards, updates its policy and saves it. Learned
schedulers that support this implement `OnlineLearning`; this module holds no RL code (DL2's
online phase is `dlsched.papers.dl2.online`, built here by `make_learning_scheduler`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from dlsched.core import ClusterView, Decision
from dlsched.schedulers.base import Scheduler

LEARNING_SCHEDULERS = ("dl2",)
"""Schedulers that ``--learn`` is meant for."""


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

    ``dl2`` (or ``dl2:PATH``) gives DL2's online-learning variant (`dlsched.papers.dl2.online`),
    starting from the shipped policy (or PATH); the registered ``dl2`` stays greedy.

    Raises:
        ValueError: naming what is missing.
    """
    from dlsched.schedulers.registry import make_scheduler, schedulers

    base = name.partition(":")[0]
    if base not in LEARNING_SCHEDULERS:
        raise ValueError(f"--learn needs --scheduler dl2 (online RL); {base!r} does not learn")
    if base not in schedulers():
        raise ValueError(f"--learn: no {base!r} scheduler is registered in this installation")
    if base == "dl2":
        from dlsched.papers.dl2.online import load_dl2_online

        arg = name.partition(":")[2]
        return load_dl2_online(arg or None)
    return make_scheduler(name)


def online_learner(scheduler: Scheduler, out_dir: Path | None) -> OnlineLearner:
    """The learner for ``--learn``.

    Raises:
        ValueError: if the scheduler is not one that learns online, or does not (yet) offer
            the `OnlineLearning` API.
    """
    base = scheduler.name.partition(":")[0]
    if base not in LEARNING_SCHEDULERS:
        raise ValueError(
            f"--learn needs --scheduler dl2 (online RL); {scheduler.name!r} does not learn"
        )
    if not isinstance(scheduler, OnlineLearning):
        raise ValueError(
            f"--learn: scheduler {scheduler.name!r} has no online-update API "
            "(observe_slot/save_policy) yet"
        )
    return OnlineLearner(scheduler, out_dir)
