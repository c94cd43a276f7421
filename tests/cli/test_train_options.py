"""Every ``dlsched train`` command takes the same common options and writes the same files
(issue 19: ``--time-budget`` vs ``--minutes``, ``progress.csv`` vs ``train_log.csv``, ``OUT/best``
vs ``OUT/policy.pt``)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from dlsched.cli import app

runner = CliRunner()

COMMON = {"--out", "--max-minutes", "--tensorboard"}
PENDING: dict[str, set[str]] = {}
"""Options a command may lack for now (name → options); empty: every command has them all."""
FILES = {"policy.pt", "card.json", "train_log.csv"}


def _train_commands() -> dict[str, Any]:
    """``dlsched train``'s sub-commands (Typer's own Click: duck-typed)."""
    group: Any = typer.main.get_command(app)
    return dict(group.commands["train"].commands)


def _options(command: Any) -> dict[str, Any]:
    return {name: p for p in command.params for name in p.opts}


def test_every_train_command_has_the_common_options():
    commands = _train_commands()
    assert {"dl2", "deeprm", "sched2"} <= set(commands)
    for name, command in commands.items():
        options = _options(command)
        pending = PENDING.get(name, set()) - set(options)
        missing = COMMON - set(options) - pending
        assert not missing, f"train {name} lacks {sorted(missing)}"
        # With --experiment, the file may give --out: required when the command runs
        # (test_experiment.test_train_sched2_takes_the_trace_options), not to Typer.
        required = options["--out"].required or "--experiment" in options
        assert required, f"train {name}: --out is optional"
        if "--max-minutes" in options:
            assert options["--max-minutes"].default is None  # no limit unless asked
        for old in ("--time-budget", "--minutes"):
            if old in options:  # deprecated spellings are kept hidden for one release
                assert options[old].hidden, f"train {name} {old} is not hidden"


def _files(out: Path) -> set[str]:
    return {p.name for p in out.iterdir() if p.is_file()}


def _log_header(out: Path) -> list[str]:
    with (out / "train_log.csv").open() as fh:
        return next(csv.reader(fh))


def test_train_deeprm_and_sched2_write_the_same_files(tmp_path: Path):
    deeprm, sched2 = tmp_path / "deeprm", tmp_path / "sched2"
    args = ["train", "deeprm", "--out", str(deeprm), "--iterations", "1", "--jobsets", "1"]
    args += ["--episodes", "2", "--validation-jobsets", "1", "--workers", "1"]
    args += ["--max-steps", "60", "--max-minutes", "5"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    args = ["train", "sched2", "--out", str(sched2), "--episodes", "1", "--num-jobs", "10"]
    args += ["--max-minutes", "5"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert _files(deeprm) >= FILES
    assert _files(deeprm) == _files(sched2)
    assert not (deeprm / "best").exists() and (deeprm / "last" / "policy.pt").is_file()
    for out in (deeprm, sched2):
        assert "wall_s" in _log_header(out)


def test_max_minutes_stops_training_and_old_spelling_warns(tmp_path: Path, caplog: Any):
    out = tmp_path / "run"
    args = ["train", "deeprm", "--out", str(out), "--iterations", "100000", "--jobsets", "1"]
    args += ["--episodes", "2", "--validation-jobsets", "1", "--workers", "1", "--max-steps", "60"]
    result = runner.invoke(app, [*args, "--time-budget", "1"])
    assert result.exit_code == 0, result.output
    assert "--time-budget is deprecated" in caplog.text  # in the log, after the run
    with (out / "train_log.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert 1 <= len(rows) < 100000
    # the budget (counted from before the learner is built) stopped it; the last logged row
    # may come from a validation just before the budget ran out
    assert "wall-time budget of 1 s spent" in caplog.text

    caplog.clear()
    both = runner.invoke(app, [*args, "--time-budget", "1", "--max-minutes", "1", "--force"])
    assert both.exit_code == 2
    assert "--max-minutes" in both.output and len(both.output.strip().splitlines()) == 1
    assert "deprecated" not in caplog.text  # no warning before (or beside) the error
