"""`KeyOrdered`: start pending jobs in the order of a sort key, non-preemptive (the list
schedulers SIF, SJF, LRF and SPF are each one `KeyOrdered` with its own key).

Rule: at every scheduling point, pending jobs are taken in increasing key order; each starts at
its requested size if it fits (the placement policy decides where), and jobs that do not fit are
skipped (work-conserving, `dlsched.schedulers.ordered.start_in_order`). The queue is kept sorted
between points (`PendingQueue`), not re-sorted at each, so a job's key is computed once, when it
starts waiting: it may depend on the job and on the cluster's total resources, not on the time.
When the total changes (another cluster), the queue is rebuilt with keys for the new total.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from dlsched.core import ClusterView, Decision, JobRun, Resources
from dlsched.schedulers.base import BaseScheduler
from dlsched.schedulers.ordered import requested_size, start_in_order
from dlsched.schedulers.pending_queue import Key, PendingQueue

SortKey = Callable[[JobRun, Resources], Key]
"""A waiting job's priority given the cluster's total resources, smallest first; it must end
with something unique per job (the job id) so that the order is total."""


class KeyOrdered(BaseScheduler):
    """Start pending jobs in ``key`` order, each at its requested size if it fits.

    Args:
        name: the registry name (``"sif"``).
        key: a waiting job's priority given the cluster total (`SortKey`).
    """

    preemptive: ClassVar[bool] = False

    def __init__(self, name: str, key: SortKey) -> None:
        self.name = name
        self.sort_key = key
        self._total = Resources()
        self.queue = PendingQueue(self._key, requested_size)

    def reset(self) -> None:
        self.queue.clear()

    def _key(self, run: JobRun, _now_s: float) -> Key:
        return self.sort_key(run, self._total)

    def decide(self, view: ClusterView) -> Decision:
        total = view.cluster.total
        if total != self._total:  # the keys held were computed for the old total
            self._total = total
            self.queue.clear()
        return start_in_order(view, self.queue.update(view))
