"""The example paper's tests (collected by pytest from the package): it trains in seconds
through the shared run and resumes, its shipped policy runs by name, its card check runs from
the manifest."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from dlsched.papers.example.config import ExampleConfig
from dlsched.papers.example.policy import LinearOrder
from dlsched.papers.example.train import train_example
from dlsched.rl.card_limits import validate_card_data
from dlsched.rl.checkpoint import read_card
from dlsched.rl.run_options import RunOptions
from dlsched.runner import simulate

SMALL = ExampleConfig(iterations=2, population=8, elite=2, train_seeds=2, validation_seeds=3)


def test_training_learns_to_beat_arrival_order_and_resumes(tmp_path: Path) -> None:
    assert train_example(SMALL, RunOptions(tmp_path)).steps == 2
    card = read_card(tmp_path)
    assert card.algorithm == "example" and card.steps["iterations"] >= 1
    assert card.validation["avg_slowdown"] < 0.8 * card.validation["arrival_order_avg_slowdown"]
    resumed = train_example(replace(SMALL, iterations=3), RunOptions(tmp_path, resume=True))
    assert resumed.steps == 3
    rows = (tmp_path / "train_log.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows[1:]] == ["1", "2", "3"]


def test_the_shipped_policy_runs_by_name_and_beats_arrival_order() -> None:
    shipped = simulate("deeprm", "example", seed=3, load=1.3).summary()["avg_slowdown"]
    arrival = simulate("deeprm", LinearOrder([0.0, 0.0, 0.0]), seed=3, load=1.3)
    assert shipped < arrival.summary()["avg_slowdown"]


def test_the_manifest_card_check_refuses_other_features() -> None:
    validate_card_data({"algorithm": "example", "shapes": {"features": 3}})
    with pytest.raises(ValueError, match="'features' must be 3"):
        validate_card_data({"algorithm": "example", "shapes": {"features": 7}})
