"""The shared training run (`dlsched.rl.training`): budget, keep-best, resume, log repair, OUT
safety — with a toy learner whose validation scores are scripted (no simulator, fast)."""

from __future__ import annotations

import csv
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.rl.checkpoint import PolicyCard, read_card
from dlsched.rl.training import (
    LAST_DIR,
    TRAIN_STATE,
    Budget,
    ResumeError,
    RunSettings,
    Validation,
    every,
    train,
)


class Toy:
    """A learner whose weight is its step count and whose validation scores are scripted."""

    columns = ("step", "loss", "val", "wall_s")

    def __init__(self, scores: Sequence[float], step_s: float = 0.0) -> None:
        self.scores = list(scores)
        self.step_s = step_s
        self.weight = torch.zeros(1)
        self.steps = 0
        self.validations = 0

    def step(self) -> dict[str, object]:
        time.sleep(self.step_s)
        self.steps += 1
        self.weight += 1.0
        return {"step": self.steps, "loss": 1.0 / self.steps}

    def validate(self) -> Validation:
        score = self.scores[min(self.validations, len(self.scores) - 1)]
        self.validations += 1
        return Validation((score,), {"val": score})

    def policy_files(self) -> tuple[Mapping[str, torch.Tensor], PolicyCard]:
        card = PolicyCard(algorithm="toy", workload="none", steps={"steps": self.steps})
        return {"w": self.weight.clone()}, card

    def state_dict(self) -> dict[str, Any]:
        return {"weight": self.weight, "steps": self.steps, "validations": self.validations}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.weight = state["weight"].clone()
        self.steps = int(state["steps"])
        self.validations = int(state["validations"])


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _policy_weight(out: Path) -> float:
    return float(torch.load(out / "policy.pt", weights_only=True)["w"].item())


def test_keeps_the_best_validation_and_logs_every_step(tmp_path: Path) -> None:
    toy = Toy([5.0, 3.0, 4.0, 3.0])  # best at the 2nd validation; a tie later does not replace
    result = train(lambda b: toy, RunSettings(tmp_path, steps=8, validate_when=every(2)))
    assert (result.best_step, result.steps, result.out_of_time) == (4, 8, False)
    assert result.best is not None and result.best.rank == (3.0,)
    assert _policy_weight(tmp_path) == 4.0
    assert read_card(tmp_path).steps == {"steps": 4}
    assert read_card(tmp_path / LAST_DIR).steps == {"steps": 8}
    rows = _rows(tmp_path / "train_log.csv")
    assert [r["step"] for r in rows] == [str(i) for i in range(1, 9)]
    assert [r["val"] for r in rows] == ["", "5.0", "", "3.0", "", "4.0", "", "3.0"]
    walls = [float(r["wall_s"]) for r in rows]
    assert walls == sorted(walls)


def test_budget_stops_after_the_step_that_spends_it_and_validates_it(tmp_path: Path) -> None:
    toy = Toy([9.0, 1.0], step_s=0.05)
    settings = RunSettings(tmp_path, steps=10_000, max_seconds=0.3, validate_when=every(1000))
    result = train(lambda b: toy, settings)
    assert result.out_of_time and 1 <= result.steps < 50
    rows = _rows(tmp_path / "train_log.csv")
    assert len(rows) == result.steps and rows[-1]["val"] == "9.0"  # the last step validated
    assert "wall-time budget" in read_card(tmp_path).notes


def test_budget_counts_the_learner_setup(tmp_path: Path) -> None:
    """A budget spent while the learner is built (teacher data, validation sets) means no step,
    but OUT still gets this run's policy, validated once."""

    def slow(budget: Budget) -> Toy:
        time.sleep(0.25)
        return Toy([2.0])

    result = train(slow, RunSettings(tmp_path, steps=100, max_seconds=0.2))
    assert result.out_of_time and result.steps == 0
    assert _policy_weight(tmp_path) == 0.0
    assert [r["val"] for r in _rows(tmp_path / "train_log.csv")] == ["2.0"]


def test_resume_continues_steps_best_and_wall_time(tmp_path: Path) -> None:
    first = Toy([4.0, 2.0, 3.0], step_s=0.01)
    train(lambda b: first, RunSettings(tmp_path, steps=6, validate_when=every(2)))
    wall_before = float(_rows(tmp_path / "train_log.csv")[-1]["wall_s"])
    second = Toy([0.0, 0.0, 0.0, 5.0, 1.0])  # its counter resumes at the 4th validation
    result = train(
        lambda b: second, RunSettings(tmp_path, steps=10, validate_when=every(2), resume=True)
    )
    assert second.steps == 10 and result.steps == 10
    assert result.best_step == 10  # 5.0 at step 8 is worse than the resumed best 2.0
    rows = _rows(tmp_path / "train_log.csv")
    assert [r["step"] for r in rows] == [str(i) for i in range(1, 11)]
    assert float(rows[6]["wall_s"]) >= wall_before  # wall_s continues, never restarts at 0
    assert _policy_weight(tmp_path) == 10.0


