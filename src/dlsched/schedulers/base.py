"""The scheduler contract every policy implements, heuristic or learned.

`Scheduler` is the contract: a name, two labels (`preemptive`, `is_oracle`), ``reset()`` and
``decide(view)``. `BaseScheduler` gives the labels and ``reset`` their defaults; subclass it.
`WrappingScheduler` is the one base for schedulers that wrap another (recorders, probes,
estimate-error injectors): it forwards the labels and ``reset``. Backends call
`check_scheduler` once and then use the contract directly, without probing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Protocol, runtime_checkable

from dlsched.core import ClusterView, Decision, JobSpec, Resources


@runtime_checkable
class Scheduler(Protocol):
    """A policy: reads a `ClusterView`, returns a `Decision`. It never changes cluster state.

    Attributes:
        name: registry name (``"drf"``).
        preemptive: if True the decision is the whole desired state each round: running jobs it
            leaves out are suspended and jobs it lists are resized to their targets (elastic, as
            DL2). If False, running jobs keep what they hold and only pending jobs are started.
        is_oracle: True if it reads hidden simulator truth (``view.oracle_speed``).
    """

    name: str
    preemptive: ClassVar[bool]
    is_oracle: ClassVar[bool]

    def reset(self) -> None:
        """Forget per-episode state (called by the backend before a run)."""

    def decide(self, view: ClusterView) -> Decision:
        """This scheduling point's decision, from what ``view`` shows."""
        ...


class BaseScheduler:
    """Convenience base: non-preemptive, not an oracle, and a ``reset`` hook per episode."""

    name: str = "base"
    preemptive: ClassVar[bool] = False
    is_oracle: ClassVar[bool] = False
    wake: ClassVar[str] = "every-point"
    """When the simulator asks it: ``"every-point"``; or ``"head-or-free"`` for a
    non-preemptive policy that, once it started nothing, would start nothing again until the
    first waiting job or the cluster's free resources change (FIFO with head-of-line
    blocking): the simulator then skips the points in between (as empty decisions, counted
    as such). Wrappers do not inherit it."""

    def reset(self) -> None:
        """Forget per-episode state (called by the simulator before a run)."""

    def cannot_run(self, jobs: Sequence[JobSpec], servers: Sequence[Resources]) -> str | None:
        """Why this policy could never run some of ``jobs`` on ``servers`` (one line), or None.

        `dlsched.runner.simulate` asks before a run and refuses it at once with this reason,
        rather than let the run crawl or stall (a learned policy's fixed state cannot show a
        job, or it has nothing to decide for these jobs). Most policies run anything: None."""
        return None

    def decide(self, view: ClusterView) -> Decision:  # pragma: no cover - abstract
        raise NotImplementedError


class WrappingScheduler(BaseScheduler):
    """A scheduler that wraps ``inner``: same name and labels, ``reset`` forwarded, and by
    default the same decisions (override `decide` to observe or change them)."""

    def __init__(self, inner: Scheduler) -> None:
        self.inner = check_scheduler(inner)
        self.name = inner.name
        # per instance: a wrapper is as preemptive and as much an oracle as what it wraps
        self.preemptive = inner.preemptive  # type: ignore[misc]
        self.is_oracle = inner.is_oracle  # type: ignore[misc]

    def reset(self) -> None:
        self.inner.reset()

    def cannot_run(self, jobs: Sequence[JobSpec], servers: Sequence[Resources]) -> str | None:
        return cannot_run(self.inner, jobs, servers)

    def decide(self, view: ClusterView) -> Decision:
        return self.inner.decide(view)


_CONTRACT = ("name", "preemptive", "is_oracle", "reset", "decide")


def check_scheduler(scheduler: object) -> Scheduler:
    """``scheduler`` if it has the whole contract, else TypeError saying what it lacks."""
    missing = [m for m in _CONTRACT if not hasattr(scheduler, m)]
    if missing:
        raise TypeError(
            f"{type(scheduler).__name__} is not a scheduler: it lacks {', '.join(missing)} "
            "(subclass dlsched.schedulers.base.BaseScheduler)"
        )
    if not callable(scheduler.decide) or not callable(scheduler.reset):  # type: ignore[attr-defined]
        raise TypeError(f"{type(scheduler).__name__}: decide and reset must be methods")
    return scheduler  # type: ignore[return-value]


def cannot_run(
    scheduler: Scheduler, jobs: Sequence[JobSpec], servers: Sequence[Resources]
) -> str | None:
    """``scheduler.cannot_run(jobs, servers)`` where it has one (`BaseScheduler.cannot_run`),
    else None: the method is not part of the `Scheduler` contract."""
    check = getattr(scheduler, "cannot_run", None)
    return check(jobs, servers) if callable(check) else None
