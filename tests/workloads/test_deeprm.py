"""DeepRM workload (§4.1): distributions, measured load, fixed horizons, determinism, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dlsched.core import Arch
from dlsched.workloads.deeprm import (
    MEAN_DEMAND_R,
    MEAN_DURATION_STEPS,
    POOL,
    SLOTS_PER_R,
    arrivals_per_step,
    make_deeprm,
)
from dlsched.workloads.registry import make_workload


def measured_load(seed: int, load: float, num_jobs: int = 12_000) -> tuple[float, float]:
    """Per-resource load as DeepRM's code measures it: Σ demand × duration / capacity / steps."""
    w = make_deeprm(seed, load=load, num_jobs=num_jobs)
    steps = w.params["horizon_steps"]
    cpu = sum(j.worker_demand.cpu * j.total_work for j in w.jobs) / (POOL.cpu * steps)
    mem = sum(j.worker_demand.mem * j.total_work for j in w.jobs) / (POOL.mem * steps)
    return cpu, mem


def test_expected_load_per_arrival() -> None:
    assert math.isclose(MEAN_DURATION_STEPS, 4.1)
    assert math.isclose(MEAN_DEMAND_R, 0.225)
    assert arrivals_per_step(0.9225) == pytest.approx(1.0)
    assert arrivals_per_step(0.7, servers=3) == pytest.approx(3 * 0.7 / 0.9225)


@pytest.mark.parametrize("load", [0.1, 0.7, 1.3, 1.9])
def test_measured_load_matches_the_knob(load: float) -> None:
    cpu, mem = measured_load(seed=7, load=load)
    assert cpu == pytest.approx(load, rel=0.05)
    assert mem == pytest.approx(load, rel=0.05)


def test_arrivals_are_bernoulli_below_one_job_a_step() -> None:
    w = make_deeprm(3, load=0.7, num_jobs=5_000)
    steps = np.array([j.submit_time_s for j in w.jobs])
    _, counts = np.unique(steps, return_counts=True)
    assert counts.max() == 1
    p = len(w.jobs) / w.params["horizon_steps"]
    assert p == pytest.approx(0.7 / 0.9225, rel=0.05)
    many = make_deeprm(3, load=1.9, num_jobs=2_000)
    _, counts = np.unique([j.submit_time_s for j in many.jobs], return_counts=True)
    assert set(counts.tolist()) <= {2, 3} | {int(counts[-1])}


def test_durations_and_demands_follow_section_4_1() -> None:
    w = make_deeprm(11, num_jobs=20_000)
    duration = np.array([j.total_work for j in w.jobs])
    short = np.array([j.model == "short" for j in w.jobs])
    assert short.mean() == pytest.approx(0.8, abs=0.015)
    assert set(duration[short].tolist()) == {1.0, 2.0, 3.0}
    assert set(duration[~short].tolist()) == set(map(float, range(10, 16)))
    cpu = np.array([j.worker_demand.cpu for j in w.jobs]) / SLOTS_PER_R
    mem = np.array([j.worker_demand.mem for j in w.jobs]) / SLOTS_PER_R
    dominant = np.maximum(cpu, mem)
    other = np.minimum(cpu, mem)
    assert dominant.min() == 0.25 and dominant.max() == 0.5
    assert other.min() == 0.05 and other.max() == 0.1
    assert (cpu > mem).mean() == pytest.approx(0.5, abs=0.015)


def test_jobs_fit_and_settings() -> None:
    w = make_deeprm(0, servers=2, num_jobs=200)
    assert len(w.jobs) == 200
    assert len(w.servers) == 2 and all(s == POOL for s in w.servers)
    assert w.model.name == "fixed"
    assert (w.interval_s, w.on_events, w.placement) == (None, True, "pack")
    times = [j.submit_time_s for j in w.jobs]
    assert times == sorted(times)
    assert [j.job_id for j in w.jobs] == list(range(len(w.jobs)))
    for j in w.jobs:
        assert j.arch is Arch.REPLICA and j.worker_demand.gpu == 0
        assert j.num_workers == j.min_workers == j.max_workers == 1
        assert j.worker_demand.fits_in(POOL)
        assert j.submit_time_s == int(j.submit_time_s)


def test_default_is_the_papers_setting() -> None:
    """50 steps of arrivals at load 0.7 with a scheduling point every step (DeepRM §4.1)."""
    w = make_workload("deeprm", seed=3)
    assert w.params["horizon_steps"] == 50 and w.params["load"] == 0.7
    assert all(j.submit_time_s < 50 for j in w.jobs)
    assert (w.interval_s, w.on_events) == (1.0, True)
    assert make_deeprm(3, horizon_steps=50).jobs == w.jobs
    long = make_workload("deeprm", seed=3, num_jobs=120)
    assert len(long.jobs) == 120 and long.interval_s is None


def test_fixed_horizon_of_arrivals() -> None:
    w = make_deeprm(5, load=0.7, horizon_steps=50)
    assert w.params["horizon_steps"] == 50
    assert all(0 <= j.submit_time_s < 50 for j in w.jobs)
    assert 20 <= len(w.jobs) <= 50
    sizes = [len(make_deeprm(s, load=0.7, horizon_steps=50).jobs) for s in range(20)]
    assert len(set(sizes)) > 1  # the number of jobs is random, the horizon is not


def test_deterministic_per_seed() -> None:
    assert make_deeprm(42).jobs == make_deeprm(42).jobs
    assert make_deeprm(42).jobs != make_deeprm(43).jobs
    assert make_workload("deeprm", seed=4, load=1.1).jobs == make_deeprm(4, load=1.1).jobs


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"load": -0.5}, "load"),
        ({"load": 0.0}, "load"),
        ({"load": float("inf")}, "load"),
        ({"servers": 0}, "servers"),
        ({"num_jobs": 0}, "num_jobs"),
        ({"horizon_steps": 0}, "horizon_steps"),
        ({"demands": "paper"}, "demands"),
    ],
)
def test_bad_options(kwargs: dict[str, float], option: str) -> None:
    with pytest.raises(ValueError, match=f"^{option} must") as info:
        make_deeprm(0, **kwargs)
    assert "\n" not in str(info.value)


def test_code_demands_are_the_authors_ranges_at_half_the_arrivals() -> None:
    """``demands="code"``: hongzimao/deeprm's job_distribution.py ranges (0.5r..1.0r dominant,
    0.1r..0.2r other), the same draws doubled, and half the jobs for the same load."""
    text = make_deeprm(5, load=1.9, num_jobs=8_000)
    code = make_deeprm(5, load=1.9, num_jobs=8_000, demands="code")
    assert code.params["demands"] == "code" and "demands" not in text.params
    demand = np.array([(j.worker_demand.cpu, j.worker_demand.mem) for j in code.jobs])
    dominant, other = demand.max(1) / SLOTS_PER_R, demand.min(1) / SLOTS_PER_R
    assert set(dominant.tolist()) == {0.5, 0.6, 0.7, 0.8, 0.9, 1.0}
    assert set(other.tolist()) == {0.1, 0.2}
    assert code.params["arrivals_per_step"] == pytest.approx(text.params["arrivals_per_step"] / 2)
    steps = code.params["horizon_steps"]
    cpu = float((demand[:, 0] * [j.total_work for j in code.jobs]).sum()) / (POOL.cpu * steps)
    assert cpu == pytest.approx(1.9, rel=0.05)
    via_cli = make_workload("deeprm", seed=5, load=1.9, num_jobs=8_000, demands="code")
    assert [j.worker_demand for j in via_cli.jobs] == [j.worker_demand for j in code.jobs]
