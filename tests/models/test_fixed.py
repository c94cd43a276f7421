"""FixedDuration: DeepRM's all-or-nothing fixed-duration jobs."""

from __future__ import annotations

from dlsched.core import Allocation, Arch, JobSpec, Resources
from dlsched.models.base import ThroughputModel
from dlsched.models.fixed import FixedDuration


def job(workers: int) -> JobSpec:
    return JobSpec(
        0,
        0.0,
        "deeprm",
        Arch.REPLICA,
        5.0,
        Resources(cpu=7, mem=2),
        num_workers=workers,
        min_workers=workers,
        max_workers=workers,
    )


def test_speed_is_one_with_the_requested_workers_else_zero() -> None:
    m: ThroughputModel = FixedDuration()
    assert m.name == "fixed"
    assert m.speed(job(1), Allocation.of([(0, 1)])) == 1.0
    assert m.speed(job(1), Allocation.EMPTY) == 0.0
    assert m.speed(job(3), Allocation.of([(0, 2)])) == 0.0
    assert m.speed(job(3), Allocation.of([(0, 2), (1, 1)])) == 1.0
    assert m.speed(job(3), Allocation.of([(0, 5)])) == 1.0
    assert m.ideal_speed(job(2)) == 1.0
