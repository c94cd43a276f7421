"""Issue 35's training-command cases, on the command line of every ``train`` command: a fresh
run into a folder holding another run is refused (``--force`` replaces it), so an old policy is
never reported as new and ``--max-minutes 0`` deletes nothing; ``--resume`` repairs a log whose
last row lost its newline and continues ``wall_s``; a damaged ``train_state.pt`` is one line
naming the file. (The budget over teacher data collection has no case here that failed on
cc0e25e with an elastic workload; the issue's case, ``--workload sched2``, is refused up front:
`tests/cli/test_one_line.py`.)

Each run is a few seconds (tiny workloads, one or two updates), in this process.
"""

from __future__ import annotations

import csv
import logging
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from dlsched.cli import app

runner = CliRunner()

FAST: dict[str, list[str]] = {
    "deeprm": [
        *("--iterations", "1", "--jobsets", "1", "--episodes", "2"),
        *("--validation-jobsets", "1", "--workers", "1", "--max-steps", "30"),
        *("--validate-every", "1"),
    ],
    "dl2": [
        *("--servers", "2", "-o", "num_jobs=10", "--sl-steps", "2", "--sl-episodes", "1"),
        *("--rl-steps", "2", "--eval-every", "1", "--rl-eval-every", "1"),
        *("--val-seeds", "201", "--J", "4", "--stall-probes", "0"),
    ],
    "sched2": ["--episodes", "2", "--num-jobs", "10", "--method", "dqn"],
}
"""Arguments of a run of a few seconds, per ``train`` command."""

MORE: dict[str, list[str]] = {
    "deeprm": ["--iterations", "3"],
    "dl2": ["--rl-steps", "4"],
    "sched2": ["--episodes", "4"],
}
"""Arguments that continue a FAST run for a few more updates (``--resume``)."""

ZERO_BUDGET: dict[str, str] = {"deeprm": "0.01", "dl2": "0", "sched2": "0.01"}
"""The smallest ``--max-minutes`` each command takes."""


def _train(command: str, out: Path, *extra: str) -> Result:
    return runner.invoke(app, ["train", command, "--out", str(out), *FAST[command], *extra])


def _one_error_line(result: Result, *needles: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output[-600:])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One finished FAST run per command, copied by the tests that change it."""
    runs: dict[str, Path] = {}
    for command in FAST:
        out = tmp_path_factory.mktemp(command) / "run"
        result = _train(command, out)
        assert result.exit_code == 0, result.output[-600:]
        runs[command] = out
    return runs


def _copy(trained: dict[str, Path], command: str, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(trained[command], out)
    return out


def _snapshot(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}


def _rows(log: Path) -> list[dict[str, str]]:
    with log.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        rows = list(reader)
    assert all(len(row) == len(header) for row in rows), rows  # no rows glued together
    return [dict(zip(header, row, strict=True)) for row in rows]


@pytest.mark.parametrize("budget", [False, True], ids=["plain", "max-minutes-0"])
@pytest.mark.parametrize("command", sorted(FAST))
def test_a_fresh_run_into_an_old_out_is_refused_and_force_replaces_it(
    tmp_path: Path, trained: dict[str, Path], command: str, budget: bool
) -> None:
    out = _copy(trained, command, tmp_path)
    before = _snapshot(out)
    assert {"policy.pt", "card.json", "train_log.csv"} <= set(before)
    extra = ["--max-minutes", ZERO_BUDGET[command]] if budget else []
    again = _train(command, out, *extra)
    _one_error_line(again, "--force")
    assert _snapshot(out) == before  # the old run's policy, card and log are untouched
    forced = _train(command, out, "--force")
    assert forced.exit_code == 0, forced.output[-600:]
    assert (out / "train_log.csv").exists()


@pytest.mark.parametrize("command", sorted(FAST))
def test_resume_repairs_a_log_row_without_its_newline_and_continues_wall_s(
    tmp_path: Path, trained: dict[str, Path], command: str
) -> None:
    out = _copy(trained, command, tmp_path)
    log = out / "train_log.csv"
    first = _rows(log)
    log.write_bytes(log.read_bytes().rstrip(b"\r\n"))  # the last row lost its newline
    resumed = _train(command, out, *MORE[command], "--resume")
    assert resumed.exit_code == 0, resumed.output[-600:]
    rows = _rows(log)
    assert len(rows) > len(first)
    assert rows[: len(first)] == first
    wall = [float(row["wall_s"]) for row in rows if row.get("wall_s")]
    assert wall == sorted(wall), wall  # wall_s continues, never restarts at 0


DAMAGE: dict[str, bytes] = {
    "empty": b"",
    "text": b"not a checkpoint at all",
    "zip-header": b"PK\x03\x04" + b"\x00" * 40,
    "pickle": b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00.",
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("command", sorted(FAST))
def test_resume_onto_a_damaged_state_is_one_line_naming_the_file(
    tmp_path: Path, trained: dict[str, Path], command: str, damage: str
) -> None:
    out = _copy(trained, command, tmp_path)
    state = out / "last" / "train_state.pt"
    state.parent.mkdir(exist_ok=True)
    state.write_bytes(DAMAGE[damage])
    _one_error_line(_train(command, out, *MORE[command], "--resume"), "train_state.pt")


PAPER_DL2 = [
    *("--paper", "--servers", "2", "-o", "num_jobs=10", "--sl-steps", "2"),
    *("--sl-episodes", "1", "--rl-steps", "2", "--eval-every", "1", "--val-seeds", "201"),
    *("--num-envs", "2"),
]
"""``train dl2 --paper`` for a few seconds."""


def test_train_dl2_paper_takes_the_run_options_of_its_command_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``--paper`` runs with the command's own ``--force``, ``--max-minutes`` and
    ``--tensorboard`` (it once built options of its own: ``--force`` was never honoured)."""
    out = tmp_path / "out"
    out.mkdir()
    for name in ("policy.pt", "card.json", "train_log.csv"):  # another run's files
        (out / name).write_text(f"old {name}")
    before = _snapshot(out)
    args = ["train", "dl2", "--out", str(out), *PAPER_DL2]
    _one_error_line(runner.invoke(app, args), "--force")
    assert _snapshot(out) == before
    board = tmp_path / "tb"
    with caplog.at_level(logging.WARNING):
        forced = runner.invoke(
            app, [*args, "--force", "--max-minutes", "0", "--tensorboard", str(board)]
        )
    assert forced.exit_code == 0, forced.output[-600:]
    assert "budget of 0 s spent" in caplog.text  # --max-minutes reached the run
    assert len(_rows(out / "train_log.csv")) == 1  # the first validation only
    assert (out / "policy.pt").read_bytes() != before["policy.pt"]
    assert list(board.glob("events.out.tfevents.*"))
