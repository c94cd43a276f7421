"""The scheduler contract every policy implements, heuristic or learned."""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable

from dlsched.core import ClusterView, Decision


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

    def decide(self, view: ClusterView) -> Decision: ...


class BaseScheduler:
    """Convenience base: non-preemptive, not an oracle, and a ``reset`` hook per episode."""

    name: str = "base"
    preemptive: ClassVar[bool] = False
    is_oracle: ClassVar[bool] = False

    def reset(self) -> None:
        """Forget per-episode state (called by the simulator before a run)."""

    def decide(self, view: ClusterView) -> Decision:  # pragma: no cover - abstract
        raise NotImplementedError
