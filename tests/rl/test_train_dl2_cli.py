"""``dlsched train dl2``: a tiny run end to end (on OfflineRL's fitted speeds)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.rl.checkpoint import read_card

runner = CliRunner()

TINY = ["--servers", "3", "--load", "0.25", "-o", "num_jobs=8", "--J", "8", "--hidden", "16,16"]


@pytest.mark.slow
def test_train_dl2_tiny_run_on_fitted_speeds(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["train", "dl2", "--out", str(out), *TINY, "--sl-episodes", "1", "--sl-steps", "4"]
    args += ["--rl-steps", "4", "--eval-every", "2", "--val-seeds", "201"]
    args += ["--speed-model", "optimus", "--fit-samples", "6"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    card = read_card(out)
    assert card.algorithm == "dl2" and card.shapes["J"] == 8
    assert card.workload_params["speed_model"] == "optimus"
    assert card.workload_params["fit_samples"] == 6
    with (out / "train_log.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["phase"], r["step"]) for r in rows] == [
        ("sl", "2"),
        ("sl", "4"),
        ("rl", "2"),
        ("rl", "4"),
    ]
    assert (out / "last" / "train_state.pt").exists()


def test_train_dl2_bad_speed_model_is_a_one_line_error(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["train", "dl2", "--out", str(tmp_path / "x"), "--speed-model", "oracle"]
    )
    assert result.exit_code == 2
    assert "speed-model" in result.output and len(result.output.strip().splitlines()) == 1


def test_train_dl2_log_is_one_runs_and_resume_checks_its_columns(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["train", "dl2", "--out", str(out), *TINY, "--sl-episodes", "1", "--sl-steps", "2"]
    args += ["--rl-steps", "0", "--eval-every", "2", "--val-seeds", "201"]
    for extra in ([], ["--force"]):  # a second fresh run into the same OUT starts its own log
        result = runner.invoke(app, [*args, *extra])
        assert result.exit_code == 0, result.output
        with (out / "train_log.csv").open() as fh:
            assert [r["step"] for r in csv.DictReader(fh)] == ["2"]
    old = "phase,step,wall_s,val_avg_jct_s,stat\nsl,2,1.0,100.0,0.5\n"
    (out / "train_log.csv").write_text(old)  # an older version's columns
    result = runner.invoke(app, [*args, "--resume"])
    assert result.exit_code == 2, result.output
    assert "train_log.csv" in result.output and "move the old log away" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert (out / "train_log.csv").read_text() == old
