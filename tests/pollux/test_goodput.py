"""Pollux goodput model against points computed by hand from the shipped profiles."""

from __future__ import annotations

import math

import pytest

from dlsched.core import Allocation
from dlsched.models.goodput import (
    BatchConfig,
    PolluxGoodput,
    normalise_placement,
    packed_placement,
    parse_model,
    profile,
)


def test_placement_normalisation() -> None:
    assert normalise_placement((4, 0, 2)) == (2, 4)
    assert normalise_placement((3, 1, 2)) == (1, 2, 3)
    assert packed_placement(10) == (4, 4, 2)


def test_step_time_is_the_measured_row_and_linear_between_rows() -> None:
    cifar = profile("cifar10")
    # placements.csv rows "1,32,0.0427886962890625,..." and "1,45,0.05048525333404541,..."
    assert cifar.step_sync_s((1,), 32.0)[0] == pytest.approx(0.0427886962890625)
    mid = cifar.step_sync_s((1,), 38.5)[0]
    assert mid == pytest.approx((0.0427886962890625 + 0.05048525333404541) / 2)


def test_gain_is_one_at_the_initial_batch_and_pgns_formula_above() -> None:
    cifar = profile("cifar10")
    assert cifar.init_bsz == 128
    assert cifar.gains(128) == pytest.approx(1.0)
    # validation-1024.csv, epoch 0: grad_sqr 8.978532644212862, grad_var 6.740279795719679
    sqr, var, scale = 8.978532644212862, 6.740279795719679, 1024 / 128
    assert cifar.gains(1024)[0] == pytest.approx((var + sqr) / (var / scale + sqr))
    # at the initial batch every step is one unit of progress: steps == progress
    assert cifar.steps_per_progress(128) == pytest.approx(1.0)


def test_fixed_batch_split_follows_the_artifact_rules() -> None:
    cifar = profile("cifar10")  # local batches 32..1024 measured
    assert cifar.max_local_bsz == 1024
    assert cifar.fixed_batch_config(2048, 8) == BatchConfig(256, 0)
    assert cifar.fixed_batch_config(2048, 1) == BatchConfig(1024, 1)  # 2048 local: 2 passes
    assert cifar.fixed_batch_config(256, 1) == BatchConfig(128, 1)  # 1 replica above B0
    yolo = profile("yolov3")  # local batch capped at 8 (GPU memory)
    assert yolo.fixed_batch_config(64, 4) == BatchConfig(8, 1)


def test_goodput_of_one_gpu_at_the_initial_batch_is_one_over_step_time() -> None:
    model = PolluxGoodput()
    cifar = profile("cifar10")
    step = cifar.step_sync_s((1,), 128.0)[0]
    assert model.speed_at("cifar10@128", (1,)) == pytest.approx(1.0 / step)
    assert cifar.total_progress == pytest.approx(min(39100.0, cifar.epoch_ends[-1]))


def test_adaptive_batch_is_within_its_grid_step_of_any_fixed_one() -> None:
    model = PolluxGoodput()
    for app in ("cifar10", "bert", "deepspeech2", "imagenet", "yolov3"):
        prof = profile(app)
        for replicas in (1, 4, 8):
            fixed = model.speed_at(f"{app}@{prof.init_bsz * replicas}", packed_placement(replicas))
            assert model.speed_at(app, packed_placement(replicas)) >= fixed * 0.99  # 50-point grid


def test_speed_depends_on_the_placement() -> None:
    model = PolluxGoodput()
    from dlsched.workloads.pollux import make_pollux

    spec = next(s for s in make_pollux(jobs="tuned").jobs if s.model.startswith("imagenet"))
    packed = model.speed(spec, Allocation.of([(0, 4)]))
    spread = model.speed(spec, Allocation.of([(0, 1), (1, 1), (2, 1), (3, 1)]))
    assert packed > 0 and spread > 0 and packed != pytest.approx(spread)  # measured rows differ
    assert math.isfinite(model.best_speed(spec)) and model.best_speed(spec) >= packed


def test_parse_model() -> None:
    assert parse_model("cifar10") == ("cifar10", None)
    assert parse_model("cifar10@2048") == ("cifar10", 2048)
    assert parse_model("ncf") == ("ncf", 32768)
    with pytest.raises(ValueError, match="unknown Pollux application"):
        profile("gpt")
