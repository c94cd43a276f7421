"""SCED²-L's per-point shortcuts (issue 31) give the same floats as the plain code:

* `LookaheadScheduler._free_times` keeps each running job's spec, placement and speed divisor
  and writes `JobRun.remaining_work` out inline: equal to `plain_free_times` (the estimate of
  every running job recomputed through `JobProfile.estimate_time_s`) for any job state, and at
  every point of whole runs;
* `Profiler.profile` draws every placement's mini-batches at once: equal to `plain_profile`,
  one placement at a time, for any job, noise, ``k`` and mini-batch count, and where a
  placement cannot train;
* the walk takes the jobs not promoted from a sorted list, keyed by lane as the lane's status
  lets them start (more of them after a start that loosens it): a run decides as one where they
  are all keyed and taken from a heap (the rule's order, kept where a key may be NaN), and as
  the plain rule at every point.
"""

from __future__ import annotations

import dataclasses
import hashlib
from types import SimpleNamespace
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.api import simulate
from dlsched.core import Allocation, Arch, ClusterView, Decision, JobRun, JobSpec, Resources
from dlsched.models.locality import Locality
from dlsched.papers.sched2 import lookahead
from dlsched.papers.sched2.lookahead import LookaheadParams, LookaheadScheduler
from dlsched.papers.sched2.lookahead_queue import Entry, RankedQueue
from dlsched.papers.sched2.lookahead_walk import Walk
from dlsched.papers.sched2.profiling import JobProfile, Profiler, profile_spans, spread_allocation
from dlsched.workloads.registry import make_workload
from tests.rl.test_sched2_lookahead_queue import BUSY, Checked
from tests.rl.test_sched2_lookahead_ranked import PARAMS


def plain_free_times(s: LookaheadScheduler, view: ClusterView) -> list[list[float]]:
    """`_free_times` as first written: every running job's estimate through its profile."""
    m, now = s.gpus_per_server, view.now_s
    free = view.cluster.free_array.tolist()
    times: list[list[float]] = [[0.0] * round(row[0]) for row in free]
    for run in view.running:
        prof = s._entry(run.spec)[1]
        left = prof.estimate_time_s(run.allocation.num_servers, run.remaining_work(now))
        for server, n in run.allocation.workers:
            times[server].extend([left] * n)
    for row in times:
        row.sort()
        del row[m:]
    return times


def plain_profile(p: Profiler, spec: JobSpec) -> JobProfile:
    """`Profiler.profile` as first written: each placement's mini-batches drawn in turn."""
    g = max(1, spec.num_workers)
    spans = profile_spans(g, p.gpus_per_server, p.k)
    rng = np.random.default_rng([p.seed, spec.job_id])
    speeds = []
    for span in spans:
        true = p.model.speed(spec, spread_allocation(g, span))
        if true <= 0:
            speeds.append(0.0)
            continue
        times = np.exp(p.noise * rng.standard_normal(p.minibatches)) / true
        speeds.append(float(1.0 / times.mean()))
    return JobProfile(spans, tuple(speeds), float(spec.total_work))


def _spec(job_id: int, gpus: int, work: float, model: str = "resnet-50") -> JobSpec:
    return JobSpec(
        job_id, 0.0, model, Arch.ALLREDUCE, work, Resources(1.0, 1.0, 1.0), num_workers=gpus
    )


TIMES = st.floats(0.0, 1e6)


@st.composite
def running_jobs(draw: st.DrawFn) -> tuple[float, list[JobRun]]:
    """A time and running jobs on 3 servers of 8 GPUs in any state: paused (a rescale's cost),
    not started yet, stopped (rate 0), past their work, mid-way."""
    now = draw(TIMES)
    runs = []
    for job_id in range(draw(st.integers(0, 6))):
        gpus = draw(st.sampled_from([1, 2, 4, 8]))
        servers = draw(st.sampled_from([k for k in (1, 2, 3) if k <= gpus]))
        work = draw(st.floats(1.0, 1e5))
        run = JobRun(_spec(job_id, gpus, work), spread_allocation(gpus, servers))
        run.rate = draw(st.sampled_from([0.0, -1.0, 0.5, 1.0]) | st.floats(0.0, 2.0))
        run.progress_s = draw(st.floats(0.0, 1.2) | st.just(1.0)) * work
        run.progress_time_s = draw(TIMES | st.just(now))
        run.paused_until_s = draw(st.just(0.0) | TIMES | st.just(run.progress_time_s))
        runs.append(run)
    return now, runs


def _view(now: float, runs: list[JobRun]) -> SimpleNamespace:
    """What `_free_times` reads of a view: the time, the free resources, the running jobs."""
    free = np.full((3, 3), 8.0)
    for run in runs:
        for server, n in run.allocation.workers:
            free[server] -= n
    cluster = SimpleNamespace(free_array=free, free_rows=free.tolist)
    return SimpleNamespace(now_s=now, cluster=cluster, running=runs)


@settings(max_examples=300, deadline=None)
@given(state=running_jobs(), later=st.floats(0.0, 1e5), moved=st.booleans())
def test_free_times_equal_the_plain_estimates_for_any_job_state(state, later, moved):
    now, runs = state
    s = LookaheadScheduler(LookaheadParams())
    view = _view(now, runs)
    assert s._free_times(view) == plain_free_times(s, view)  # type: ignore[arg-type]
    # later, with what it kept: the same jobs, one of them moved to another placement
    if moved and runs:
        runs[0].allocation = spread_allocation(runs[0].spec.num_workers, 1)
    view = _view(now + later, runs)
    assert s._free_times(view) == plain_free_times(s, view)  # type: ignore[arg-type]


