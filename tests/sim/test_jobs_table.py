"""Per-job results written by ``--jobs-out`` (issue 18): equal to the run's records, trace IDs
kept, CSV and Parquet, bad paths refused in one line."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import dlsched
from dlsched.cli import app
from dlsched.experiments.compare import run_grid
from dlsched.sim import Result
from dlsched.sim.jobs_table import JOB_COLUMNS, write_jobs

runner = CliRunner()
CHEAP = ["-w", "deeprm", "-o", "num_jobs=30"]

TRACE = "\n".join(
    [
        "job_name,submission_time,start_time,end_time,num_gpu",
        "930dd644-e119,2020-04-01 10:00:00,2020-04-01 10:01:00,2020-04-01 11:00:00,8",
        "openb-pod-0000,2020-04-01 10:05:00,2020-04-01 10:06:00,2020-04-01 10:36:00,1",
        "openb-pod-0001,2020-04-01 10:07:00,2020-04-01 10:08:00,2020-04-01 12:08:00,2",
        "x/7 with, comma,2020-04-01 10:09:00,2020-04-01 10:10:00,2020-04-01 10:40:00,1",
        "",
    ]
)


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _assert_rows_equal_records(rows: list[dict[str, object]], results: list[Result]) -> None:
    """Rows (strings from CSV or typed from Parquet) equal the records, bit for bit."""
    expected = [(result, record) for result in results for record in result.records]
    assert len(rows) == len(expected) > 0
    for row, (result, record) in zip(rows, expected, strict=True):
        assert int(row["job_id"]) == record.job_id  # type: ignore[call-overload]
        assert row["scheduler"] == result.scheduler
        assert int(row["seed"]) == result.seed  # type: ignore[call-overload]
        for column, value in [
            ("submit_s", record.submit_s),
            ("start_s", record.start_s),
            ("finish_s", record.finish_s),
            ("jct_s", record.jct_s),
            ("wait_s", record.wait_s),
        ]:
            assert float(row[column]) == value, (column, row)  # type: ignore[arg-type]
        assert int(row["gpus"]) == record.num_gpus  # type: ignore[call-overload]
        assert int(row["workers"]) == record.num_workers  # type: ignore[call-overload]


def test_simulate_jobs_out_csv_equals_the_records(tmp_path: Path) -> None:
    path = tmp_path / "out" / "jobs.csv"
    result = runner.invoke(
        app, ["simulate", *CHEAP, "-s", "sjf", "--seed", "4", "--jobs-out", str(path)]
    )
    assert result.exit_code == 0, result.output
    rows = _read_csv(path)
    assert list(rows[0]) == list(JOB_COLUMNS)
    run = dlsched.simulate("deeprm", "sjf", 4, num_jobs=30)
    _assert_rows_equal_records(rows, [run])  # type: ignore[arg-type]
    assert [r["trace_id"] for r in rows] == [str(rec.job_id) for rec in run.records]


def test_compare_jobs_out_parquet_holds_every_run(tmp_path: Path) -> None:
    path = tmp_path / "jobs.parquet"
    args = [
        "compare",
        *CHEAP,
        "--schedulers",
        "sjf,fifo",
        "--seeds",
        "1-2",
        "--jobs-out",
        str(path),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = pq.read_table(path).to_pylist()
    runs = run_grid("deeprm", ["sjf", "fifo"], [1, 2], num_jobs=30)
    _assert_rows_equal_records(rows, runs)
    assert {(r["scheduler"], r["seed"]) for r in rows} == {
        (s, n) for s in ("sjf", "fifo") for n in (1, 2)
    }


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_trace_ids_round_trip(tmp_path: Path, suffix: str) -> None:
    trace = tmp_path / "real.csv"
    trace.write_text(TRACE.replace("x/7 with, comma", '"x/7 with, comma"'))
    path = tmp_path / f"jobs{suffix}"
    args = ["simulate", "-w", f"trace:{trace}", "-s", "fifo", "--jobs-out", str(path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = _read_csv(path) if suffix == ".csv" else pq.read_table(path).to_pylist()
    by_trace_id = {r["trace_id"]: r for r in rows}
    assert set(by_trace_id) == {
        "930dd644-e119",
        "openb-pod-0000",
        "openb-pod-0001",
        "x/7 with, comma",
    }
    run = dlsched.simulate(f"trace:{trace}", "fifo")
    ids = run.params["trace_ids"]
    for record in run.records:
        row = by_trace_id[ids[record.job_id]]
        assert int(row["job_id"]) == record.job_id
        assert float(row["submit_s"]) == record.submit_s
        assert float(row["finish_s"]) == record.finish_s
    assert int(by_trace_id["930dd644-e119"]["gpus"]) == 8


def test_write_jobs_keeps_the_order_of_the_results(tmp_path: Path) -> None:
    runs = run_grid("deeprm", ["fifo", "sjf"], [3], num_jobs=10)
    path = write_jobs(reversed(runs), tmp_path / "jobs.csv")
    schedulers = [r["scheduler"] for r in _read_csv(path)]
    assert schedulers == ["sjf"] * len(runs[1].records) + ["fifo"] * len(runs[0].records)


@pytest.mark.parametrize("command", ["simulate", "compare"])
def test_bad_jobs_out_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    for bad, needle in [
        (tmp_path / "jobs.txt", ".csv or .parquet"),
        (tmp_path / "jobs", ".csv or .parquet"),
        (tmp_path, ".csv or .parquet"),
        (blocker / "jobs.csv", "cannot create folder"),
    ]:
        result = runner.invoke(app, [command, *CHEAP, "--jobs-out", str(bad)])
        assert result.exit_code == 2, (bad, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert needle in lines[0] and "--jobs-out" in lines[0]
        assert result.stdout == ""  # refused before any run: no table
    folder = tmp_path / "a.csv"
    folder.mkdir()
    result = runner.invoke(app, [command, *CHEAP, "--jobs-out", str(folder)])
    assert result.exit_code == 2 and "--jobs-out" in result.stderr and "folder" in result.stderr
