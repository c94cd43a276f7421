"""SCED²-L ranks the waiting queue with a heap and skips jobs that cannot fit (issue 31): at
every scheduling point of runs with a long queue its decision equals the plain rule's (every
waiting job keyed, the whole queue sorted, every candidate's packing tried), for any
parameters."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.api import simulate
from dlsched.core import ClusterView, Decision, Target
from dlsched.papers.sched2.lookahead import (
    HOUR_S,
    LookaheadParams,
    LookaheadScheduler,
    _Candidate,
    _take,
)
from dlsched.schedulers.common import RoomCounts
from dlsched.workloads.registry import make_workload

PARAMS = st.builds(
    LookaheadParams,
    gpu_exp=st.floats(0.0, 2.0),
    aging=st.floats(0.0, 2.0),
    slow_tol=st.floats(0.0, 1.0),
    patience=st.floats(0.0, 5.0),
    reserve_after_h=st.floats(0.0, 3.0),
    backfill=st.floats(0.0, 2.0),
    match=st.floats(0.0, 3.0),
    open_cost=st.floats(0.0, 2.0),
    promote_after=st.floats(0.0, 20.0),
)


def plain_decide(s: LookaheadScheduler, view: ClusterView) -> Decision:
    """The rule as first written: every waiting job a candidate, both orders sorted in full."""
    decision = Decision()
    if not view.pending:
        return decision
    p, m, now = s.params, s.gpus_per_server, view.now_s
    free = view.cluster.free_array.tolist()
    free_gpus = sum(row[0] for row in free)
    cands = []
    for run in view.pending:
        prof = s.profiler.profile(run.spec)
        g = max(1, run.spec.num_gpus)
        best_s = max(prof.times_s[0], 1.0)
        wait_h = max(0.0, now - run.spec.submit_time_s) / HOUR_S
        key = math.log(best_s) + p.gpu_exp * math.log(g) - p.aging * math.log1p(wait_h)
        if wait_h * HOUR_S >= p.promote_after * best_s:
            key = -1e9 + run.spec.submit_time_s / HOUR_S
        cands.append(_Candidate(run, prof, best_s, math.ceil(g / m), key))
    cands.sort(key=lambda c: (c.key, c.run.spec.submit_time_s, c.run.job_id))
    times = s._free_times(view)
    reserved: set[int] = set()
    until, target = math.inf, None
    for c in sorted(cands, key=lambda c: (c.run.spec.submit_time_s, c.run.job_id)):
        if now - c.run.spec.submit_time_s < p.reserve_after_h * HOUR_S:
            break
        if s._startable(RoomCounts(free), c, now) is None:
            target = c.run.job_id
            until, reserved = s._reserve(times, max(1, c.run.spec.num_gpus), c.best_span, m)
            break
    for c in cands:
        if free_gpus < 0.5:
            break
        spec = c.run.spec
        alloc = None if spec.job_id == target else s._startable(RoomCounts(free), c, now)
        if alloc is not None and alloc.num_servers == 1:
            alloc = s._one_server(RoomCounts(free), times, c, reserved, until)
        elif alloc is not None and reserved:
            alloc = s._around(free, c, alloc, reserved, until)
        if alloc is None:
            continue
        est = c.profile.estimate_time_s(alloc.num_servers)
        _take(free, alloc, spec.worker_demand.as_tuple())
        for server, n in alloc.workers:
            row = times[server]
            for i in range(min(n, len(row))):
                row[i] = est
            row.sort()
        free_gpus -= spec.num_gpus
        decision.targets[c.run.job_id] = Target(alloc.num_workers, 0, alloc)
    return decision


class Checked(LookaheadScheduler):
    """Decides with the fast rule and checks it against the plain one at every point."""

    points_with_a_queue = 0

    def decide(self, view: ClusterView) -> Decision:
        fast = super().decide(view)
        assert fast.targets == plain_decide(self, view).targets, view.now_s
        self.points_with_a_queue += len(view.pending) >= 10
        return fast


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=PARAMS, seed=st.integers(0, 10_000), servers=st.integers(1, 3))
def test_fast_rule_decides_as_the_plain_rule(params, seed, servers):
    workload = make_workload("sched2", seed=seed, num_jobs=60, load=4.0, servers=servers)
    scheduler = Checked(params)
    result = simulate(workload, scheduler, seed=seed)
    assert len(result.records) == len(workload.jobs)
    assert scheduler.points_with_a_queue > 0  # the queue was long enough to matter
