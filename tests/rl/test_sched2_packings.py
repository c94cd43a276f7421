"""SCED²-L's per-point shortcuts of issue 31 (helper sl2m11), each against the direct
computation:

* `Packings`: every packing it hands out (to the reservation scan, a lane's status,
  `_startable`, and around the reserved servers to `_around`) equals `pack_allocation` on a
  fresh copy of the free rows at that moment (reserved rows zeroed), at
  every read of whole runs that decide as the plain rule; shapes are packed once between
  starts;
* `Lane.by_time` / `Lane.short_count`: after any joins and leaves, the sorted index holds the
  lane's waiting jobs and its prefix is exactly the jobs with ``not one_server_s > backfill_s``
  (NaN and infinite estimates and thresholds included);
* `RoomCounts` seeded from kept counts (`Cluster.fits`): each demand's counts equal
  `tasks_that_fit` over every row after any replaced rows.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.api import simulate
from dlsched.core import Allocation, Arch, JobSpec, Resources
from dlsched.papers.sched2 import lookahead
from dlsched.papers.sched2.lookahead_queue import Job, Lane, MinTree
from dlsched.papers.sched2.packings import Packings
from dlsched.schedulers.common import RoomCounts, tasks_that_fit
from dlsched.schedulers.saf import pack_allocation
from dlsched.workloads.registry import make_workload
from tests.rl.test_sched2_lookahead_queue import BUSY
from tests.rl.test_sched2_lookahead_ranked import PARAMS, Checked


class CheckedPackings(Packings):
    """`Packings` that checks each packing against a fresh one on copied rows."""

    reads = 0
    shared = 0  # reads answered from a packing made earlier between the same two starts
    outside_reads = 0

    def of(self, spec: JobSpec, workers: int | None = None) -> Allocation | None:
        g = spec.num_workers if workers is None else workers
        cached = (spec.worker_demand.as_tuple(), g) in self._by_shape
        got = super().of(spec, workers)
        fresh = pack_allocation([row[:] for row in self.rooms.free], spec, g, 0)
        assert got == fresh, (spec.job_id, g)
        type(self).reads += 1
        type(self).shared += cached
        return got

    def outside(self, spec: JobSpec, reserved: set[int]) -> Allocation | None:
        got = super().outside(spec, reserved)
        others = [
            [0.0, 0.0, 0.0] if s in reserved else row[:] for s, row in enumerate(self.rooms.free)
        ]
        assert got == pack_allocation(others, spec, spec.num_workers, 0), spec.job_id
        type(self).outside_reads += 1
        return got


def _run(
    params: lookahead.LookaheadParams, seed: int, servers: int, load: float
) -> tuple[int, int, int]:
    """Packings read, of them shared, and packings around reserved servers read, in a run
    checked against the plain rule."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lookahead, "Packings", CheckedPackings)
        mp.setattr(CheckedPackings, "reads", 0)
        mp.setattr(CheckedPackings, "shared", 0)
        mp.setattr(CheckedPackings, "outside_reads", 0)
        workload = make_workload("sched2", seed=seed, num_jobs=150, load=load, servers=servers)
        result = simulate(workload, Checked(params), seed=seed)  # decides as the plain rule
        assert len(result.records) == len(workload.jobs)
        assert CheckedPackings.reads > 0
        return CheckedPackings.reads, CheckedPackings.shared, CheckedPackings.outside_reads


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=PARAMS | BUSY, seed=st.integers(0, 10_000), servers=st.integers(1, 6))
def test_each_packing_equals_a_fresh_packing(params, seed, servers):
    _run(params, seed, servers, 6.0)


def test_packings_are_shared_between_starts():
    """The shipped rule's regime (reservations, held jobs): most reads are shared."""
    params = lookahead.LookaheadParams(reserve_after_h=0.22, backfill=0.98, promote_after=2.0)
    reads, shared, outside = _run(params, 2201, 4, 6.0)
    assert shared > reads / 4
    assert outside > 0


_ESTIMATE = st.floats(0.0, 1e6) | st.sampled_from([math.nan, math.inf, 0.0, 3600.0])


