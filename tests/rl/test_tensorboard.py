"""Training curves as TensorBoard event files (`dlsched.rl.tensorboard`, ``--tensorboard``)."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.rl.tensorboard import CurveMirror

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import (
    EventAccumulator,
)


def scalars(log_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar tag in ``log_dir``'s event files: [(step, value), …]."""
    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_mirror_writes_numeric_columns_and_skips_the_rest(tmp_path: Path) -> None:
    with CurveMirror(tmp_path) as mirror:
        mirror.add({"val": 3.5, "phase": "sl", "stalls": "", "nan": float("nan")}, 10, "sl")
        mirror.add({"val": "2.25", "flag": True}, 20, "sl")
    assert scalars(tmp_path) == {"sl/val": [(10, 3.5), (20, 2.25)]}


def test_missing_package_is_a_clear_value_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    with pytest.raises(ValueError, match=r"--tensorboard .*dlsched\[tensorboard\]"):
        CurveMirror(tmp_path)


def test_train_dl2_mirrors_its_csv_log(tmp_path: Path) -> None:
    out, board = tmp_path / "run", tmp_path / "tb"
    args = ["train", "dl2", "--out", str(out), "--servers", "3", "--load", "0.25"]
    args += ["-o", "num_jobs=8", "--J", "8", "--hidden", "16,16", "--sl-episodes", "1"]
    args += ["--sl-steps", "4", "--rl-steps", "2", "--eval-every", "2", "--val-seeds", "201"]
    args += ["--stall-probes", "0", "--tensorboard", str(board)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    with (out / "train_log.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    tags = scalars(board)
    for phase in ("sl", "rl"):
        logged = [(int(r["step"]), float(r["val_avg_jct_s"])) for r in rows if r["phase"] == phase]
        mirrored = tags[f"{phase}/val_avg_jct_s"]
        assert [(s, pytest.approx(v, abs=0.05)) for s, v in mirrored] == logged


@pytest.mark.parametrize(
    ("command", "args", "step_column"),
    [
        (
            "deeprm",
            [
                *("--iterations", "2", "--jobsets", "1", "--episodes", "2"),
                *("--validation-jobsets", "1", "--workers", "1", "--max-steps", "60"),
            ],
            "iteration",
        ),
        ("sched2", ["--episodes", "2", "--num-jobs", "10"], "episode"),
    ],
)
def test_train_deeprm_and_sched2_mirror_their_csv_logs(
    tmp_path: Path, command: str, args: list[str], step_column: str
) -> None:
    out, board = tmp_path / "run", tmp_path / "tb"
    argv = ["train", command, "--out", str(out), *args, "--tensorboard", str(board)]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    with (out / "train_log.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    logged = [(int(r[step_column]), float(r["wall_s"])) for r in rows]
    mirrored = scalars(board)["wall_s"]
    assert [(s, pytest.approx(v, rel=1e-4)) for s, v in mirrored] == logged
