"""MeasuredPS: exact at measured points, failed rows left out, clamped beyond the range."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.core import Allocation, Arch, JobSpec, Resources
from dlsched.models.base import ThroughputModel
from dlsched.models.measured_ps import (
    STEPS_PER_EPOCH,
    MeasuredPS,
    batch_sizes,
    load_measurements,
    read_rows,
)

MODELS = (
    "resnet-50",
    "vgg-16",
    "resnext-110",
    "inception-bn",
    "seq2seq",
    "cnn-text-classification",
    "dssm",
    "wlm",
)
MODEL = MeasuredPS()  # shared: interpolants are built once per model


def ps_job(model: str = "resnet-50", workers: int = 2, ps: int = 2) -> JobSpec:
    return JobSpec(
        job_id=0,
        submit_time_s=0.0,
        model=model,
        arch=Arch.PS,
        total_work=10.0,
        worker_demand=Resources(gpu=1, cpu=2, mem=10),
        ps_demand=Resources(cpu=2, mem=10),
        num_workers=workers,
        num_ps=ps,
        max_workers=16,
        max_ps=16,
    )


def test_file_has_every_row_and_model() -> None:
    rows = read_rows()
    assert len(rows) == 804
    assert {r.model for r in rows} == set(MODELS)
    assert set(STEPS_PER_EPOCH) == set(MODELS)
    assert MODEL.models == MODELS  # file order is DL2's job-type order


def test_failed_rows_are_excluded() -> None:
    raw = load_measurements(include_failed=True)
    kept = load_measurements()
    failed = {(m, k) for m, pts in raw.items() for k, v in pts.items() if v == 0.0}
    assert len(failed) == 9
    assert {m for m, _ in failed} == {"vgg-16", "inception-bn"}
    assert sum(len(v) for v in kept.values()) == 804 - 9
    for model, key in failed:
        assert key not in kept[model]
        # interpolated from its neighbours instead of reading 0
        assert MODEL.steps_per_s(model, *key) > 0.0
    assert ("vgg-16", (4, 8)) in failed


def test_interpolation_equals_measured_values() -> None:
    for model, points in load_measurements().items():
        for (p, w), speed in points.items():
            assert MODEL.steps_per_s(model, p, w) == pytest.approx(speed, rel=1e-9)
            assert MODEL.epochs_per_s(model, p, w) == pytest.approx(
                speed / STEPS_PER_EPOCH[model], rel=1e-9
            )


def test_interpolated_values_stay_in_measured_band() -> None:
    for model, points in load_measurements().items():
        lo, hi = min(points.values()), max(points.values())
        max_ps, max_workers = MODEL.max_counts(model)
        for p in range(1, max_ps + 1):
            for w in range(1, max_workers + 1):
                assert 0.5 * lo <= MODEL.steps_per_s(model, p, w) <= hi * 1.0001


def test_measured_maxima() -> None:
    assert MODEL.max_counts("resnet-50") == (23, 12)
    assert MODEL.max_counts("wlm") == (23, 11)
    assert MODEL.max_counts("dssm") == (23, 23)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(MODELS), st.integers(0, 40), st.integers(0, 40))
def test_clamped_beyond_measured_range(model: str, p: int, w: int) -> None:
    max_ps, max_workers = MODEL.max_counts(model)
    speed = MODEL.epochs_per_s(model, p, w)
    assert speed == MODEL.epochs_per_s(model, min(p, max_ps), min(w, max_workers))
    if p >= max_ps:  # more PS past the measured maximum changes nothing
        assert MODEL.epochs_per_s(model, p + 1, w) == speed
    if w >= max_workers:
        assert MODEL.epochs_per_s(model, p, w + 1) == speed
    if p == 0 or w == 0:
        assert speed == 0.0
    else:
        assert speed > 0.0


def test_speed_and_ideal_speed_follow_counts() -> None:
    spec = ps_job("seq2seq", workers=3, ps=5)
    alloc = Allocation.of(workers=[(0, 2), (1, 1)], ps=[(0, 1), (2, 4)])
    expected = load_measurements()["seq2seq"][(5, 3)] / STEPS_PER_EPOCH["seq2seq"]
    assert MODEL.speed(spec, alloc) == pytest.approx(expected)
    assert MODEL.ideal_speed(spec) == pytest.approx(expected)
    assert MODEL.speed(spec, Allocation.of(workers=[(0, 3)])) == 0.0  # no PS
    assert MODEL.speed(spec, Allocation.of(ps=[(0, 3)])) == 0.0  # no worker
    assert MODEL.speed(spec, Allocation.EMPTY) == 0.0


def test_is_a_throughput_model() -> None:
    model: ThroughputModel = MeasuredPS()
    assert model.name == "measured_ps"


def test_results_are_cached() -> None:
    model = MeasuredPS()
    first = model.epochs_per_s("vgg-16", 3, 4)

    def boom(name: str) -> None:
        raise AssertionError(f"interpolant of {name} consulted again")

    model._table = boom
    assert model.epochs_per_s("vgg-16", 3, 4) == first


def test_rejects_unknown_model_and_non_ps_jobs() -> None:
    with pytest.raises(ValueError, match="no measurements"):
        MODEL.epochs_per_s("gpt-9", 1, 1)
    other = JobSpec(0, 0.0, "resnet-50", Arch.ALLREDUCE, 1.0, Resources(gpu=1))
    with pytest.raises(ValueError, match="PS jobs"):
        MODEL.speed(other, Allocation.of(workers=[(0, 1)]))


def test_custom_steps_per_epoch_scale_speed() -> None:
    halved = MeasuredPS({m: 2 * s for m, s in STEPS_PER_EPOCH.items()})
    assert halved.epochs_per_s("wlm", 3, 3) == pytest.approx(MODEL.epochs_per_s("wlm", 3, 3) / 2)


def test_batch_sizes() -> None:
    sizes = batch_sizes()
    assert sizes["resnet-50"] == 32
    assert sizes["dssm"] == 256
    assert set(sizes) == set(MODELS)
