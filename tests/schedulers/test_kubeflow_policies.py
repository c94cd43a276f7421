"""Kubeflow dynamic (priority queue, gang, scale-down, scale-up) and static (tf-operator)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.core import ClusterView, Decision, Resources
from dlsched.schedulers.kubeflow_dynamic import KubeflowDynamic, gang_fit
from dlsched.schedulers.kubeflow_static import KubeflowStatic
from dlsched.workloads.registry import make_workload
from tests.schedulers.helpers import checked_run, counts, replica, scene

NODE = Resources(cpu=16, mem=64)
POD = Resources(cpu=2, mem=4)


def placements(decision: Decision) -> dict[int, dict[int, int]]:
    out = {}
    for job_id, target in decision.targets.items():
        if target.placement is not None:
            out[job_id] = dict(target.placement.workers)
    return out


def full_of_low_priority(high_replicas: int, high_priority: float = 3.0):
    """One node (16 cores) full with a utility-1 job of 8 × 2-core replicas (min 2, max 8);
    a job of utility ``high_priority`` arrives wanting ``high_replicas`` 2-core replicas."""
    s = scene(capacity=NODE)
    s.run(replica(0, POD, num=8, lo=2, hi=8, priority=1.0), [(0, 8)])
    n = high_replicas
    s.wait(replica(1, POD, num=n, lo=n, hi=n, priority=high_priority))
    return s


def test_dynamic_admits_a_high_priority_job_by_scaling_down_a_lower_one():
    decision = KubeflowDynamic().decide(full_of_low_priority(4).view())
    # 4 replicas (8 cores) are freed from job 0, no more; they stay on their node
    assert counts(decision) == {0: (4, 0), 1: (4, 0)}
    assert placements(decision) == {0: {0: 4}, 1: {0: 4}}


def test_dynamic_never_scales_below_min_and_takes_nothing_when_that_is_not_enough():
    # 8 replicas need the whole node; job 0 can only go down to 2 (4 cores): scale-down fails
    view = full_of_low_priority(8).view()
    decision = KubeflowDynamic().decide(view)
    assert decision.changes_only and counts(decision) == {}  # nothing changes
    assert counts(decision.whole(view.running)) == {0: (8, 0)}


def test_dynamic_never_scales_down_a_job_of_equal_priority():
    view = full_of_low_priority(4, high_priority=1.0).view()
    decision = KubeflowDynamic().decide(view)
    assert decision.changes_only and counts(decision) == {}  # nothing changes
    assert counts(decision.whole(view.running)) == {0: (8, 0)}


def test_dynamic_scales_up_into_free_resources_up_to_max_replicas():
    s = scene(capacity=NODE)  # room for 8 replicas
    s.wait(replica(0, POD, num=2, lo=1, hi=3))
    s.wait(replica(1, POD, num=1, lo=1, hi=2, priority=1.0))
    decision = KubeflowDynamic().decide(s.view())
    # admitted at their requested 2 and 1, then both grow to their maxima, 3 and 2
    assert counts(decision) == {1: (2, 0), 0: (3, 0)}


def test_dynamic_queue_is_utility_first_then_cpu_and_memory():
    s = scene(capacity=Resources(cpu=4, mem=64))
    s.wait(replica(0, Resources(cpu=4, mem=4), priority=1.0))
    s.wait(replica(1, Resources(cpu=4, mem=4), priority=3.0))
    assert counts(KubeflowDynamic().decide(s.view())) == {1: (1, 0)}
    # static ignores utility: first come, first served
    assert counts(KubeflowStatic().decide(s.view())) == {0: (1, 0)}
    tie = scene(capacity=Resources(cpu=4, mem=64))
    tie.wait(replica(0, Resources(cpu=2, mem=4), priority=2.0))
    tie.wait(replica(1, Resources(cpu=4, mem=4), priority=2.0))  # larger request goes first
    assert counts(KubeflowDynamic().decide(tie.view())) == {1: (1, 0)}


def test_gang_fit_one_node_if_possible_else_first_fit_all_or_nothing():
    spec = replica(0, Resources(cpu=3, mem=1), num=4, lo=4, hi=4)
    assert gang_fit([[0, 6, 64], [0, 12, 64]], spec, 4) == {1: 4}
    assert gang_fit([[0, 6, 64], [0, 6, 64]], spec, 4) == {0: 2, 1: 2}
    free = [[0, 6, 64], [0, 6, 64]]
    assert gang_fit(free, spec, 5) is None
    assert free == [[0, 6, 64], [0, 6, 64]]  # not changed


def test_static_keeps_fixed_replicas_and_blocks_behind_the_head():
    s = scene(capacity=NODE)
    s.run(replica(0, POD, num=4, lo=1, hi=8), [(0, 4)])  # 8 cores free
    s.wait(replica(1, POD, num=5, lo=1, hi=8))  # 10 cores: does not fit, blocks
    s.wait(replica(2, POD, num=1, lo=1, hi=8))
    assert counts(KubeflowStatic().decide(s.view())) == {}
    assert not KubeflowStatic.preemptive


class BoundsChecked(KubeflowDynamic):
    """Checks every decision: replicas within [min, max]; only lower utility scaled down."""

    decisions = 0
    scale_downs = 0

    def decide(self, view: ClusterView) -> Decision:
        decision = super().decide(view)
        assert decision.changes_only
        self.decisions += 1
        whole = decision.whole(view.running)  # the running jobs it leaves out keep theirs
        running = {r.job_id: r for r in view.running}
        by_id = {r.job_id: r for r in view.jobs()}
        admitted = [by_id[j].spec.priority for j in whole.targets if j not in running]
        for job_id, target in whole.targets.items():
            spec = by_id[job_id].spec
            assert spec.min_workers <= target.num_workers <= spec.max_workers, job_id
            run = running.get(job_id)
            if run is not None and target.num_workers < run.allocation.num_workers:
                assert any(p > spec.priority for p in admitted), "scaled down for no one"
                self.scale_downs += 1
        assert set(running) <= set(whole.targets), "a running job was preempted"
        return decision


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    mix=st.sampled_from(["uniform", "high-priority-burst", "large-jobs"]),
)
def test_dynamic_stays_within_replica_bounds_on_random_workloads(seed, mix):
    workload = make_workload("kubeflow", seed=seed, num_jobs=25, mix=mix, load=1.5)
    policy = BoundsChecked()
    _, finished = checked_run(workload, policy, seed)
    assert sorted(finished) == sorted(j.job_id for j in workload.jobs)
    assert policy.decisions > 0


def test_dynamic_scales_down_on_the_burst_mix():
    """The burst mix exists to trigger scale-down: it must happen there."""
    workload = make_workload("kubeflow", seed=1, num_jobs=40, mix="high-priority-burst")
    policy = BoundsChecked()
    checked_run(workload, policy, 1)
    assert policy.scale_downs > 0
