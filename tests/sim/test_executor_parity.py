"""The simulator and the live runtime apply decisions through one executor, with one outcome.

The same random decisions (legal ones, over caps, one kind of task only, placement-only changes,
explicit placements, jobs left out, unknown jobs) go to a `Simulator` and to a `LiveCluster`
whose actuation is recorded instead of made (no processes); after each one both must report the
same statuses and hold the same allocations.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.core import Allocation, Cluster, Decision, JobRun, Status, Target
from dlsched.live.cluster import LiveCluster
from dlsched.live.stream import LiveJobRequest, live_server, make_stream
from dlsched.placement import make_placement
from dlsched.schedulers.base import BaseScheduler
from dlsched.sim import Result, RunTotals, SimConfig, Simulator
from dlsched.sim.metrics import Timeline
from tests.helpers import LinearModel

CORES = 4


class _Labels(BaseScheduler):
    """Only the labels: the decisions come from the test."""

    name = "fixed"

    def __init__(self, preemptive: bool) -> None:
        self.preemptive = preemptive  # type: ignore[misc]


class RecordingLive(LiveCluster):
    """A live cluster whose changes are recorded instead of made to real processes."""

    def change(self, run: JobRun, old: Allocation, new: Allocation) -> Status:
        self.changes.append((run.job_id, old, new))
        if old.is_empty and run.first_start_s is None:
            run.first_start_s = 0.0
        run.allocation = new
        return Status.success()

    def apply(self, decision: Decision) -> dict[int, Status]:
        """What `LiveCluster._decide` does with a scheduler's decision, without the view."""
        return self.executor.apply(
            decision,
            active=self._active,
            running=[lv.run for lv in self._running()],
            preemptive=self.scheduler.preemptive,
            actuator=self,
            source=self.scheduler.name,
        )


def _requests(n: int, seed: int) -> list[LiveJobRequest]:
    return [
        LiveJobRequest(dataclasses.replace(r.spec, submit_time_s=0.0), r.config)
        for r in make_stream(n, seed=seed, cores=CORES, steps=50)
    ]


def _decision(rng: np.random.Generator, runs: list[JobRun]) -> Decision:
    targets: dict[int, Target] = {}
    for run in runs:
        roll = rng.random()
        spec = run.spec
        if roll < 0.2:
            continue  # left out: suspended by a preemptive scheduler
        workers = int(rng.integers(0, spec.max_workers + 2))
        ps = int(rng.integers(0, spec.max_ps + 2))
        placement = None
        if roll > 0.85 and workers:
            placement = Allocation.of([(0, workers)], [(0, ps)])
        elif roll > 0.75:  # the same counts, maybe with a placement
            workers, ps = run.allocation.num_workers, run.allocation.num_ps
            if workers:
                placement = Allocation.of([(0, workers)], [(0, ps)])
        targets[spec.job_id] = Target(workers, ps, placement)
    if rng.random() < 0.3:
        targets[999] = Target(1, 1)  # an unknown job
    order = list(targets.items())
    rng.shuffle(order)  # type: ignore[arg-type]
    return Decision(dict(order))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(1, 6), preemptive=st.booleans())
def test_simulator_and_live_runtime_apply_decisions_alike(
    seed: int, n: int, preemptive: bool
) -> None:
    requests = _requests(n, seed)
    sim = Simulator(
        [r.spec for r in requests],
        Cluster([live_server(CORES)]),
        LinearModel(),
        _Labels(preemptive),
        make_placement("load_balance"),
        SimConfig(interval_s=1e-3, on_events=False),
    )
    live = RecordingLive(requests, _Labels(preemptive), cores=CORES, placement="load_balance")
    live.changes = []
    try:
        for lv in live.jobs.values():
            lv.arrived = True
        rng = np.random.default_rng(seed)
        applied = 0
        for _ in range(8):
            assert sim.next_point() is not None
            view = sim.view()
            decision = _decision(rng, [*view.running, *view.pending])
            sim_status = sim.apply(decision)
            assert live.apply(decision) == sim_status
            for job_id, lv in live.jobs.items():
                assert lv.run.allocation == sim.runs[job_id].allocation, job_id
            assert dict(live.cluster.allocations) == dict(sim.cluster.allocations)
            applied += len(decision)
        live.cluster.assert_consistent()
    finally:
        live.close()


def test_the_live_runtime_refuses_what_the_simulator_refuses() -> None:
    """The rules the live copy had lost: a PS job needs both kinds of task, and a target that
    only moves tasks is a change."""
    requests = _requests(1, 3)
    live = RecordingLive(requests, _Labels(True), cores=CORES, placement="load_balance")
    live.changes = []
    try:
        (lv,) = live.jobs.values()
        lv.arrived = True
        job = lv.run.job_id
        status = live.apply(Decision({job: Target(1, 0)}))
        assert "give it both or nothing" in status[job].reason
        assert live.apply(Decision({job: Target(1, 1)})) == {}
        assert live.changes[-1][2].num_workers == 1
    finally:
        live.close()


def test_both_backends_build_records_the_same_way() -> None:
    """`Result.from_runs` is the one way records are built: a job that finished the instant it
    started has effectiveness 1.0 (the live side used to say NaN)."""
    (request,) = _requests(1, 1)
    run = JobRun(request.spec)
    run.first_start_s = run.finish_s = 0.0
    run.ideal_duration_s = math.nan
    totals = RunTotals("live", "fixed", 0, 1, 0, 0, 0.0, 0.0, 0.0, 0.0)
    result = Result.from_runs([run], totals, Timeline())
    assert result.records[0].effectiveness == 1.0
    assert math.isnan(result.records[0].slowdown)
