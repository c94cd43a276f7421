"""Decisions that list only what changes (`Decision.changes_only`): the engine makes the same
run as with the whole desired state, and a suspension is never a non-preemptive resize."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.core import Allocation, ClusterView, Decision, Target
from dlsched.placement import make_placement
from dlsched.schedulers.base import Scheduler, WrappingScheduler
from dlsched.schedulers.registry import make_scheduler
from dlsched.sim import SimConfig, Simulator
from tests.helpers import LinearModel, gpu_job, small_cluster
from tests.schedulers.test_incremental_policies import _jobs


class Whole(WrappingScheduler):
    """Restates each changes-only decision of the policy it wraps as the whole desired state
    (what the policies returned before), counting the targets of both forms."""

    def __init__(self, inner: Scheduler, restate: bool) -> None:
        super().__init__(inner)
        self.restate = restate
        self.listed = 0

    def decide(self, view: ClusterView) -> Decision:
        decision = self.inner.decide(view)
        if self.restate:
            decision = decision.whole(view.running)
        self.listed += len(decision.targets)
        return decision


def _run(policy: str, restate: bool, jobs: Any, servers: int, **config: Any) -> Any:
    scheduler = Whole(make_scheduler(policy), restate)
    sim = Simulator(
        jobs,
        small_cluster(servers),
        LinearModel(),
        scheduler,
        make_placement("pack"),
        SimConfig(max_idle_retries=20, **config),
    )
    result = sim.run()
    records = [dataclasses.astuple(r) for r in result.records]
    return (records, result.events, result.decisions, repr(result.end_s)), scheduler.listed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=st.sampled_from(["las", "srtf", "tiresias"]),
    seed=st.integers(0, 10_000),
    n=st.integers(2, 40),
    servers=st.integers(2, 3),
    ps_share=st.sampled_from([0.0, 0.0, 0.3]),
    slotted=st.booleans(),
    cpu_heavy=st.booleans(),
)
def test_changes_only_makes_the_run_of_the_whole_state(
    policy: str, seed: int, n: int, servers: int, ps_share: float, slotted: bool, cpu_heavy: bool
) -> None:
    jobs = _jobs(seed, n, ps_share, cpu_heavy)
    config: dict[str, Any] = {"interval_s": 150.0, "on_events": False} if slotted else {}
    ours, _ = _run(policy, False, jobs, servers, **config)
    whole, _ = _run(policy, True, jobs, servers, **config)
    assert ours == whole  # every record, event and decision count, end time


def test_a_long_run_lists_far_fewer_targets_than_running_jobs() -> None:
    jobs = [gpu_job(i, 10.0 * i, 1000.0, 1) for i in range(24)]
    _, listed = _run("srtf", False, jobs, 2)
    _, listed_whole = _run("srtf", True, jobs, 2)
    assert listed * 3 < listed_whole


def _sim_with_two_running(preemptive: bool) -> Simulator:
    jobs = [gpu_job(0, 0.0, 1000.0, 2), gpu_job(1, 0.0, 1000.0, 2), gpu_job(2, 10.0, 100.0, 1)]
    policy = make_scheduler("las" if preemptive else "fifo")
    sim = Simulator(
        jobs, small_cluster(1), LinearModel(), policy, make_placement("pack"), SimConfig()
    )
    sim.next_point()
    assert not sim.apply(Decision({0: Target(2), 1: Target(2)}))
    sim.next_point()
    return sim


@pytest.mark.parametrize("preemptive", [True, False])
def test_a_job_left_out_of_a_changes_only_decision_keeps_what_it_holds(preemptive: bool) -> None:
    sim = _sim_with_two_running(preemptive)
    before = {run.job_id: run.allocation for run in sim.view().running}
    assert not sim.apply(Decision({}, changes_only=True))
    assert {job: run.allocation for job, run in sim.running.items()} == before


def test_a_changes_only_suspension_preempts_and_a_non_preemptive_one_is_invalid() -> None:
    sim = _sim_with_two_running(True)
    assert not sim.apply(Decision({1: Target(0)}, changes_only=True))
    assert list(sim.running) == [0]
    sim = _sim_with_two_running(False)
    statuses = sim.apply(Decision({1: Target(0)}, changes_only=True))
    assert not statuses[1].ok
    assert sim.running[1].allocation != Allocation.EMPTY
