"""SCED²-L's queue kept between points (issue 31): at every scheduling point of runs with long
queues, promoted jobs, reservations and any parameters, the rule decides as the plain rule
(every waiting job keyed, the whole queue sorted, every candidate's packing tried), whether the
queue follows the view's changes or is rebuilt; its reservation scan (`ReservationScan`) finds
the job the plain scan (every old job checked in arrival order) finds; and its min-tree answers
as a linear scan."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.api import simulate
from dlsched.core import ClusterView, Decision
from dlsched.papers.sched2.lookahead import HOUR_S, LookaheadParams, LookaheadScheduler
from dlsched.papers.sched2.lookahead_queue import MinTree, RankedQueue
from dlsched.papers.sched2.reservation_scan import ReservationScan
from dlsched.schedulers.common import RoomCounts
from dlsched.schedulers.saf import pack_allocation
from dlsched.workloads.registry import make_workload
from tests.rl.test_sched2_lookahead_ranked import PARAMS, plain_decide

# the regime of the shipped rule on an overloaded Philly cluster: most jobs promoted soon,
# reservations early, one-server jobs that may not backfill on the reserved servers
BUSY = st.builds(
    LookaheadParams,
    gpu_exp=st.floats(0.0, 1.0),
    aging=st.floats(0.0, 1.0),
    slow_tol=st.floats(0.0, 0.5),
    patience=st.floats(0.0, 3.0),
    reserve_after_h=st.floats(0.0, 1.0),
    backfill=st.floats(0.0, 1.5),
    match=st.floats(0.0, 1.0),
    open_cost=st.floats(0.0, 1.0),
    promote_after=st.floats(0.0, 2.0),
)


def plain_reservation(
    s: LookaheadScheduler, queue: RankedQueue, free: list[list[float]], now: float
) -> int | None:
    """The reservation's job as the plain scan finds it: every job in arrival order while it
    has waited ``reserve_after_h``, the first that `LookaheadScheduler._startable` refuses."""
    for job in queue.arrival():
        if now - job.submit < s.params.reserve_after_h * HOUR_S:
            break
        if s._startable(RoomCounts(free), s._candidate(job.run, 0.0), now) is None:
            return job.job_id
    return None


class Checked(LookaheadScheduler):
    """Decides with the kept queue and checks it against the plain rule at every point;
    with ``forget`` set, hides the view's changes at some points (the queue is rebuilt)."""

    def __init__(self, params: LookaheadParams, forget: int = 0) -> None:
        super().__init__(params)
        self.forget = forget
        self.points = 0
        self.long_queue = 0
        self.promoted_walks = 0
        self.reservations = 0
        self.held_reservations = 0
        self.old_startable = 0

    def _reservation(self, queue, free, rooms, times, now, *packs):
        got = super()._reservation(queue, free, rooms, times, now, *packs)
        assert got[0] == plain_reservation(self, queue, free, now), now
        if got[0] is not None:
            self.reservations += 1
            spec = queue.jobs[got[0]].run.spec
            # it cannot start (checked above), yet its packing fits: it is held for locality
            held = pack_allocation([row[:] for row in free], spec, spec.num_workers, 0)
            self.held_reservations += held is not None
        self.old_startable += any(
            now - job.submit >= self.params.reserve_after_h * HOUR_S
            and self._startable(RoomCounts(free), self._candidate(job.run, 0.0), now) is not None
            for job in queue.arrival()
        )
        return got

    def decide(self, view: ClusterView) -> Decision:
        self.points += 1
        if self.forget and self.points % self.forget == 0:
            view = dataclasses.replace(view, changes=None)
        fast = super().decide(view)
        assert fast.targets == plain_decide(self, view).targets, view.now_s
        self.long_queue += len(view.pending) >= 30
        self.promoted_walks += any(lane.promoted for lane in self._queue.lanes.values())
        return fast


def _check(params: LookaheadParams, seed: int, servers: int, jobs: int, forget: int = 0) -> Checked:
    workload = make_workload("sched2", seed=seed, num_jobs=jobs, load=6.0, servers=servers)
    scheduler = Checked(params, forget)
    result = simulate(workload, scheduler, seed=seed)
    assert len(result.records) == len(workload.jobs)
    return scheduler


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=BUSY, seed=st.integers(0, 10_000), servers=st.integers(1, 3))
def test_kept_queue_decides_as_the_plain_rule_on_long_queues(params, seed, servers):
    scheduler = _check(params, seed, servers, jobs=150)
    assert scheduler.long_queue > 0  # the queue was long
    assert scheduler._queue.rebuilds == 1  # it followed the changes after the first point


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=PARAMS, seed=st.integers(0, 10_000), servers=st.integers(1, 3))
def test_kept_queue_decides_as_the_plain_rule_for_any_parameters(params, seed, servers):
    _check(params, seed, servers, jobs=80)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    params=BUSY,
    seed=st.integers(0, 10_000),
    servers=st.integers(1, 3),
    forget=st.integers(2, 7),
)
def test_rebuilt_queue_decides_as_the_plain_rule(params, seed, servers, forget):
    scheduler = _check(params, seed, servers, jobs=80, forget=forget)
    assert scheduler._queue.rebuilds > 1


