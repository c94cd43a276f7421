"""Bad heterogeneous input on the command line (cluster spec, unknown GPU type, Gavel's rate,
PS jobs under a Gavel policy) is one error line and exit 2. Here, not in the gavel package's
own tests, because a paper package must not import the CLI (a higher layer)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from dlsched.cli import app


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-w", "sched2", "-s", "fifo", "-o", "cluster=v100"], "is not TYPE:SERVERSxGPUS"),
        (["-w", "sched2", "-s", "fifo", "-o", "cluster=h100:1x8"], "no Gavel throughputs"),
        (["-w", "gavel", "-s", "gavel-las", "-o", "jobs_per_hour=0"], "jobs_per_hour=0"),
        (["-w", "dl2", "-s", "gavel-las-het", "-o", "num_jobs=3"], "has parameter servers"),
    ],
)
def test_bad_heterogeneous_input_is_one_line_and_exit_2(args: list[str], needle: str) -> None:
    result = CliRunner().invoke(app, ["simulate", *args])
    assert result.exit_code == 2, result.stdout[-300:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], lines
