"""ReplicaScaling: Amdahl speed relative to the requested replica count."""

from __future__ import annotations

import itertools

import pytest

from dlsched.core import Allocation, Arch, JobSpec, Resources
from dlsched.models.base import ThroughputModel
from dlsched.models.replica import ReplicaScaling, amdahl


def job(lo: int, n: int, hi: int) -> JobSpec:
    return JobSpec(
        0,
        0.0,
        "tfjob",
        Arch.REPLICA,
        600.0,
        Resources(cpu=2, mem=4),
        num_workers=n,
        min_workers=lo,
        max_workers=hi,
    )


def replicas(n: int) -> Allocation:
    return Allocation.of([(0, n)])


def test_requested_count_runs_at_one() -> None:
    m: ThroughputModel = ReplicaScaling()
    assert m.name == "replica"
    assert m.speed(job(1, 4, 8), replicas(4)) == pytest.approx(1.0)
    assert m.ideal_speed(job(1, 4, 8)) == 1.0


def test_amdahl_values() -> None:
    m = ReplicaScaling(0.1)
    j = job(1, 4, 8)
    assert m.speed(j, replicas(1)) == pytest.approx((0.1 + 0.9 / 4) / 1.0)
    assert m.speed(j, replicas(8)) == pytest.approx((0.1 + 0.9 / 4) / (0.1 + 0.9 / 8))
    assert amdahl(4, 0.1) == pytest.approx(1 / 0.325)
    speeds = [m.speed(j, replicas(n)) for n in range(1, 9)]
    assert speeds == sorted(speeds)
    gains = [b - a for a, b in itertools.pairwise(speeds)]
    assert gains == sorted(gains, reverse=True)  # diminishing returns


def test_below_min_is_zero_and_above_max_adds_nothing() -> None:
    m = ReplicaScaling()
    j = job(2, 4, 6)
    assert m.speed(j, replicas(1)) == 0.0
    assert m.speed(j, Allocation.EMPTY) == 0.0
    assert m.speed(j, replicas(2)) > 0.0
    assert m.speed(j, replicas(10)) == m.speed(j, replicas(6))


def test_extreme_serial_fractions() -> None:
    j = job(1, 4, 8)
    assert ReplicaScaling(0.0).speed(j, replicas(2)) == pytest.approx(0.5)
    assert ReplicaScaling(1.0).speed(j, replicas(1)) == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_bad_serial_fraction(bad: float) -> None:
    with pytest.raises(ValueError, match="serial_fraction"):
        ReplicaScaling(bad)
