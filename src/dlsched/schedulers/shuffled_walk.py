"""`start_in_order` over a permutation of the pending list, visiting only jobs that may start.

Why: `dlsched.schedulers.random_policy` draws a fresh permutation of the whole pending list at
every point and walks it; on a busy Philly virtual cluster thousands of jobs wait, almost none
of which fit, and visiting each of them in Python was the whole run (more than 240 s CPU on
``philly:6214e9``). The permutation itself must still be drawn, and in full, at every point:
it is what consumes the policy's random stream, so any other draw would change every later
decision.

How, without changing any decision: `PendingShapes` keeps each pending job's *shape* (task
demands and requested counts) in an array in the pending list's order, updated from the view's
`QueueChanges` (rebuilt from ``view.pending`` where there are none to follow). The walk looks
the shapes up for the whole permutation at once (NumPy) and visits, in permutation order, only
the jobs of shapes still *live*: `start_in_order` skips a job whose demand exceeds the summed
free resources, and those only shrink during a walk, so such a shape never fits again at this
point; nor does a shape without PS whose tasks found no room (whether ``take`` succeeds then
depends only on the shape and on what is free). Once no shape is live the walk stops. Each job
the walk does visit is checked exactly as `start_in_order` checks it, in the same order, on
the same scratch copy, so the starts are the same (`tests/schedulers/test_shuffled_walk.py`
compares the two at every point).
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from dlsched.core import ClusterView, Decision, JobRun
from dlsched.schedulers.common import FreeTracker, requested

_EPS = 1e-9
_RECHECK_SHAPES = 32
"""After a start, re-check every live shape against what is left while there are at most this
many (a shape that no longer fits then stops the walk early instead of being met job by job)."""
_FIRST_CHUNK = 64
"""The walk selects the live jobs of the permutation a stretch at a time, this long first and
twice as long each time after (most walks end within the first stretches)."""

ShapeKey = tuple[tuple[float, float, float], tuple[float, float, float], int, int]
"""(worker demand, PS demand, workers, PS) at the requested size."""


class _Mismatch(Exception):
    """The kept shapes no longer follow ``view.pending`` (found at a visited job)."""


class PendingShapes:
    """Each pending job's shape id, in ``view.pending``'s order, kept between points.

    The pending list's order is its arrival order (submission time, then job id), which is
    what joins and leaves are placed by; if a rebuild finds the list in another order, every
    later point rebuilds (correct, not fast).
    """

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Forget every job (a new run)."""
        self._keys: list[tuple[float, int]] = []
        self._ids = array("q")
        self._sids = array("i")
        self._ids_of_shape: dict[ShapeKey, int] = {}
        self._shapes: list[ShapeKey] = []
        self._needs: list[tuple[float, float, float]] = []
        self._count: dict[int, int] = {}  # shape id -> jobs of it pending
        self._run: object = None
        self._point = -1
        self._sorted = True
        self._free: tuple[object, int, tuple[float, ...]] | None = None  # cluster, version, sums
        self.rebuilds = 0
        """How many times the shapes were rebuilt from ``view.pending`` (for tests)."""

    # -- following the pending list --------------------------------------------------------

    def _shape_id(self, run: JobRun) -> int:
        spec = run.spec
        workers, ps = requested(spec)
        shape = (spec.worker_demand.as_tuple(), spec.ps_demand.as_tuple(), workers, ps)
        sid = self._ids_of_shape.get(shape)
        if sid is None:
            sid = self._ids_of_shape[shape] = len(self._shapes)
            self._shapes.append(shape)
            wd, pd = spec.worker_demand, spec.ps_demand
            self._needs.append(  # `start_in_order`'s demand, by the same float operations
                (
                    wd.gpu * workers + pd.gpu * ps,
                    wd.cpu * workers + pd.cpu * ps,
                    wd.mem * workers + pd.mem * ps,
                )
            )
        return sid

    def _add(self, run: JobRun) -> None:
        key = (run.spec.submit_time_s, run.job_id)
        keys = self._keys
        i = len(keys) if not keys or keys[-1] < key else bisect.bisect_left(keys, key)
        sid = self._shape_id(run)
        keys.insert(i, key)
        self._ids.insert(i, run.job_id)
        self._sids.insert(i, sid)
        self._count[sid] = self._count.get(sid, 0) + 1

    def _remove(self, run: JobRun) -> None:
        i = bisect.bisect_left(self._keys, (run.spec.submit_time_s, run.job_id))
        if i == len(self._ids) or self._ids[i] != run.job_id:
            raise _Mismatch
        del self._keys[i]
        del self._ids[i]
        sid = self._sids.pop(i)
        left = self._count[sid] - 1
        if left:
            self._count[sid] = left
        else:
            del self._count[sid]

    def rebuild(self, pending: Sequence[JobRun]) -> None:
        """Take the shapes afresh from ``pending``."""
        self.rebuilds += 1
        self._keys = [(run.spec.submit_time_s, run.job_id) for run in pending]
        self._ids = array("q", [run.job_id for run in pending])
        shape_id = self._shape_id
        self._sids = array("i", [shape_id(run) for run in pending])
        count: dict[int, int] = {}
        for sid in self._sids:
            count[sid] = count.get(sid, 0) + 1
        self._count = count
        keys = self._keys
        self._sorted = all(keys[i] < keys[i + 1] for i in range(len(keys) - 1))

    def update(self, view: ClusterView) -> None:
        """Follow ``view.pending``: its changes where they follow on from the last update,
        else afresh."""
        changes = view.changes
        pending = view.pending
        follow = (
            self._sorted
            and changes is not None
            and changes.run is self._run
            and changes.point in (self._point, self._point + 1)
        )
        if follow and changes is not None and changes.point == self._point + 1:
            try:
                for run, entered in changes.log:
                    if entered:
                        self._add(run)
                    else:
                        self._remove(run)
            except _Mismatch:
                follow = False
        ids = self._ids
        n = len(pending)
        agree = len(ids) == n and (
            not n or (ids[0] == pending[0].job_id and ids[-1] == pending[-1].job_id)
        )
        if not follow or not agree:
            self.rebuild(pending)
        if changes is None:
            self._run, self._point = None, -1
        else:
            self._run, self._point = changes.run, changes.point

    # -- the walk ----------------------------------------------------------------------------

    def start_in_order(self, view: ClusterView, order: npt.NDArray[np.int64]) -> Decision:
        """`dlsched.schedulers.ordered.start_in_order` of ``view.pending`` taken in ``order``
        (a permutation of its positions) at the requested sizes: the same decision. Call
        `update` first."""
        try:
            return self._walk(view, order)
        except _Mismatch:  # never expected: start again from the list itself
            self.rebuild(view.pending)
            return self._walk(view, order)

    def _walk(self, view: ClusterView, order: npt.NDArray[np.int64]) -> Decision:
        decision = Decision()
        cluster = view.cluster
        known = self._free
        if known is not None and known[0] is cluster and known[1] == cluster.version:
            total = known[2]  # nothing taken or given back since
        else:
            rows = cluster.free_rows()  # `FreeTracker.total`'s sums, in the same order
            total = tuple(sum(row[r] for row in rows) for r in range(3))
            self._free = (cluster, cluster.version, total)
        needs, shapes = self._needs, self._shapes
        live = [sid for sid in self._count if not _exceeds(needs[sid], total)]
        if not live:
            return decision  # nothing waiting fits in what is free
        tracker = FreeTracker(cluster)
        free = list(total)
        is_live = np.zeros(len(shapes), dtype=bool)
        is_live[live] = True
        live_set = set(live)
        by_position = np.frombuffer(self._sids, dtype=np.int32)
        pending, ids = view.pending, self._ids
        start, chunk, n = 0, _FIRST_CHUNK, len(order)
        while start < n and live_set:
            # the permutation's next stretch, its jobs of live shapes (most walks end early)
            stretch = order[start : start + chunk]
            start += chunk
            chunk *= 2
            stretch_sids = by_position[stretch]
            picked = np.flatnonzero(is_live[stretch_sids])
            for pos, sid in zip(
                stretch[picked].tolist(), stretch_sids[picked].tolist(), strict=True
            ):
                if sid not in live_set:
                    continue  # died earlier in this stretch
                run = pending[pos]
                if run.job_id != ids[pos]:
                    raise _Mismatch
                need = needs[sid]
                if _exceeds(need, free):
                    live_set.discard(sid)
                    is_live[sid] = False
                    continue
                _, _, workers, ps = shapes[sid]
                if tracker.take(run.spec, workers, ps):
                    decision.set(run.job_id, workers, ps)
                    free[0] -= need[0]
                    free[1] -= need[1]
                    free[2] -= need[2]
                    if len(live_set) <= _RECHECK_SHAPES:
                        for other in [s for s in live_set if _exceeds(needs[s], free)]:
                            live_set.discard(other)
                            is_live[other] = False
                    if not live_set:
                        break
                elif ps == 0:
                    live_set.discard(sid)
                    is_live[sid] = False
                    if not live_set:
                        break
        return decision


def _exceeds(need: tuple[float, float, float], free: Sequence[float]) -> bool:
    """`dlsched.schedulers.ordered`'s test, the same comparisons."""
    return need[0] > free[0] + _EPS or need[1] > free[1] + _EPS or need[2] > free[2] + _EPS