def test_resume_repairs_a_log_line_without_its_newline(tmp_path: Path) -> None:
    train(lambda b: Toy([1.0]), RunSettings(tmp_path, steps=2))
    log_path = tmp_path / "train_log.csv"
    log_path.write_bytes(log_path.read_bytes().rstrip(b"\r\n"))  # a writer killed mid-line
    train(lambda b: Toy([1.0]), RunSettings(tmp_path, steps=4, resume=True))
    rows = _rows(log_path)
    assert [r["step"] for r in rows] == ["1", "2", "3", "4"]
    assert all(r["wall_s"] for r in rows)


def test_resume_drops_log_rows_the_state_does_not_cover(tmp_path: Path) -> None:
    train(lambda b: Toy([1.0]), RunSettings(tmp_path, steps=2))
    with (tmp_path / "train_log.csv").open("a", newline="") as fh:
        fh.write("3,0.3,,9.9\r\n")  # a step after the last checkpoint, redone on resume
    train(lambda b: Toy([1.0]), RunSettings(tmp_path, steps=3, resume=True))
    assert [r["step"] for r in _rows(tmp_path / "train_log.csv")] == ["1", "2", "3"]


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"not a zip file at all",
        b"PK\x03\x04" + b"\x00" * 40,
    ],
)
def test_resume_onto_a_damaged_state_names_the_file(tmp_path: Path, damage: bytes) -> None:
    train(lambda b: Toy([1.0]), RunSettings(tmp_path, steps=2))
    state = tmp_path / LAST_DIR / TRAIN_STATE
    state.write_bytes(damage)
    with pytest.raises(ResumeError, match=str(state)):
        train(lambda b: Toy([1.0]), RunSettings(tmp_path, steps=4, resume=True))


def test_resume_onto_a_state_of_another_learner_names_the_file(tmp_path: Path) -> None:
    train(lambda b: Toy([1.0]), RunSettings(tmp_path, steps=2))
    state = tmp_path / LAST_DIR / TRAIN_STATE
    saved = torch.load(state, weights_only=True)
    del saved["learner"]["weight"]
    torch.save(saved, state)
    with pytest.raises(ResumeError, match="does not fit"):
        train(lambda b: Toy([1.0]), RunSettings(tmp_path, steps=4, resume=True))
    torch.save({"value": torch.zeros(1)}, state)  # DL2's layout before this module
    with pytest.raises(ResumeError, match="not a training state of this version"):
        train(lambda b: Toy([1.0]), RunSettings(tmp_path, steps=4, resume=True))


def test_a_fresh_run_refuses_an_out_with_another_run_unless_forced(tmp_path: Path) -> None:
    train(lambda b: Toy([3.0, 2.0, 1.0]), RunSettings(tmp_path, steps=3))
    built: list[Toy] = []

    def make(budget: Budget) -> Toy:
        built.append(Toy([2.0]))
        return built[-1]

    with pytest.raises(ValueError, match="--force"):
        train(make, RunSettings(tmp_path, steps=1))
    assert not built  # refused before any work
    assert _policy_weight(tmp_path) == 3.0  # the old run is untouched
    (tmp_path / "notes.txt").write_text("mine")
    train(make, RunSettings(tmp_path, steps=1, force=True))
    assert _policy_weight(tmp_path) == 1.0
    assert len(_rows(tmp_path / "train_log.csv")) == 1
    assert (tmp_path / "notes.txt").read_text() == "mine"  # only the run's own files go


def test_cli_resume_onto_a_damaged_state_is_one_line_exit_2(tmp_path: Path) -> None:
    args = ["train", "deeprm", "--out", str(tmp_path), "--iterations", "1", "--jobsets", "1"]
    args += ["--episodes", "2", "--validation-jobsets", "1", "--workers", "1"]
    args += ["--max-steps", "30"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 2 and "--force" in again.output
    (tmp_path / LAST_DIR / TRAIN_STATE).write_bytes(b"garbage")
    result = CliRunner().invoke(app, [*args, "--resume"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and TRAIN_STATE in lines[0], result.output


def test_cli_resume_continues_a_real_learner(tmp_path: Path) -> None:
    """DeepRM's learner: a resumed run goes on from its iteration, its log grows, wall_s too."""
    args = ["train", "deeprm", "--out", str(tmp_path), "--jobsets", "1", "--episodes", "2"]
    args += ["--validation-jobsets", "1", "--workers", "1", "--max-steps", "30"]
    args += ["--validate-every", "1"]
    first = CliRunner().invoke(app, [*args, "--iterations", "2"])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(app, [*args, "--iterations", "4", "--resume"])
    assert again.exit_code == 0, again.output
    rows = _rows(tmp_path / "train_log.csv")
    assert [r["iteration"] for r in rows] == ["1", "2", "3", "4"]
    walls = [float(r["wall_s"]) for r in rows]
    assert walls == sorted(walls)
    assert read_card(tmp_path / LAST_DIR).steps["iterations"] == 4
