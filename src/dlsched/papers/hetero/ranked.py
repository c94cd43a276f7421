"""`hetero-score`'s choice without scoring every waiting job at every point (issue 31).

The plain rule (`dlsched.papers.hetero.policy.choose`) scores every (active job, GPU type) pair,
sorts them all and takes pairs in that order while their type has GPUs left. On Philly's
virtual clusters thousands of jobs wait, so each point cost the length of the queue.
`RankedPairs` gives the same pairs in the same order from kept state:

* Taking pairs in decreasing score while they fit is the same as taking, again and again, the
  best pair that still fits (its job not taken, its size at most its type's GPUs left): the
  GPUs left only shrink, so a pair passed over for want of room never fits later that point.
  So the waiting pairs are kept in one heap per (type, size) and only heaps that fit are read.
* A waiting job's features do not change while it waits, except its wait (non-decreasing) and,
  on a heterogeneous cluster, the mean in its advantage (the same for every job of the type).
  With the wait's weight at most 0 (the shipped policy's is -1.20) its score can only fall, so
  the score computed when its entry was last pushed, plus a margin far above the rounding of
  every float involved, bounds its score at any later point, once the type's mean is allowed
  for. Heaps are ordered by that bound.
* On a heterogeneous cluster the running jobs (at most one per GPU) are scored exactly at
  each point. A waiting pair is looked at only while its bound reaches the best exact score
  that still fits: it is then re-bounded at the current time (pushed back if that falls below)
  or scored exactly. Exact scores are computed by the plain rule's own code
  (`features_given_mean`, the same matrix product) on those jobs alone, so they are the same
  floats: every comparison that decides is one between the plain rule's floats, ties by
  arrival then type order as there.
* On a cluster of one GPU type the running jobs are bounded instead (`dlsched.papers.hetero.
  running`: NumPy, each within a margin of its exact score) and a waiting pair bounded again
  now is within such a margin too: a pair is taken unscored where its lower bound clears
  every other pair's upper bound (it is then the next pair of the plain order), and scored
  exactly only where bounds overlap (`dlsched.papers.hetero.walk`).

The advantage's mean is a sum over every active job in arrival order: on a heterogeneous
cluster `_Active` keeps the rows it sums (each job's own floats) in that order and sums them as
the plain rule does. A view without `ClusterView.changes` (the live runtime) or a wait weight
above 0 is served by the plain rule.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dlsched.core import ClusterView, JobRun
from dlsched.papers.hetero.features import (
    Array,
    features_from_parts,
    gpu_types,
)
from dlsched.papers.hetero.pairs import Entry, KeptJob
from dlsched.papers.hetero.running import SLACK as _SLACK
from dlsched.papers.hetero.running import RunningScores
from dlsched.papers.hetero.walk import WAIT as _WAIT
from dlsched.papers.hetero.walk import Walk


class _Active:
    """Every active job's `relative_speeds` row in arrival order, and how many have a speed
    on each type: the plain rule's sum, computed on the same array."""

    def __init__(self, num_types: int) -> None:
        self.keys: list[tuple[float, int]] = []
        self.rows = np.zeros((0, num_types))
        self.counts = np.zeros(num_types, dtype=np.int64)
        self.ids: set[int] = set()

    def add(self, job: KeptJob) -> None:
        i = bisect.bisect(self.keys, job.key)
        self.keys.insert(i, job.key)
        self.rows = np.insert(self.rows, i, job.relative, axis=0)
        self.counts += job.positive[0]
        self.ids.add(job.key[1])

    def remove(self, job: KeptJob) -> None:
        i = bisect.bisect_left(self.keys, job.key)
        del self.keys[i]
        self.rows = np.delete(self.rows, i, axis=0)
        self.counts -= job.positive[0]
        self.ids.discard(job.key[1])

    def mean(self) -> Array:
        return self.rows.sum(axis=0) / np.maximum(self.counts, 1)


