"""Random: start pending jobs in a random order (DeepRM's reference point, §4.3).

Rule: at every scheduling point the pending jobs are shuffled with the scheduler's own seeded
generator, and each starts at its requested size if it fits; those that do not are skipped
(work-conserving, non-preemptive). ``random:SEED`` sets the seed (default 0); `reset` restarts
the generator, so a run is reproducible: same seed and workload, same schedule.

Each point still draws the whole permutation (that is the random stream every later point
depends on), but walks it visiting only the jobs of shapes that may still start
(`dlsched.schedulers.shuffled_walk`): the same starts as walking every job, at the cost of the
jobs that fit rather than the length of the queue. ``RandomOrder(fast=False)`` walks every job.

Source: Mao et al., DeepRM (HotNets 2016) §4.3 ("no better than a random allocation").
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from dlsched.core import ClusterView, Decision
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.ordered import start_in_order
from dlsched.schedulers.registry import register
from dlsched.schedulers.shuffled_walk import PendingShapes


class RandomOrder(BaseScheduler):
    """Work-conserving list scheduling in a random order.

    Args:
        seed: seed of ``numpy.random.default_rng``, the only randomness.
        fast: walk the permutation by shapes (`PendingShapes`); False: visit every job.
    """

    name = "random"
    preemptive: ClassVar[bool] = False

    def __init__(self, seed: int = 0, fast: bool = True) -> None:
        self.seed = seed
        self.fast = fast
        self.rng = np.random.default_rng(seed)
        self.shapes = PendingShapes()

    def reset(self) -> None:
        """Restart the generator: every episode sees the same random stream."""
        self.rng = np.random.default_rng(self.seed)
        self.shapes.clear()

    def decide(self, view: ClusterView) -> Decision:
        if self.fast:
            self.shapes.update(view)
        if not view.pending:
            return Decision()
        order = self.rng.permutation(len(view.pending))
        if self.fast:
            return self.shapes.start_in_order(view, order)
        return start_in_order(view, [view.pending[int(i)] for i in order])


@register(
    "random",
    setting="fixed-duration (deeprm); any",
    source="DeepRM §4.3",
    description="pending jobs in a seeded random order (random:SEED); work-conserving",
)
def _make(arg: str | None) -> Scheduler:
    if arg is None:
        return RandomOrder()
    try:
        return RandomOrder(int(arg))
    except ValueError:
        raise ValueError(f"random:SEED needs an integer seed, got {arg!r}") from None
