"""The simulator's pending list: waiting jobs in arrival order, and how it changed.

Kept apart from `dlsched.sim.simulator` so that the list and its change log (what
`dlsched.core.QueueChanges` reports to policies at each scheduling point) change together.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from typing import overload

from dlsched.core import JobRun, JobSpec, QueueChanges
from dlsched.core.view import ReadOnlyList

_COMPACT_AT = 1024
"""Started jobs left before the head, at least, before the list drops them (and at least half
of it): starting the head is O(1), not a shift of the whole queue (tens of thousands of jobs
wait on a busy Philly cluster)."""


class PendingList(Sequence[JobRun]):
    """Submitted jobs holding no resources, in arrival order (submission time, then job id).

    Args:
        specs: every job of the run, in arrival order.
    """

    __slots__ = ("_head", "_index", "_keys", "_log", "_points", "_runs", "_token")

    def __init__(self, specs: Sequence[JobSpec]) -> None:
        # the jobs from ``_runs[_head]`` on; the ones before the head have started
        self._runs: list[JobRun] = []
        self._head = 0
        # each job's place in arrival order, in the list's order: what `remove` and a
        # preempted job's `add` bisect (keys computed once, compared in C)
        self._keys: list[int] = []
        self._index = {spec.job_id: i for i, spec in enumerate(specs)}
        self._log: list[tuple[JobRun, bool]] = []
        self._token = object()
        self._points = 0

    def __len__(self) -> int:
        return len(self._runs) - self._head

    @overload
    def __getitem__(self, index: int) -> JobRun: ...
    @overload
    def __getitem__(self, index: slice) -> list[JobRun]: ...
    def __getitem__(self, index: int | slice) -> JobRun | list[JobRun]:
        if type(index) is int and index >= 0:
            return self._runs[self._head + index]  # past the end raises IndexError as well
        return self.view()[index]

    def __iter__(self) -> Iterator[JobRun]:
        return iter(self.view())

    def view(self) -> ReadOnlyList:
        """The list as schedulers see it: read-only, valid until the next change."""
        return ReadOnlyList(self._runs, self._head)

    def add(self, run: JobRun) -> None:
        """The job arrived or was preempted."""
        self._log.append((run, True))
        runs, keys = self._runs, self._keys
        key = self._index[run.job_id]
        if not keys or keys[-1] < key:
            runs.append(run)  # an arrival, the usual case (also right when all have started)
            keys.append(key)
        else:
            i = bisect.bisect(keys, key, self._head)
            runs.insert(i, run)
            keys.insert(i, key)

    def remove(self, run: JobRun) -> None:
        """The job started."""
        self._log.append((run, False))
        runs, keys, head = self._runs, self._keys, self._head
        if runs[head] is run:  # the head, the usual case
            head = self._head = head + 1
            if head >= _COMPACT_AT and 2 * head >= len(runs):
                del runs[:head]
                del keys[:head]
                self._head = 0
        else:
            i = bisect.bisect_left(keys, self._index[run.job_id], head)
            del runs[i]
            del keys[i]

    def changes(self) -> QueueChanges:
        """What changed since the last call, as the next scheduling point's `QueueChanges`."""
        self._points += 1
        changes = QueueChanges(self._token, self._points, tuple(self._log))
        self._log.clear()
        return changes
