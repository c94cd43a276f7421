"""Locality: SCED² Fig. 1 ratios, growth with servers, gang and elastic rules, module tables."""

from __future__ import annotations

import itertools
import math

import pytest

from dlsched.core import Allocation, Arch, JobSpec, Resources
from dlsched.models.base import ThroughputModel
from dlsched.models.locality import (
    CATEGORY,
    CATEGORY_MIX,
    SENSITIVITY,
    Locality,
    slowdown,
)

FIG1 = {"vgg-16": 5.9, "transformer": 2.7, "deepspeech": 1.6, "inception-v3": 1.4}


def job(model: str, gpus: int, lo: int | None = None, hi: int | None = None) -> JobSpec:
    return JobSpec(
        0,
        0.0,
        model,
        Arch.ALLREDUCE,
        3600.0,
        Resources(gpu=1, cpu=4, mem=32),
        num_workers=gpus,
        min_workers=gpus if lo is None else lo,
        max_workers=gpus if hi is None else hi,
    )


def spread(*counts: int) -> Allocation:
    return Allocation.of(enumerate(counts))


@pytest.mark.parametrize(("model", "ratio"), sorted(FIG1.items()))
def test_fig1_four_gpus_one_vs_two_servers(model: str, ratio: float) -> None:
    m = Locality()
    single = m.speed(job(model, 4), spread(4))
    distributed = m.speed(job(model, 4), spread(2, 2))
    assert single == 1.0
    assert single / distributed == pytest.approx(ratio, rel=1e-12)


def test_tables_are_consistent() -> None:
    assert set(SENSITIVITY) == set(CATEGORY)
    assert len(SENSITIVITY) == 6
    assert set(CATEGORY.values()) == set(CATEGORY_MIX)
    assert math.isclose(sum(CATEGORY_MIX.values()), 1.0)
    assert CATEGORY_MIX == {"cv": 0.10, "nlp": 0.60, "speech": 0.30}
    assert all(s >= 1.0 for s in SENSITIVITY.values())
    for model, ratio in FIG1.items():
        assert SENSITIVITY[model] == ratio


def test_slowdown_grows_with_servers_and_is_bounded() -> None:
    for s in SENSITIVITY.values():
        values = [slowdown(s, k) for k in range(1, 20)]
        assert values[0] == 1.0
        assert values[1] == pytest.approx(s)
        assert all(b >= a for a, b in itertools.pairwise(values))
        assert values[-1] < 2 * s - 1
    assert slowdown(5.9, 4) == pytest.approx(1 + 2 * 4.9 * 3 / 4)


def test_one_gpu_jobs_are_insensitive() -> None:
    m = Locality()
    for model in SENSITIVITY:
        assert m.speed(job(model, 1), spread(1)) == 1.0


def test_more_sensitive_models_lose_more() -> None:
    m = Locality()
    order = sorted(SENSITIVITY, key=SENSITIVITY.__getitem__)
    speeds = [m.speed(job(model, 8), spread(2, 2, 2, 2)) for model in order]
    assert speeds == sorted(speeds, reverse=True)


def test_gang_rule_for_fixed_size_jobs() -> None:
    m = Locality()
    assert m.speed(job("resnet-50", 4), spread(3)) == 0.0
    assert m.speed(job("resnet-50", 4), Allocation.EMPTY) == 0.0
    assert m.speed(job("resnet-50", 4), spread(8)) == 1.0  # extra GPUs add nothing


def test_large_jobs_are_measured_against_their_best_placement() -> None:
    m = Locality()
    j = job("vgg-16", 16)
    assert m.speed(j, spread(8, 8)) == 1.0
    assert m.speed(j, spread(8, 4, 4)) == pytest.approx(slowdown(5.9, 2) / slowdown(5.9, 3))
    assert Locality(gpus_per_server=4).speed(j, spread(4, 4, 4, 4)) == 1.0


def test_elastic_jobs_scale_linearly_with_locality_on_top() -> None:
    m = Locality()
    j = job("transformer", 8, lo=2, hi=16)
    assert m.speed(j, spread(1)) == 0.0
    assert m.speed(j, spread(4)) == pytest.approx(0.5)
    assert m.speed(j, spread(8, 8)) == pytest.approx(2.0 / 2.7)
    assert m.speed(j, spread(8, 8, 8)) == pytest.approx(2.0 / slowdown(2.7, 3))


def test_ideal_speed_and_protocol() -> None:
    m: ThroughputModel = Locality()
    assert m.name == "locality"
    assert m.ideal_speed(job("alexnet", 4)) == 1.0


def test_unknown_model_and_bad_options() -> None:
    with pytest.raises(ValueError, match="unknown model 'toy'"):
        Locality().speed(job("toy", 2), spread(1, 1))
    with pytest.raises(ValueError, match="gpus_per_server"):
        Locality(gpus_per_server=0)
    with pytest.raises(ValueError, match="sensitivity of 'x'"):
        Locality(sensitivity={"x": 0.5})
    assert Locality(sensitivity={"toy": 2.0}).speed(job("toy", 2), spread(1, 1)) == 0.5