class RankedPairs:
    """The kept state of `TypeScore`'s fast path; `choose` is the plain `choose`'s answer.

    Args:
        weights: the policy's six weights (the wait's at most 0).
    """

    def __init__(self, weights: Array) -> None:
        self.weights = weights
        self.w = [float(x) for x in weights]
        if not self.w[_WAIT] <= 0.0:
            raise ValueError("RankedPairs needs a wait weight of at most 0")
        self.clear()

    def clear(self) -> None:
        """Forget every job (a new run)."""
        self.jobs: dict[int, KeptJob] = {}
        self.heaps: dict[tuple[int, int], list[Entry]] = {}
        self.types: tuple[str, ...] = ()
        self.speeds: Any = None
        self.active: _Active | None = None
        self.bounds: RunningScores | None = None
        """The running jobs' bounded scores, on a cluster of one GPU type."""
        self.running: list[JobRun] = []
        self.first_submit = math.inf
        self.run_token: object = None
        self.point = -1
        self.whole = True
        """Every job seen asks whole amounts of each resource and no parameter server."""
        self.rebuilds = 0
        """How many times the state was rebuilt from the view (for tests)."""
        self.exact_scored = 0
        """Waiting jobs scored exactly so far (for tests and profiles)."""
        self.stayers = 0
        """How many running jobs the last `choose` took without scoring them (each stays
        where it runs: `ChangesOnly.place`); `walk` says which."""
        self.walk: Walk | None = None
        """The last `choose`'s walk."""
        self._gpus_of: object = None  # the cluster `_gpus` (GPUs per type) was read from
        self._gpus: list[int] = []
        self._no_mean = np.zeros(0)  # per type, the mean without speeds: 0 (read only)

    def update(self, view: ClusterView) -> bool:
        """Follow ``view``'s changes (rebuilding where they do not follow on from the last
        point); False if the view has none (then only the plain rule can decide)."""
        changes = view.changes
        if changes is None:
            self.run_token = None  # the next view with changes rebuilds
            return False
        types = gpu_types(view)
        if (
            changes.run is not self.run_token
            or changes.point < self.point
            or changes.point > self.point + 1
            or types != self.types
            or view.type_speeds is not self.speeds
        ):
            self._rebuild(view, types)
        elif changes.point == self.point + 1:
            for run, entered in changes.log:
                if entered:
                    self._enter(run, view)
                else:
                    self.jobs[run.job_id].waiting = False
            self._forget_finished(changes.log)
        self.run_token, self.point = changes.run, changes.point
        self.running = list(view.running)
        return True

    def _rebuild(self, view: ClusterView, types: tuple[str, ...]) -> None:
        self.clear()
        self.rebuilds += 1
        self.types, self.speeds = types, view.type_speeds
        self._no_mean = np.zeros(len(types))
        if len(types) == 1:
            self.bounds = RunningScores(self.w)
        if self.speeds is not None:
            self.active = _Active(len(types))
            for run in view.jobs():
                self.active.add(self._job(run))
        for run in view.running:
            self._job(run)
        for run in view.pending:
            self._enter(run, view)

    def _job(self, run: JobRun) -> KeptJob:
        job = self.jobs.get(run.job_id)
        if job is not None and job.run.spec is run.spec:
            job.run = run
        else:
            speeds = self.speeds
            if speeds is None:
                rates = [1.0] * len(self.types)
            else:
                of = speeds.of(run.spec)
                rates = [float(of.get(t, 0.0)) for t in self.types]
            job = self.jobs[run.job_id] = KeptJob(run, rates, self.w)
            spec = run.spec
            self.whole = self.whole and (
                spec.num_ps == 0
                and not any(spec.ps_demand.as_tuple())
                and all(float(x).is_integer() for x in spec.worker_demand.as_tuple())
            )
        return job

    def _enter(self, run: JobRun, view: ClusterView) -> None:
        job = self._job(run)
        now = view.now_s
        if self.active is not None and run.job_id not in self.active.ids:
            self.active.add(job)  # an arrival (a preempted job is active already)
        job.enter(run, now, self.w)
        self.first_submit = min(self.first_submit, job.submit)
        waited = self.w[_WAIT] * math.log1p(max(0.0, now - job.submit))
        for k in job.kinds:
            bound = job.static[k] + waited + _SLACK * job.mag[k]
            heap = self.heaps.setdefault((k, job.need), [])
            heapq.heappush(heap, (-bound, job.submit, run.job_id, job.stamp, job))

    def _forget_finished(self, log: Sequence[tuple[JobRun, bool]]) -> None:
        """Drop the jobs that finished since the last point from `_Active`: they ran then,
        or started after it (at its decision: the log says they left the queue)."""
        if self.active is None:
            return
        ids = self.active.ids
        for run in [*self.running, *(run for run, entered in log if not entered)]:
            if run.finish_s is not None and run.job_id in ids:
                self.active.remove(self.jobs[run.job_id])

    def _exact(self, view: ClusterView, jobs: Sequence[KeptJob], mean: Array) -> list[list[float]]:
        """The plain rule's scores of ``jobs``' pairs: `features_given_mean`'s parts, each from
        the same operations (sizes and where a job runs kept), and the same product."""
        if self.speeds is None:
            rates = np.ones((len(jobs), len(self.types)))
        else:
            rates = np.array([job.rates for job in jobs], float)
        now = view.now_s
        server_types = view.cluster.server_types
        here = []
        remaining: list[float] = []
        waited: list[float] = []
        log1p = math.log1p
        for i, job in enumerate(jobs):
            run = job.run
            alloc = run.allocation
            if alloc is not job.alloc:
                job.alloc = alloc
                workers = alloc.workers
                job.here = -1
                if workers:
                    where = server_types[workers[0][0]] if server_types else self.types[0]
                    job.here = self.types.index(where)
            if job.here >= 0:
                here.append((i, job.here))
            # `JobRun.remaining_work(now)` inlined, each max and min kept as the same choice
            start = run.progress_time_s
            paused = run.paused_until_s
            if paused > start:
                start = paused
            rate = run.rate
            total = job.total
            if rate <= 0.0 or now <= start:
                done = run.progress_s
            else:
                done = run.progress_s + rate * (now - start)
                if not done < total:
                    done = total
            left = total - done
            remaining.append(left if left > 0.0 else 0.0)
            since = now - job.submit
            waited.append(log1p(since if since > 0.0 else 0.0))
        features = features_from_parts(
            rates, mean, np.array(remaining), here, waited, [job.size for job in jobs]
        )
        scores: Array = features @ self.weights
        return scores.tolist()

    def choose(self, view: ClusterView) -> list[tuple[JobRun, str]]:
        """The plain `choose`'s pairs, in its order (call `update` first), less the `stayers`
        (`stayer_pairs`)."""
        cluster = view.cluster
        types = self.types
        if cluster is not self._gpus_of:  # a cluster's capacities do not change
            gpus = cluster.gpus_by_type() or {types[0]: int(cluster.total.gpu)}
            self._gpus = [int(gpus.get(t, 0)) for t in types]
            self._gpus_of = cluster
        mean = self._no_mean if self.active is None else self.active.mean()
        walk = Walk(self, view, list(self._gpus), mean)
        chosen = walk.run()
        self.walk = walk
        self.stayers = walk.stayer_count()
        return chosen

    def stayer_pairs(self) -> list[tuple[JobRun, str]]:
        """The pairs of the last `choose`'s `stayers` (each on the one type)."""
        if self.walk is None:
            return []
        t = self.types[0]
        return [(run, t) for run in self.walk.stayer_runs()]

    def left_out(self) -> list[JobRun] | None:
        """The running jobs the last `choose` left out, in no order (`Walk.left_out`)."""
        return None if self.walk is None else self.walk.left_out()