class CheckedTimes(LookaheadScheduler):
    """Checks `_free_times` against `plain_free_times` at every point of a run."""

    checked = 0

    def _free_times(self, view: ClusterView, *free: list[list[float]]) -> list[list[float]]:
        fast = super()._free_times(view, *free)
        assert fast == plain_free_times(self, view), view.now_s
        self.checked += len(view.running) > 0
        return fast


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=BUSY, seed=st.integers(0, 10_000), servers=st.integers(1, 3))
def test_free_times_equal_the_plain_estimates_at_every_point(params, seed, servers):
    workload = make_workload("sched2", seed=seed, num_jobs=100, load=4.0, servers=servers)
    scheduler = CheckedTimes(params)
    simulate(workload, scheduler, seed=seed)
    assert scheduler.checked > 10


class Stalls(Locality):
    """A locality model under which some placements cannot train (speed 0 or below)."""

    def __init__(self, dead: frozenset[int]) -> None:
        super().__init__(gpus_per_server=8)
        self.dead = dead

    def speed(self, spec: JobSpec, alloc: Allocation) -> float:
        if alloc.num_servers in self.dead:
            return -0.5 if alloc.num_servers % 2 else 0.0
        return super().speed(spec, alloc)


@settings(max_examples=200, deadline=None)
@given(
    job_id=st.integers(0, 2**40),
    gpus=st.integers(0, 40),
    work=st.floats(1.0, 1e7),
    model=st.sampled_from(sorted(Locality(gpus_per_server=8).sensitivity)),
    k=st.integers(1, 6),
    minibatches=st.integers(1, 140),
    noise=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**31),
    dead=st.frozensets(st.integers(1, 8), max_size=3),
)
def test_profile_equals_one_placement_at_a_time(
    job_id, gpus, work, model, k, minibatches, noise, seed, dead
):
    profiler = Profiler(8, k=k, minibatches=minibatches, noise=noise, seed=seed, model=Stalls(dead))
    spec = _spec(job_id, gpus, work, model)
    assert profiler.profile(spec) == plain_profile(profiler, spec)


def test_profiles_of_a_philly_trace_equal_one_placement_at_a_time():
    jobs = make_workload("philly:6214e9", seed=0).jobs[:3000]
    profiler = Profiler(8, seed=0)
    assert all(profiler.profile(spec) == plain_profile(profiler, spec) for spec in jobs)


class NaNQueue(RankedQueue):
    """A queue that says a job with a NaN key joined: its walks keep a heap."""

    def _clear(self, size: int) -> None:
        super()._clear(size)
        self.nan_joined = 1


class HeapWalk(LookaheadScheduler):
    """Takes the jobs not promoted from a heap, as where a key may be NaN."""

    def _new_queue(self) -> RankedQueue:
        return NaNQueue(self._queued, self.params.promote_after, self.params.aging)


class Counted(LookaheadScheduler):
    """Counts the points at which the jobs not promoted were keyed (the sorted list used)."""

    keyed = 0

    def decide(self, view: ClusterView) -> Decision:
        before = self._queue.keyings
        decision = super().decide(view)
        self.keyed += self._queue.keyings > before
        return decision


class Recording(Walk):
    """A walk that logs the id of every job it yields (None: none left)."""

    log: ClassVar[list[int | None]] = []

    def next(self) -> Entry | None:
        entry = super().next()
        self.log.append(None if entry is None else entry[2])
        return entry


def _walked(
    scheduler: LookaheadScheduler, workload: Any, seed: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, list[int | None]]:
    """The sha256 of a run's records and every job its walks yielded, in order."""
    log: list[int | None] = []
    monkeypatch.setattr(lookahead, "Walk", Recording)
    monkeypatch.setattr(Recording, "log", log)
    result = simulate(workload, scheduler, seed=seed)
    return hashlib.sha256(repr(result.records).encode()).hexdigest(), log


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=PARAMS, seed=st.integers(0, 10_000), servers=st.integers(1, 4))
def test_sorted_walk_yields_as_the_heap(params, seed, servers):
    # no promotion: the jobs not promoted are the whole queue, keyed at every point
    params = dataclasses.replace(params, promote_after=1e6)
    workload = make_workload("sched2", seed=seed, num_jobs=120, load=6.0, servers=servers)
    counted, heap = Counted(params), HeapWalk(params)
    with pytest.MonkeyPatch.context() as mp:
        assert _walked(counted, workload, seed, mp) == _walked(heap, workload, seed, mp)
    assert counted.keyed > 10 and heap._queue.nan_joined


def test_a_lane_loosened_by_a_start_is_keyed_after_it(monkeypatch):
    """A run where a lane's status loosens after a start (a shape that fitted only on a
    reserved server must then span servers): the walks yield the jobs the heap yields, and
    decide as the plain rule at every point."""
    params = LookaheadParams(
        gpu_exp=0.85,
        aging=0.76,
        slow_tol=0.13,
        patience=1.5,
        reserve_after_h=0.22,
        backfill=0.98,
        promote_after=1e6,
    )
    workload = make_workload("sched2", seed=2201, num_jobs=150, load=6.0, servers=4)
    counted, heap = Counted(params), HeapWalk(params)
    assert _walked(counted, workload, 2201, monkeypatch) == _walked(
        heap, workload, 2201, monkeypatch
    )
    assert counted._queue.late_keyings > 0
    checked = Checked(params)
    simulate(workload, checked, seed=2201)
    assert checked._queue.late_keyings > 0
