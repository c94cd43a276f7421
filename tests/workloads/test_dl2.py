"""The dl2 workload: deterministic, DL2 §6.2's shape (slots, caps, durations), demands that fit."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.core import Arch
from dlsched.models.measured_ps import MeasuredPS
from dlsched.models.noise import DL2_LEVEL
from dlsched.workloads.base import Workload
from dlsched.workloads.dl2 import (
    JOB_TYPES,
    MAX_ARRIVALS_PER_SLOT,
    SLOT_S,
    TESTBED_SERVER,
    arrivals_per_slot,
    make_dl2,
)
from dlsched.workloads.registry import make_workload


def durations_min(wl: Workload) -> np.ndarray:
    """Each job's duration at its requested allocation, minutes."""
    return np.array([j.total_work / wl.model.ideal_speed(j) / 60.0 for j in wl.jobs])


def test_order_of_job_types() -> None:
    assert JOB_TYPES == (
        "resnet-50",
        "vgg-16",
        "resnext-110",
        "inception-bn",
        "seq2seq",
        "cnn-text-classification",
        "dssm",
        "wlm",
    )


def test_deterministic_per_seed() -> None:
    a, b, c = make_dl2(3), make_dl2(3), make_dl2(4)
    assert a.jobs == b.jobs
    assert a.params == b.params
    assert a.jobs != c.jobs


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_trace_shape(seed: int) -> None:
    wl = make_dl2(seed)
    assert len(wl.jobs) == 200
    assert [j.job_id for j in wl.jobs] == list(range(200))
    submits = [j.submit_time_s for j in wl.jobs]
    assert submits == sorted(submits)
    assert submits[0] == 0.0
    assert all(s % SLOT_S == 0 for s in submits)
    assert max(Counter(submits).values()) <= MAX_ARRIVALS_PER_SLOT
    minutes = durations_min(wl)
    assert minutes.mean() == pytest.approx(147.0, rel=0.10)
    assert (minutes > 60.0).mean() > 0.5


def test_durations_over_ten_seeds() -> None:
    minutes = np.concatenate([durations_min(make_dl2(seed)) for seed in range(10)])
    assert minutes.mean() == pytest.approx(147.0, rel=0.02)
    assert 0.55 < (minutes > 60.0).mean() < 0.8
    assert minutes.max() > 24 * 60  # "some for days" (DL2 §6.2)


def test_cap_holds_at_high_load() -> None:
    wl = make_dl2(0, load=30.0)
    counts = Counter(j.submit_time_s for j in wl.jobs)
    assert max(counts.values()) == MAX_ARRIVALS_PER_SLOT


def test_jobs_and_demands() -> None:
    wl = make_dl2(1)
    server = TESTBED_SERVER
    assert set(wl.servers) == {server}
    assert Counter(j.model for j in wl.jobs).keys() == set(JOB_TYPES)
    for job in wl.jobs:
        assert job.arch is Arch.PS
        assert job.worker_demand.fits_in(server)
        assert job.ps_demand.fits_in(server)
        assert job.ps_demand.gpu == 0
        assert job.worker_demand.gpu == (
            0 if job.model in ("cnn-text-classification", "dssm") else 1
        )
        assert job.worker_demand.cpu > 0 and job.ps_demand.cpu > 0
        assert job.worker_demand.mem > 0 and job.ps_demand.mem > 0
        assert (job.min_workers, job.max_workers, job.max_ps) == (1, 16, 16)
        assert 1 <= job.num_workers <= 4
        assert job.num_ps == job.num_workers
        assert job.total_work >= 1 and job.total_work == int(job.total_work)
        assert wl.model.ideal_speed(job) > 0


def test_settings_and_params() -> None:
    wl = make_dl2(5)
    assert wl.name == "dl2"
    assert len(wl.servers) == 13
    assert isinstance(wl.model, MeasuredPS)
    assert wl.interval_s == 1200.0
    assert wl.on_events is False
    assert wl.placement == "load_balance"
    assert wl.noise == DL2_LEVEL
    for key in ("seed", "servers", "load", "num_jobs", "noise", "start_slot_of_day"):
        assert key in wl.params
    assert (wl.params["seed"], wl.params["servers"], wl.params["load"]) == (5, 13, 1.0)
    custom = make_dl2(5, servers=500, load=0.5, num_jobs=30, noise=0.0)
    assert len(custom.servers) == 500
    assert len(custom.jobs) == 30
    assert custom.noise == 0.0
    assert custom.params["load"] == 0.5


def test_load_scales_the_arrival_rate() -> None:
    assert arrivals_per_slot(2.0) == pytest.approx(2 * arrivals_per_slot(1.0))
    slow = np.mean([make_dl2(s).params["num_slots"] for s in range(6)])
    fast = np.mean([make_dl2(s, load=2.0).params["num_slots"] for s in range(6)])
    assert 0.4 < fast / slow < 0.6
    # 200 jobs at about 1.4 a slot
    assert 200 / arrivals_per_slot(1.0) * 0.85 < slow < 200 / arrivals_per_slot(1.0) * 1.15


def test_invalid_arguments() -> None:
    for kwargs in ({"servers": 0}, {"load": 0.0}, {"num_jobs": 0}, {"noise": -0.1}):
        with pytest.raises(ValueError):
            make_dl2(0, **kwargs)


def test_registered() -> None:
    wl = make_workload("dl2", seed=2, servers=8)
    assert len(wl.servers) == 8
    assert wl.jobs == make_dl2(2, servers=8).jobs


def test_runs_in_the_simulator() -> None:
    from dlsched.api import simulate

    wl = make_dl2(0, num_jobs=20)
    result = simulate(wl, "fifo", 0)
    assert result.num_jobs == 20
    assert len(result.records) == 20


def test_load_scales_with_the_cluster() -> None:
    """``load`` is relative to the cluster it is given: four times the servers, four times the
    arrival rate, cap and default job count, so a trace spans about as many slots."""
    small, large = make_dl2(3), make_dl2(3, servers=52)
    assert large.params["arrivals_per_slot_mean"] == pytest.approx(
        4 * small.params["arrivals_per_slot_mean"]
    )
    assert (len(small.jobs), len(large.jobs)) == (200, 800)
    assert (small.params["max_arrivals_per_slot"], large.params["max_arrivals_per_slot"]) == (
        10,
        40,
    )
    assert 0.8 < large.params["num_slots"] / small.params["num_slots"] < 1.25
    assert make_dl2(3, servers=8).params["max_arrivals_per_slot"] == 10  # never below the code's
    assert len(make_dl2(3, servers=500, num_jobs=30).jobs) == 30  # an explicit count is kept


def test_a_larger_cluster_is_about_as_busy_at_the_same_load() -> None:
    """FIFO runs every job at its requested size, so its GPU utilisation follows the offered
    load (measured, seed 2: 0.36 on 13 servers, 0.28 on 52; 0.12 on 52 when the load stayed
    relative to 13 servers)."""
    from dlsched.api import simulate

    util = [simulate("dl2", "fifo", seed=2, servers=n).summary()["gpu_util"] for n in (13, 52)]
    assert util[1] > 0.6 * util[0]
