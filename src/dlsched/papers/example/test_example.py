"""The example paper's tests: it trains in seconds through the shared run, resumes, loads by
name, and its card check runs from the manifest (collected by pytest from the package)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.papers.example.config import ExampleConfig
from dlsched.papers.example.train import train_example
from dlsched.rl.checkpoint import read_card
from dlsched.rl.run_options import RunOptions
from dlsched.runner import simulate

SMALL = ExampleConfig(iterations=2, population=8, elite=2, train_seeds=2, validation_seeds=3)


def test_training_learns_to_beat_arrival_order_and_resumes(tmp_path: Path) -> None:
    first = train_example(SMALL, RunOptions(tmp_path))
    assert first.steps == 2 and (tmp_path / "policy.pt").exists()
    card = read_card(tmp_path)
    assert card.algorithm == "example" and card.steps["iterations"] >= 1
    assert card.validation["avg_slowdown"] < 0.8 * card.validation["arrival_order_avg_slowdown"]
    longer = ExampleConfig(**{**SMALL.__dict__, "iterations": 3})
    resumed = train_example(longer, RunOptions(tmp_path, resume=True))
    assert resumed.steps == 3
    rows = (tmp_path / "train_log.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows[1:]] == ["1", "2", "3"]


def test_a_fresh_run_refuses_a_folder_holding_another(tmp_path: Path) -> None:
    train_example(
        ExampleConfig(iterations=1, population=2, elite=1, train_seeds=1), RunOptions(tmp_path)
    )
    with pytest.raises(ValueError, match="holds another training run"):
        train_example(SMALL, RunOptions(tmp_path))


def test_the_shipped_policy_runs_by_name_and_beats_arrival_order() -> None:
    from dlsched.papers.example.policy import LinearOrder

    shipped = simulate("deeprm", "example", seed=3, load=1.3).summary()["avg_slowdown"]
    arrival = simulate("deeprm", LinearOrder([0.0, 0.0, 0.0]), seed=3, load=1.3)
    assert shipped < arrival.summary()["avg_slowdown"]


def test_the_manifest_card_check_refuses_other_features() -> None:
    from dlsched.rl.card_limits import validate_card_data

    validate_card_data({"algorithm": "example", "shapes": {"features": 3}})
    with pytest.raises(ValueError, match="'features' must be 3"):
        validate_card_data({"algorithm": "example", "shapes": {"features": 7}})
