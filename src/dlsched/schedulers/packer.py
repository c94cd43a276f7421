"""Packer (DeepRM §4.1's comparable): start the pending job best aligned with free resources.

Rule: repeatedly start the pending job whose demand vector has the largest dot product with the
free resources (Tetris' packing heuristic; both vectors as fractions of the cluster's capacity,
so each resource weighs the same), among jobs that fit, until none fits. Work-conserving and
non-preemptive. DeepRM's text says "increasing order of alignment"; its code
(``other_agents.get_packer_action``) and Tetris pick the *highest* alignment first, as here.

Sources: Mao et al., DeepRM (HotNets 2016) §4.1; Grandl et al., Tetris (SIGCOMM 2014) §3.2.
"""

from __future__ import annotations

from typing import ClassVar

from dlsched.core import ClusterView, Decision, JobRun
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.ordered import alignment, start_greedy
from dlsched.schedulers.registry import register


class Packer(BaseScheduler):
    """Best alignment of demand with free resources first."""

    name = "packer"
    preemptive: ClassVar[bool] = False

    def decide(self, view: ClusterView) -> Decision:
        total = view.cluster.total.as_tuple()

        def score(runs: list[JobRun], free: tuple[float, float, float]) -> list[float]:
            return [alignment(run, free, total) for run in runs]

        return start_greedy(view, view.pending, score)


@register(
    "packer",
    setting="fixed-duration (deeprm)",
    source="DeepRM §4.1 (Tetris packing)",
    description="largest demand·free alignment first; work-conserving, non-preemptive",
)
def _make(_arg: str | None) -> Scheduler:
    return Packer()
