"""SCED² workload (§IV-A): GPU sizes, model mix, arrivals, fit, determinism, errors."""

from __future__ import annotations

from collections import Counter

import numpy as np
import numpy.typing as npt
import pytest

from dlsched.core import Arch
from dlsched.models.locality import CATEGORY, CATEGORY_MIX
from dlsched.workloads.base import Workload
from dlsched.workloads.registry import make_workload
from dlsched.workloads.sched2 import MULTI_GPU_WEIGHTS, SERVER, gpu_sizes, make_sched2

N = 12_000


@pytest.fixture(scope="module")
def big() -> Workload:
    return make_sched2(1, num_jobs=N, load=1.0)  # the trace's own arrival rate (SCED² §IV-A)


def gpus(w: Workload) -> npt.NDArray[np.int64]:
    return np.array([j.num_workers for j in w.jobs], dtype=np.int64)


@pytest.mark.parametrize("frac", [0.60, 0.68, 0.75])
def test_one_gpu_fraction(frac: float) -> None:
    g = gpus(make_sched2(2, num_jobs=N, one_gpu_frac=frac))
    assert (g == 1).mean() == pytest.approx(frac, abs=0.015)


def test_multi_gpu_sizes_follow_the_weights(big: Workload) -> None:
    g = gpus(big)
    multi = Counter(g[g > 1].tolist())
    total = sum(multi.values())
    weights = sum(MULTI_GPU_WEIGHTS.values())
    assert set(multi) == set(MULTI_GPU_WEIGHTS)
    for size, w in MULTI_GPU_WEIGHTS.items():
        assert multi[size] / total == pytest.approx(w / weights, abs=0.02)


def test_category_mix(big: Workload) -> None:
    cats = Counter(CATEGORY[j.model] for j in big.jobs)
    for cat, share in CATEGORY_MIX.items():
        assert cats[cat] / N == pytest.approx(share, abs=0.015)
    models = Counter(j.model for j in big.jobs)
    assert set(models) == set(CATEGORY)
    assert models["vgg-16"] / N == pytest.approx(0.025, abs=0.006)


def test_arrivals_and_durations(big: Workload) -> None:
    submit = np.array([j.submit_time_s for j in big.jobs])
    assert submit[0] == 0.0 and np.all(np.diff(submit) >= 0)
    gaps = np.diff(submit)
    assert gaps.mean() == pytest.approx(172.0, rel=0.06)
    assert gaps.std() / gaps.mean() == pytest.approx(2.0, rel=0.15)
    d = np.array([j.total_work for j in big.jobs])
    assert d.min() >= 60 and d.max() <= 86_400
    assert np.median(d) == pytest.approx(1800, rel=0.05)
    assert np.mean(d) == pytest.approx(4800, rel=0.08)


def test_load_and_interval_scale_change_the_rate() -> None:
    def mean_gap(**kw: float) -> float:
        w = make_sched2(3, num_jobs=4000, arrival_cv=1.0, **kw)
        return w.jobs[-1].submit_time_s / (len(w.jobs) - 1)

    assert mean_gap(load=1.0) == pytest.approx(172.0, rel=0.06)
    assert mean_gap() == pytest.approx(172.0 / 1.8, rel=0.06)  # default: the contended regime
    assert mean_gap(load=2.0) == pytest.approx(86.0, rel=0.06)
    assert mean_gap(interval_scale=0.5, load=0.5) == pytest.approx(172.0, rel=0.06)
    assert mean_gap(interval_scale=3.0, load=1.0) == pytest.approx(516.0, rel=0.06)


@pytest.mark.parametrize("servers", [1, 2, 15])
def test_every_job_fits_and_settings(servers: int) -> None:
    w = make_sched2(4, servers=servers, num_jobs=3000)
    assert len(w.servers) == servers and w.servers[0] == SERVER
    total = w.make_cluster().total
    assert w.model.name == "locality"
    assert (w.interval_s, w.on_events, w.placement) == (None, True, "pack")
    for j in w.jobs:
        assert j.arch is Arch.ALLREDUCE and j.worker_demand.gpu == 1
        assert j.num_workers == j.min_workers == j.max_workers == j.num_gpus
        assert j.worker_demand.fits_in(SERVER)
        assert j.demand(j.num_workers).fits_in(total)
        assert w.model.ideal_speed(j) == 1.0
    assert gpus(w).max() <= servers * 8
    assert gpu_sizes(8)[0].tolist() == [2, 4, 8]


def test_deterministic_per_seed() -> None:
    assert make_sched2(9, num_jobs=300).jobs == make_sched2(9, num_jobs=300).jobs
    assert make_sched2(9, num_jobs=300).jobs != make_sched2(10, num_jobs=300).jobs
    assert len(make_sched2(0).jobs) == 1000
    assert make_workload("sched2", seed=5).jobs == make_sched2(5).jobs


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"load": -1.0}, "load"),
        ({"one_gpu_frac": 1.2}, "one_gpu_frac"),
        ({"one_gpu_frac": -0.1}, "one_gpu_frac"),
        ({"interval_scale": 0.0}, "interval_scale"),
        ({"arrival_cv": -2.0}, "arrival_cv"),
        ({"servers": 0}, "servers"),
        ({"num_jobs": 0}, "num_jobs"),
    ],
)
def test_bad_options(kwargs: dict[str, float], option: str) -> None:
    with pytest.raises(ValueError, match=f"^{option} must") as info:
        make_sched2(0, **kwargs)
    assert "\n" not in str(info.value)
