"""The no-wait lower bound: never above any job's completion time with interference noise off."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.core import Allocation, Arch, JobSpec, Resources
from dlsched.models.base import no_wait_bound_s
from dlsched.models.locality import Locality
from dlsched.models.measured_ps import MeasuredPS
from dlsched.models.replica import ReplicaScaling
from dlsched.workloads.registry import make_workload

CASES = {
    "dl2": ("drf", "optimus", "efficient-srtf", "srtf", "fifo", "tetris"),
    "sched2": ("fifo", "sif", "dsif", "las", "tiresias"),
    "kubeflow": ("kubeflow-dynamic", "kubeflow-static", "fifo"),
    "deeprm": ("sjf", "tetris-star", "packer", "fifo"),
}


@settings(max_examples=60, deadline=None)
@given(
    workload=st.sampled_from(sorted(CASES)),
    pick=st.integers(0, 5),
    seed=st.integers(0, 10_000),
    num_jobs=st.integers(3, 25),
)
def test_bound_never_above_a_jobs_completion_time(
    workload: str, pick: int, seed: int, num_jobs: int
) -> None:
    names = CASES[workload]
    scheduler = names[pick % len(names)]
    wl = make_workload(workload, seed=seed, num_jobs=num_jobs)
    bounds = {spec.job_id: no_wait_bound_s(spec, wl.model) for spec in wl.jobs}
    result = dlsched.simulate(wl, scheduler, seed=seed, noise=0.0)
    assert len(result.records) == num_jobs
    for record in result.records:
        assert bounds[record.job_id] <= record.jct_s * (1 + 1e-9), (scheduler, record)


def test_best_speed_is_the_fastest_allowed_allocation() -> None:
    model = MeasuredPS()
    spec = JobSpec(
        0, 0.0, "resnet-50", Arch.PS, 10.0, Resources(gpu=1, cpu=1, mem=1),
        num_workers=2, num_ps=1, min_workers=1, max_workers=8, max_ps=8,
    )  # fmt: skip
    pairs = [(p, w) for p in range(1, 9) for w in range(1, 9)]
    every = [model.speed(spec, Allocation.of([(0, w)], [(1, p)])) for p, w in pairs]
    assert model.best_speed(spec) == max(every)
    assert model.best_speed(spec) > model.ideal_speed(spec)  # the bound uses more than asked


def test_elastic_locality_and_replica_best_speeds() -> None:
    task = Resources(gpu=1, cpu=1, mem=1)
    elastic = JobSpec(
        0, 0.0, "vgg-16", Arch.ALLREDUCE, 100.0, task, num_workers=8, min_workers=4,
        max_workers=16,
    )  # fmt: skip
    # 16 GPUs on two servers: twice the GPUs, VGG16's 5.9x two-server slowdown
    assert math.isclose(Locality().best_speed(elastic), 1.0)  # 8 GPUs on one server wins
    insensitive = JobSpec(
        0, 0.0, "inception-v3", Arch.ALLREDUCE, 100.0, task, num_workers=8, min_workers=4,
        max_workers=16,
    )  # fmt: skip
    assert math.isclose(Locality().best_speed(insensitive), 2 / 1.4)
    assert math.isclose(ReplicaScaling(0.0).best_speed(elastic), 2.0)


def test_summary_reports_the_bound_and_the_ratio() -> None:
    wl = make_workload("dl2", seed=3, num_jobs=20)
    expected = sum(no_wait_bound_s(spec, wl.model) for spec in wl.jobs) / len(wl.jobs)
    summary = dlsched.simulate(wl, "drf", seed=3, noise=0.0).summary()
    assert math.isclose(summary["jct_lower_bound_s"], expected)
    assert summary["jct_over_bound"] == summary["avg_jct_s"] / summary["jct_lower_bound_s"]
    assert summary["jct_over_bound"] >= 1.0
