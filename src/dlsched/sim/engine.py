"""A tiny deterministic event core (in the spirit of SimPy's ``core.py``).

Events are ``(time_s, priority, seq, kind, payload)`` tuples in a heap: ties in time are broken by
priority, then by insertion order, so a run is a pure function of its inputs.
"""

from __future__ import annotations

import heapq
from enum import IntEnum
from typing import Any


class EventKind(IntEnum):
    """What happens, in the order events at the same instant are handled."""

    COMPLETION = 0
    ARRIVAL = 1
    TICK = 2
    RETRY = 3
    """Ask the scheduler again while jobs wait on an idle cluster (see `SimConfig.idle_retry_s`)."""


_KINDS = tuple(sorted(EventKind))
"""EventKind by value (indexing a tuple is much cheaper than calling the enum)."""


class EventQueue:
    """A priority queue of timed events with deterministic tie-breaking."""

    __slots__ = ("_heap", "_seq", "handled")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Any]] = []
        self._seq = 0
        self.handled = 0

    def push(self, time_s: float, kind: EventKind, payload: Any = None) -> None:
        """Schedule ``kind`` at ``time_s`` (seconds)."""
        self._seq += 1
        heapq.heappush(self._heap, (time_s, int(kind), self._seq, payload))

    def peek_time(self) -> float:
        """Time of the next event, or +inf if there is none."""
        return self._heap[0][0] if self._heap else float("inf")

    def pop(self) -> tuple[float, EventKind, Any]:
        """Remove and return the next ``(time_s, kind, payload)``."""
        time_s, kind, _, payload = heapq.heappop(self._heap)
        self.handled += 1
        return time_s, _KINDS[kind], payload

    def __len__(self) -> int:
        return len(self._heap)