# holds that last (patience up to 6 T_best, at most 2 % slowdown tolerated) and early reservations:
# the first blocked old job is often held, behind old jobs that could start
HOLDING = st.builds(
    LookaheadParams,
    gpu_exp=st.floats(0.0, 1.0),
    aging=st.floats(0.0, 1.0),
    slow_tol=st.floats(0.0, 0.02),
    patience=st.floats(0.5, 6.0),
    reserve_after_h=st.floats(0.0, 0.2),
    backfill=st.floats(0.0, 1.5),
    match=st.floats(0.0, 1.0),
    open_cost=st.floats(0.0, 1.0),
    promote_after=st.floats(0.0, 2.0),
)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=HOLDING, seed=st.integers(0, 10_000), servers=st.integers(1, 3))
def test_reservation_scan_finds_the_plain_scans_job(params, seed, servers):
    """At every point the indexed scan reserves for the job the plain scan reserves for."""
    scheduler = _check(params, seed, servers, jobs=120)
    assert scheduler.reservations > 0


def test_reservation_scan_skips_old_jobs_and_finds_held_ones():
    """The regime the index is for: old jobs that could start before the blocked one, and
    blocked jobs that fit but are held (both compared with the plain scan at every point)."""
    params = LookaheadParams(slow_tol=0.0, patience=3.0, reserve_after_h=0.05, promote_after=0.5)
    scheduler = _check(params, seed=1, servers=3, jobs=150)
    assert scheduler.reservations > 0 and scheduler.held_reservations > 0
    assert scheduler.old_startable > 0


def test_the_shipped_regime_walks_promoted_lanes():
    """With jobs promoted at once the walk goes through the lanes' trees (not a sorted queue)."""
    params = LookaheadParams(aging=0.5, reserve_after_h=0.2, backfill=0.5, promote_after=0.5)
    scheduler = _check(params, seed=3, servers=2, jobs=150)
    assert scheduler.promoted_walks > 0 and scheduler.long_queue > 0


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(
        st.one_of(st.floats(0.0, 100.0), st.just(math.inf), st.just(1.7976931348623157e308)),
        min_size=1,
        max_size=70,
    ),
    pos=st.integers(0, 80),
    thr=st.one_of(st.floats(0.0, 100.0), st.just(1.7976931348623157e308)),
    cleared=st.lists(st.integers(0, 69), max_size=10),
)
def test_min_tree_finds_the_first_value_at_most_thr(values, pos, thr, cleared):
    tree = MinTree(128)
    for i, v in enumerate(values):
        tree.set(i, v)
    for i in cleared:
        if i < len(values):
            tree.set(i, math.inf)
            values[i] = math.inf
    want = next((i for i in range(pos, len(values)) if values[i] <= thr), -1)
    assert tree.first(pos, thr) == want


class _Lane:
    """A lane as `ReservationScan` reads it (hashed by identity)."""

    def __init__(self) -> None:
        self.joined: list[SimpleNamespace] = []


@settings(max_examples=150, deadline=None)
@given(
    jobs=st.lists(
        st.tuples(
            st.floats(0.0, 100.0),  # submission time
            st.integers(0, 3),  # lane
            st.frozensets(st.integers(1, 3)),  # k on which the job is slow
            st.floats(0.0, 60.0),  # patience s
        ),
        max_size=30,
    ),
    packs=st.lists(st.one_of(st.none(), st.integers(1, 3)), min_size=4, max_size=4),
    steps=st.lists(
        st.tuples(st.floats(0.0, 50.0), st.floats(0.0, 80.0), st.lists(st.integers(0, 29))),
        min_size=1,
        max_size=6,
    ),
)
def test_reservation_scan_index_equals_the_plain_scan(jobs, packs, steps):
    """`ReservationScan` on lanes of synthetic jobs (each lane packs on its own ``k`` servers
    or not at all; jobs slow on some ``k``, with a patience), at growing times with jobs
    leaving in between: the first blocked old job in arrival order, as the plain scan."""
    lanes = [_Lane() for _ in range(4)]
    queue = SimpleNamespace(lanes={i: lane for i, lane in enumerate(lanes)}, rebuilds=0)
    waiting = []
    for job_id, (submit, lane, slow_on, patience) in enumerate(jobs):
        run = SimpleNamespace(slow_on=slow_on, patience=patience)
        job = SimpleNamespace(submit=submit, job_id=job_id, run=run, lane=lanes[lane], pos=0)
        job.pack = None if packs[lane] is None else SimpleNamespace(num_servers=packs[lane])
        lanes[lane].joined.append(job)
        waiting.append(job)
    scan = ReservationScan(lambda run, k: k in run.slow_on, lambda run: run.patience)
    now = 0.0
    for advance, limit_s, leaving in steps:
        now += advance
        for i in leaving:
            if i < len(waiting):
                waiting[i].pos = -1
        want = None
        for job in sorted(waiting, key=lambda j: (j.submit, j.job_id)):
            if job.pos < 0:
                continue
            if now - job.submit < limit_s:
                break
            slow = job.pack is not None and job.pack.num_servers in job.run.slow_on
            held = now - job.submit < job.run.patience and slow
            if job.pack is None or held:
                want = job
                break
        got = scan.first_blocked(queue, now, limit_s, lambda job: job.pack)  # type: ignore[arg-type]
        assert got is want