@settings(max_examples=200, deadline=None)
@given(
    estimates=st.lists(_ESTIMATE, min_size=0, max_size=40),
    leaving=st.sets(st.integers(0, 39)),
    thresholds=st.lists(_ESTIMATE, min_size=1, max_size=4),
)
def test_lane_index_prefix_is_the_short_jobs(estimates, leaving, thresholds):
    lane = Lane((1.0, 0.0, 0.0), 1, None, MinTree(64))
    jobs = [Job(None, 0.0, j, lane, 0.0, t, 0.0) for j, t in enumerate(estimates)]  # type: ignore[arg-type]
    for job in jobs:
        lane.wait(job)
    for job in jobs:
        if job.job_id in leaving:
            lane.unwait(job)
    waiting = {job.job_id: job for job in jobs if job.job_id not in leaving}
    assert lane.waiting == waiting
    assert sorted(j for _, j, _ in lane.by_time) == sorted(waiting)
    assert all(waiting[j] is job for _, j, job in lane.by_time)
    assert lane.by_time == sorted(lane.by_time)
    for backfill_s in thresholds:
        cut = lane.short_count(backfill_s)
        short = {j for j, job in waiting.items() if not job.one_server_s > backfill_s}
        assert {j for _, j, _ in lane.by_time[:cut]} == short


_amount = st.integers(0, 16).map(float) | st.floats(0.0, 16.0, allow_nan=False)
_row = st.lists(_amount, min_size=3, max_size=3)
_need = st.tuples(
    st.sampled_from([0.0, 1.0, 0.5, 2.0]),
    st.sampled_from([0.0, 1.0, 4.0, 0.3]),
    st.sampled_from([0.0, 2.0, 0.7]),
)


@settings(max_examples=200, deadline=None)
@given(
    free=st.lists(_row, min_size=1, max_size=12),
    steps=st.lists(
        st.tuples(_need, st.lists(st.tuples(st.integers(0, 11), _row), max_size=3)),
        min_size=1,
        max_size=5,
    ),
)
def test_room_counts_seeded_from_kept_counts_equal_a_fresh_count(free, steps):
    kept = [row[:] for row in free]  # what the kept counts were made from

    def counted(need: tuple[float, float, float]) -> list[int]:
        return [tasks_that_fit(row, need) for row in kept]

    rows = list(free)
    rooms = RoomCounts(rows, counted)
    for need, replaced in steps:
        assert rooms.of(need) == [tasks_that_fit(row, need) for row in rows]
        servers = [s % len(rows) for s, _ in replaced]
        for server, (_, row) in zip(servers, replaced, strict=True):
            rows[server] = row
        rooms.recount(servers)
        assert rooms.of(need) == [tasks_that_fit(row, need) for row in rows]


@settings(max_examples=200, deadline=None)
@given(
    free=st.lists(_row, min_size=1, max_size=10),
    need=_need,
    workers=st.integers(1, 12),
    reserved=st.sets(st.integers(0, 9), max_size=4),
    starts=st.lists(st.lists(st.tuples(st.integers(0, 9), _row), max_size=2), max_size=3),
)
def test_packings_between_starts_equal_fresh_packings(free, need, workers, reserved, starts):
    """`Packings.of` and `Packings.outside` asked again after each start (rows replaced,
    recounted, `changed`) equal packings of fresh copies of the rows at that moment."""
    spec = JobSpec(0, 0.0, "resnet-50", Arch.ALLREDUCE, 1.0, Resources(*need), num_workers=workers)
    rows = list(free)
    reserved = {s for s in reserved if s < len(rows)}
    rooms = RoomCounts(rows)
    packs = Packings(rooms)
    for replaced in [[], *starts]:
        servers = [s % len(rows) for s, _ in replaced]
        for server, (_, row) in zip(servers, replaced, strict=True):
            rows[server] = row
        if replaced:
            rooms.recount(servers)
            packs.changed()
        for _ in range(2):  # the second read comes from what was kept
            others = [[0.0, 0.0, 0.0] if s in reserved else r[:] for s, r in enumerate(rows)]
            assert packs.outside(spec, reserved) == pack_allocation(others, spec, workers, 0)
            fresh = pack_allocation([r[:] for r in rows], spec, workers, 0)
            assert packs.of(spec) == fresh
