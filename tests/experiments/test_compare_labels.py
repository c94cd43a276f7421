"""``compare`` keeps each scheduler spec as its own row and label (issue 29): ``deeprm`` and
``deeprm:1.3`` were merged into one row "deeprm" (the mean of both) with both JSON rows
labelled ``deeprm``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import dlsched
from dlsched.cli import app
from dlsched.experiments import plots
from dlsched.experiments.compare import run_grid, summarise

runner = CliRunner()
SCHED2_POLICY = Path(dlsched.__file__).parent / "papers" / "sched2" / "policies" / "sched2"
DEEPRM = ["-w", "deeprm", "--load", "1.3", "-o", "num_jobs=30"]


def _compare(*args: str) -> str:
    result = runner.invoke(app, ["compare", *args], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("workers", [1, 2])
def test_two_specs_of_one_policy_are_two_rows_and_labels(tmp_path: Path, workers: int) -> None:
    jobs = tmp_path / "jobs.csv"
    common = [*DEEPRM, "--schedulers", "deeprm,deeprm:1.3", "--seeds", "1-2"]
    rows = json.loads(
        _compare(*common, "--json", "--jobs-out", str(jobs), "--workers", str(workers))
    )
    assert [r["scheduler"] for r in rows] == ["deeprm", "deeprm:1.3"] * 2
    with jobs.open() as fh:
        labels = {row["scheduler"] for row in csv.DictReader(fh)}
    assert labels == {"deeprm", "deeprm:1.3"}
    table = _compare(*common)
    lines = [line.split() for line in table.splitlines() if "seeds" not in line]  # no title
    names = [words[0] for words in lines if words and words[0].startswith("deeprm")]
    assert names == ["deeprm", "deeprm:1.3"] * 2  # the metrics' table, then fairness's


def test_the_rows_are_the_runs_of_each_spec_alone() -> None:
    both = run_grid("deeprm", ["deeprm", "deeprm:1.3"], [1, 2], load=1.3, num_jobs=30)
    alone = run_grid("deeprm", ["deeprm:1.3"], [1, 2], load=1.3, num_jobs=30)
    rows = {row.scheduler: row for row in summarise(both)}
    assert set(rows) == {"deeprm", "deeprm:1.3"} and rows["deeprm:1.3"].runs == 2
    assert rows["deeprm:1.3"].mean == summarise(alone)[0].mean


def test_a_policy_path_spec_is_its_own_row_and_plot_bar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = f"sched2:{SCHED2_POLICY}"
    seen: list[list[str]] = []
    plot_comparison = plots.plot_comparison

    def spy(rows, path, **kwargs):  # type: ignore[no-untyped-def]
        seen.append([row.scheduler for row in rows])
        return plot_comparison(rows, path, **kwargs)

    monkeypatch.setattr(plots, "plot_comparison", spy)
    png = tmp_path / "bars.png"
    args = ["-w", "sched2", "-o", "num_jobs=30", "--schedulers", f"sched2,{spec}", "--seeds", "1"]
    rows = json.loads(_compare(*args, "--json", "--plot", str(png)))
    assert [r["scheduler"] for r in rows] == ["sched2", spec]
    assert seen == [["sched2", spec]] and png.stat().st_size > 1000


def test_plain_names_keep_the_scheduler_name() -> None:
    results = run_grid("deeprm", ["sjf", "fifo"], [1], num_jobs=10)
    assert [r.scheduler for r in results] == ["sjf", "fifo"]


def test_simulate_labels_its_run_by_the_spec_too(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.csv"
    args = ["simulate", *DEEPRM, "-s", "deeprm:1.3", "--json", "--jobs-out", str(jobs)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["scheduler"] == "deeprm:1.3"
    with jobs.open() as fh:
        assert {row["scheduler"] for row in csv.DictReader(fh)} == {"deeprm:1.3"}
