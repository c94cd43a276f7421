"""Issue 35, "one line means one line": a warning logged before an error (``--jobs-csv``'s
deprecation, a policy outside its setting) no longer makes the error two lines; an
unreachable Dask scheduler fails within 5 s; ``train dl2`` on a workload without elastic jobs
is one line, exit 2. Warnings of a run that succeeds are still printed."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.commands.common import one_line_errors

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = ["-w", "deeprm", "-s", "deeprm:1.3", "--load", "1.9", "-o", "num_jobs=20"]
"""A shipped policy run outside its card's setting: logs one notice."""


def _dlsched(*args: str) -> subprocess.CompletedProcess[str]:
    """The real command (its logging set up by ``main``), as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "dlsched", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def _one_error_line(stderr: str, needle: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and needle in lines[0], stderr


@pytest.mark.slow
def test_warnings_before_an_error_leave_the_error_alone_on_stderr(tmp_path: Path) -> None:
    jobs = str(tmp_path / "jobs.csv")
    unwritable = "/proc/dlsched-test-jobs.csv"  # /proc takes no new file, root or not
    # deprecated option, then a bad option value: the deprecation warning is left out
    deprecated = _dlsched("simulate", "-w", "deeprm", "--jobs-csv", jobs, "-o", "bad=1")
    assert deprecated.returncode == 2
    _one_error_line(deprecated.stderr, "has no option 'bad'")
    # a policy outside its setting, then a table that cannot be written after the run
    outside = _dlsched("simulate", *OUTSIDE, "--jobs-out", unwritable)
    assert outside.returncode == 2
    _one_error_line(outside.stderr, f"--jobs-out: cannot write {unwritable!r}")
    # the same warnings are printed when the run succeeds
    fine = _dlsched("simulate", *OUTSIDE, "--jobs-csv", jobs, "--json")
    assert fine.returncode == 0, fine.stderr
    assert "--jobs-csv is deprecated" in fine.stderr
    assert "outside the setting it was trained for" in fine.stderr
    assert Path(jobs).read_text().startswith("trace_id,")


@pytest.mark.parametrize("fails", [False, True])
def test_held_warnings_reach_the_stream_handlers_only_on_success(fails: bool) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        expect = pytest.raises(typer.Exit) if fails else contextlib.nullcontext()
        with expect, one_line_errors(hold_warnings=True):
            logging.getLogger("dlsched.test").warning("a held warning")
            assert stream.getvalue() == ""  # held while the command runs
            if fails:
                raise ValueError("bad input")
    finally:
        root.removeHandler(handler)
    assert handler not in root.handlers
    assert stream.getvalue() == ("" if fails else "a held warning\n")


def test_an_unreachable_dask_scheduler_fails_within_5_s() -> None:
    pytest.importorskip("distributed")
    from dlsched.experiments.compare import run_grid

    started = time.monotonic()
    with pytest.raises(ValueError, match=r"--dask: cannot reach a Dask scheduler at .*refused"):
        run_grid("deeprm", ["fifo"], [1], dask="tcp://127.0.0.1:1", num_jobs=5)
    assert time.monotonic() - started < 5.0
    result = CliRunner().invoke(
        app, ["compare", "-w", "deeprm", "--seeds", "1", "--dask", "tcp://127.0.0.1:1"]
    )
    assert result.exit_code == 2
    _one_error_line(result.stderr, "cannot reach a Dask scheduler at tcp://127.0.0.1:1")


@pytest.mark.parametrize("workload", ["philly", "sched2", "deeprm"])
def test_train_dl2_refuses_a_workload_without_elastic_jobs(tmp_path: Path, workload: str) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["train", "dl2", "--out", str(out), "--workload", workload, "--max-minutes", "0.1"]
    )
    assert result.exit_code == 2, result.output
    _one_error_line(result.stderr, f"--workload {workload!r}: none of its")
    assert not out.exists()
