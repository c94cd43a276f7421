"""Preemptive priority schedulers of fixed-size jobs: SRTF, LAS, Tiresias (and run_in_order)."""

from __future__ import annotations

import pytest

from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.las import Las
from dlsched.schedulers.registry import make_scheduler
from dlsched.schedulers.srtf import Srtf
from dlsched.schedulers.tiresias import Tiresias
from tests.schedulers.helpers import Scene, counts, gpu, scene


def decided(policy: Scheduler, s: Scene) -> dict[int, tuple[int, int]]:
    """Job id → (workers, PS) the policy wants now, as the whole desired state (these policies
    list only what changes: `Decision.whole` restates it)."""
    view = s.view()
    return counts(policy.decide(view).whole(view.running))


def test_srtf_preempts_a_running_job_for_a_shorter_remaining_one():
    s = scene()  # 4 GPUs
    s.run(gpu(0, 1000.0, 4), [(0, 4)], done=100.0)  # 900 s left
    s.wait(gpu(1, 500.0, 4))  # 500 s left: shorter
    assert decided(Srtf(), s) == {1: (4, 0)}  # job 0 left out: preempted


def test_srtf_lists_only_what_changes():
    s = scene()  # 4 GPUs
    s.run(gpu(0, 1000.0, 2), [(0, 2)], done=500.0)  # 500 s left: kept, not listed
    s.run(gpu(1, 1000.0, 2), [(0, 2)])  # 1000 s left, the longest: preempted
    s.wait(gpu(2, 300.0, 2))  # the shortest: starts
    decision = Srtf().decide(s.view())
    assert decision.changes_only
    assert counts(decision) == {2: (2, 0), 1: (0, 0)}


def test_srtf_ranks_by_remaining_not_total_work():
    s = scene()
    s.run(gpu(0, 1000.0, 4), [(0, 4)], done=700.0)  # 300 s left, though 1000 s in total
    s.wait(gpu(1, 500.0, 4))
    assert decided(Srtf(), s) == {0: (4, 0)}


@pytest.mark.parametrize(("gpus_2", "expected"), [(4, [1, 2]), (2, [0, 1, 2])])
def test_srtf_keeps_the_longest_job_only_while_it_fits(gpus_2, expected):
    s = scene(servers=2)
    s.run(gpu(0, 1000.0, 2), [(1, 2)])  # longest, running on server 1
    s.wait(gpu(1, 100.0, 4))  # shortest
    s.wait(gpu(2, 200.0, gpus_2))  # 4 GPUs: no room left for job 0; 2 GPUs: room for both
    assert sorted(decided(Srtf(), s)) == expected


def test_las_serves_least_attained_service_first():
    s = scene()
    s.run(gpu(0, 10_000.0, 4), [(0, 4)], attained_gpu_s=1000.0)
    s.wait(gpu(1, 10_000.0, 4), attained_gpu_s=10.0)
    assert decided(Las(), s) == {1: (4, 0)}


@pytest.mark.parametrize(("attained", "runs"), [(1000.0, 0), (5000.0, 1)])
def test_tiresias_demotes_by_attained_service_and_is_fifo_within_a_queue(attained, runs):
    # threshold 3,600 GPU-s: below it job 0 shares queue 0 with the newcomer and, arriving
    # first, keeps running (LAS would preempt it); above it job 0 is demoted and preempted
    s = scene()
    s.run(gpu(0, 10_000.0, 4), [(0, 4)], attained_gpu_s=attained)
    s.wait(gpu(1, 10_000.0, 4))
    assert decided(Tiresias(), s) == {runs: (4, 0)}


def test_tiresias_thresholds_from_the_name():
    policy = make_scheduler("tiresias:100,200")
    assert isinstance(policy, Tiresias)
    assert policy.thresholds_gpu_s == (100.0, 200.0)
    s = scene()
    run = s.run(gpu(0, 10_000.0, 1), [(0, 1)], attained_gpu_s=150.0)
    assert policy.queue_of(run, s.now_s) == 1
    with pytest.raises(ValueError, match="increasing"):
        make_scheduler("tiresias:200,100")


def test_tiresias_promotes_a_starved_job_back_to_the_top_queue():
    policy = Tiresias(thresholds_gpu_s=(100.0,), promote_knob=2.0)
    old, new = gpu(0, 10_000.0, 4), gpu(1, 10_000.0, 4)

    def at(now_s: float, running: int | None, service: dict[int, float]) -> dict:
        s = scene()
        s.now_s = now_s
        for spec in (old, new):
            if spec.job_id == running:
                s.run(spec, [(0, 4)], attained_gpu_s=service.get(spec.job_id, 0.0))
            elif spec.job_id in service:
                s.wait(spec, attained_gpu_s=service[spec.job_id])
        return decided(policy, s)

    assert at(0.0, None, {0: 0.0}) == {0: (4, 0)}  # starts job 0
    # t=50: job 0 ran 50 s (200 GPU-s: queue 1); the newcomer (queue 0) preempts it
    assert at(50.0, 0, {0: 200.0, 1: 0.0}) == {1: (4, 0)}
    # t=60: job 0 has waited 10 s, less than 2 × its 50 s run: still queue 1
    assert at(60.0, 1, {0: 200.0, 1: 40.0}) == {1: (4, 0)}
    # t=150: waited 100 s = 2 × 50 s: promoted to queue 0, ahead of job 1 (400 GPU-s, queue 1)
    assert at(150.0, 1, {0: 200.0, 1: 400.0}) == {0: (4, 0)}
