"""The previous point's choosing walk of `dlsched.schedulers.ordered.run_in_order`, kept so the
next point reuses whatever prefix of it is unchanged.

Why: a preemptive priority policy (LAS, SRTF, Tiresias) re-chooses every running job at every
point by placing it on a scratch copy of the emptied cluster, tens of placements a point that
nearly always come out as they did at the previous point (the same jobs in the same order).

Why it is exact: each step of the walk (does a job of this shape exceed what is left in total;
else does `FreeTracker.take` find room for it) depends only on the scratch state the walk
started from and on the shapes of the jobs visited before it: `take` places by the free
resources alone, whichever job asks. So where the start state is equal, float for float, and
the visited shapes agree up to step ``i``, steps ``0..i`` have the outcomes they had; the walk
resumes from the state saved after the last agreeing step and records the rest afresh.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Shape = tuple[Any, ...]
"""`dlsched.schedulers.pending_queue.Shape` (not imported: the queue holds a WalkMemo)."""

Row = Sequence[float]
"""One server's free (gpu, cpu, mem) in a scratch state (never changed in place)."""

EXCEEDS, TOOK, NO_ROOM = 0, 1, 2
"""Outcomes of one step: more than the summed free resources; placed; no server had room."""


class WalkMemo:
    """The steps of the last choosing walk: its start state and, per step, the job's shape,
    the outcome, and the scratch state after it (free rows and summed free resources)."""

    __slots__ = ("cluster", "free", "outcomes", "rows", "shapes", "start", "version")

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Forget the last walk (a new run)."""
        self.start: list[tuple[float, ...]] | None = None
        # the cluster and its `Cluster.version` when ``start`` was taken: while the version is
        # the same, nothing was taken or given back, so the emptied cluster is ``start`` again
        self.cluster: object = None
        self.version = -1
        self.shapes: list[Shape] = []
        self.outcomes: list[int] = []
        self.rows: list[list[Row]] = []
        self.free: list[tuple[float, float, float]] = []

    def record(
        self,
        start: list[tuple[float, ...]],
        shapes: list[Shape],
        outcomes: list[int],
        rows: list[list[Row]],
        free: list[tuple[float, float, float]],
    ) -> None:
        """Keep this point's walk for the next point."""
        self.start, self.shapes, self.outcomes, self.rows, self.free = (
            start,
            shapes,
            outcomes,
            rows,
            free,
        )
