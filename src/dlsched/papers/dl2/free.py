"""`ScratchFree`: the free resources per server that a DL2 slot hands out task by task.

Split from `dlsched.papers.dl2.state` (which builds the slot's state and masks from it).
"""

from __future__ import annotations

import numpy as np

from dlsched.core.cluster import tasks_that_fit

Need = tuple[float, float, float]
"""Resources of one task: (gpu, cpu, mem)."""


class ScratchFree:
    """Scratch copy of free resources per server; tasks go where most of them fit.

    Plain lists with a per-task-shape cache of how many tasks fit on each server, updated only
    for the server that changed (a policy takes tens of actions a slot), plus per shape the
    number of servers where one fits and the best server (recomputed only when it may have
    changed), so the legality checks of every action cost O(shapes), not O(servers).
    """

    def __init__(self, rows: list[list[float]]) -> None:
        self.rows = rows
        self.totals = [float(x) for x in np.asarray(rows).sum(axis=0)]
        self._fits: dict[Need, list[int]] = {}
        self._nfit: dict[Need, int] = {}  # servers where at least one task fits
        self._best: dict[Need, int] = {}  # best server (-1: none); absent when stale

    def fits(self, need: Need) -> list[int]:
        counts = self._fits.get(need)
        if counts is None:
            counts = self._fits[need] = [tasks_that_fit(row, need) for row in self.rows]
            self._nfit[need] = sum(1 for c in counts if c >= 1)
        return counts

    def best(self, need: Need) -> int | None:
        """Server where most tasks of ``need`` fit (lowest id on ties); None if none fits."""
        server = self._best.get(need)
        if server is None:
            counts = self.fits(need)
            most = max(counts)
            server = self._best[need] = counts.index(most) if most >= 1 else -1
        return server if server >= 0 else None

    def _change(self, server: int, need: Need, sign: float) -> None:
        row, totals = self.rows[server], self.totals
        g, c, m = sign * need[0], sign * need[1], sign * need[2]
        row[0] += g
        row[1] += c
        row[2] += m
        totals[0] += g
        totals[1] += c
        totals[2] += m
        for shape, counts in self._fits.items():
            old = counts[server]
            new = counts[server] = tasks_that_fit(row, shape)
            if new != old:
                self._nfit[shape] += (new >= 1) - (old >= 1)
                # a drop elsewhere than at the best server keeps the first maximum in place
                if new > old or self._best.get(shape) == server:
                    self._best.pop(shape, None)

    def place(self, need: Need) -> int | None:
        """Take one task of ``need`` where most fit; its server (-1 for no demand), or None."""
        if not (need[0] > 0 or need[1] > 0 or need[2] > 0):
            return -1
        server = self.best(need)
        if server is not None:
            self._change(server, need, -1.0)
        return server

    def undo(self, server: int, need: Need) -> None:
        if server >= 0:
            self._change(server, need, 1.0)

    def can_place(self, need: Need) -> bool:
        if not (need[0] > 0 or need[1] > 0 or need[2] > 0):
            return True
        nfit = self._nfit.get(need)
        if nfit is None:
            self.fits(need)
            nfit = self._nfit[need]
        return nfit > 0  # as `best(need) is not None`, without finding the best server

    def can_place_both(self, worker: Need, ps: Need) -> bool:
        """Whether a worker (placed first, as `place` would) and then a PS both fit."""
        if not (worker[0] > 0 or worker[1] > 0 or worker[2] > 0):
            return self.can_place(ps)
        if not self.can_place(worker):
            return False
        if not (ps[0] > 0 or ps[1] > 0 or ps[2] > 0):
            return True
        counts = self.fits(ps)
        # a worker takes room on one server only: with a PS fitting on two, one stays free
        if self._nfit[ps] != 1:
            return self._nfit[ps] > 1
        sw = self.best(worker)
        assert sw is not None
        if counts[sw] < 1:  # the PS fits on another server
            return True
        row = self.rows[sw]
        left = [row[r] - worker[r] for r in range(3)]
        return tasks_that_fit(left, ps) >= 1
