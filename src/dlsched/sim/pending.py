"""The simulator's pending list: waiting jobs in arrival order, and how it changed.

Kept apart from `dlsched.sim.simulator` so that the list and its change log (what
`dlsched.core.QueueChanges` reports to policies at each scheduling point) change together.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from dlsched.core import JobRun, JobSpec, QueueChanges


class PendingList:
    """Submitted jobs holding no resources, in arrival order (submission time, then job id).

    Args:
        specs: every job of the run, in arrival order.

    Attributes:
        runs: the list itself (the simulator's ``pending``; schedulers see it read-only).
    """

    __slots__ = ("_index", "_keys", "_log", "_points", "_token", "runs")

    def __init__(self, specs: Sequence[JobSpec]) -> None:
        self.runs: list[JobRun] = []
        # each job's place in arrival order, in the list's order: what `remove` and a
        # preempted job's `add` bisect (keys computed once, compared in C)
        self._keys: list[int] = []
        self._index = {spec.job_id: i for i, spec in enumerate(specs)}
        self._log: list[tuple[JobRun, bool]] = []
        self._token = object()
        self._points = 0

    def add(self, run: JobRun) -> None:
        """The job arrived or was preempted."""
        self._log.append((run, True))
        runs, keys = self.runs, self._keys
        key = self._index[run.job_id]
        if not keys or keys[-1] < key:
            runs.append(run)  # an arrival, the usual case
            keys.append(key)
        else:
            i = bisect.bisect(keys, key)
            runs.insert(i, run)
            keys.insert(i, key)

    def remove(self, run: JobRun) -> None:
        """The job started."""
        self._log.append((run, False))
        runs, keys = self.runs, self._keys
        if runs[0] is run:
            del runs[0]  # the head, the usual case
            del keys[0]
        else:
            i = bisect.bisect_left(keys, self._index[run.job_id])
            del runs[i]
            del keys[i]

    def changes(self) -> QueueChanges:
        """What changed since the last call, as the next scheduling point's `QueueChanges`."""
        self._points += 1
        changes = QueueChanges(self._token, self._points, tuple(self._log))
        self._log.clear()
        return changes
