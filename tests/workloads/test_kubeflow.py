"""Kubeflow workload: the three mixes, replica bounds, offered load, fit, determinism, errors."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from dlsched.core import Arch
from dlsched.models.replica import ReplicaScaling
from dlsched.workloads.base import Workload
from dlsched.workloads.kubeflow import BURST_FRAC, MIXES, NODE, make_kubeflow
from dlsched.workloads.registry import make_workload

N = 6000


def offered_load(w: Workload) -> float:
    total = w.make_cluster().total
    work = sum(j.num_workers * j.worker_demand.dominant_share(total) * j.total_work for j in w.jobs)
    return work / w.jobs[-1].submit_time_s


@pytest.mark.parametrize("mix", ["uniform", "large-jobs"])
@pytest.mark.parametrize("load", [0.5, 1.5])
def test_offered_load_matches_the_knob(mix: str, load: float) -> None:
    assert offered_load(make_kubeflow(1, mix=mix, load=load, num_jobs=N)) == pytest.approx(
        load, rel=0.05
    )


def test_uniform_mix() -> None:
    w = make_kubeflow(2, num_jobs=N)
    prio = Counter(j.priority for j in w.jobs)
    for level in (1.0, 2.0, 3.0):
        assert prio[level] / N == pytest.approx(1 / 3, abs=0.02)
    assert {j.worker_demand.cpu for j in w.jobs} == {1.0, 2.0}
    assert all(j.worker_demand.mem == 2 * j.worker_demand.cpu for j in w.jobs)
    assert {j.num_workers for j in w.jobs} == {1, 2, 3, 4}
    assert all(1 <= j.min_workers <= j.num_workers <= j.max_workers for j in w.jobs)
    assert all(j.max_workers <= 2 * j.num_workers for j in w.jobs)
    assert any(j.elastic for j in w.jobs)


def test_high_priority_burst_mix() -> None:
    w = make_kubeflow(3, mix="high-priority-burst", num_jobs=400)
    high = np.array([j.priority == 3.0 for j in w.jobs])
    assert set(Counter(j.priority for j in w.jobs)) == {1.0, 3.0}
    assert high.sum() == round(BURST_FRAC * 400)
    submit = np.array([j.submit_time_s for j in w.jobs])
    burst = submit[high]
    span = submit[-1] - submit[0]
    assert 0.3 * span < burst[0] < 0.7 * span  # in the middle of the trace
    assert np.mean(np.diff(burst)) < np.mean(np.diff(submit[~high])) / 5  # and fast


def test_large_jobs_mix() -> None:
    w = make_kubeflow(4, mix="large-jobs", num_jobs=N)
    assert {j.num_workers for j in w.jobs} == set(range(4, 9))
    assert {j.worker_demand.cpu for j in w.jobs} == {2.0, 4.0}
    assert all(math.ceil(j.num_workers / 2) <= j.min_workers for j in w.jobs)
    span_nodes = [not j.demand(j.num_workers).fits_in(NODE) for j in w.jobs]
    assert 0.3 < np.mean(span_nodes) < 0.9
    small = make_kubeflow(4, num_jobs=N)
    mean_cores = np.mean([j.demand(j.num_workers).cpu for j in w.jobs])
    assert mean_cores > 3 * np.mean([j.demand(j.num_workers).cpu for j in small.jobs])


@pytest.mark.parametrize("mix", sorted(MIXES))
@pytest.mark.parametrize("servers", [1, 4])
def test_every_job_fits_and_settings(mix: str, servers: int) -> None:
    w = make_kubeflow(5, mix=mix, servers=servers, num_jobs=500)
    assert len(w.servers) == servers and all(s == NODE for s in w.servers)
    assert w.model.name == "replica"
    assert (w.interval_s, w.on_events, w.placement) == (None, True, "gang")
    times = [j.submit_time_s for j in w.jobs]
    assert times[0] == 0.0 and times == sorted(times)
    assert [j.job_id for j in w.jobs] == list(range(500))
    for j in w.jobs:
        assert j.arch is Arch.REPLICA and j.worker_demand.gpu == 0
        per_node = math.floor(
            min(NODE.cpu / j.worker_demand.cpu, NODE.mem / j.worker_demand.mem) + 1e-9
        )
        assert 1 <= j.min_workers <= j.num_workers <= j.max_workers <= per_node * servers
        assert 60 <= j.total_work <= 7200
        assert j.priority in (1.0, 2.0, 3.0)


def test_deterministic_per_seed_and_serial_fraction() -> None:
    for mix in MIXES:
        assert make_kubeflow(6, mix=mix).jobs == make_kubeflow(6, mix=mix).jobs
        assert make_kubeflow(6, mix=mix).jobs != make_kubeflow(7, mix=mix).jobs
    assert make_workload("kubeflow", seed=8, mix="large-jobs").jobs == (
        make_kubeflow(8, mix="large-jobs").jobs
    )
    model = make_kubeflow(0, serial_fraction=0.25).model
    assert isinstance(model, ReplicaScaling)
    assert model.serial_fraction == 0.25


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"load": -0.1}, "load"),
        ({"serial_fraction": 1.5}, "serial_fraction"),
        ({"serial_fraction": -0.2}, "serial_fraction"),
        ({"mix": "bursty"}, "mix"),
        ({"servers": 0}, "servers"),
        ({"num_jobs": 0}, "num_jobs"),
    ],
)
def test_bad_options(kwargs: dict[str, object], option: str) -> None:
    with pytest.raises(ValueError, match=f"^{option} must") as info:
        make_kubeflow(0, **kwargs)
    assert "\n" not in str(info.value)
