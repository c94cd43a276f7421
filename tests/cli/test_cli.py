"""The CLI contract of the foundation issue: JSON keys, exit codes, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app

runner = CliRunner()

SIMULATE_KEYS = {
    "workload",
    "scheduler",
    "seed",
    "jobs",
    "finished",
    "avg_jct_s",
    "p95_jct_s",
    "makespan_s",
    "avg_slowdown",
    "avg_wait_s",
    "gpu_util",
    "events",
    "wall_s",
}


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_simulate_json_has_the_contract_keys():
    result = invoke("simulate", "-w", "deeprm", "-s", "sjf", "--seed", "3", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary.keys() >= SIMULATE_KEYS
    assert summary["workload"] == "deeprm" and summary["scheduler"] == "sjf"
    assert summary["seed"] == 3
    assert summary["finished"] == summary["jobs"] > 0


def test_simulate_matches_the_python_api():
    import dlsched

    result = invoke("simulate", "-w", "deeprm", "-s", "packer", "--seed", "5", "--json")
    api = dlsched.simulate(workload="deeprm", scheduler="packer", seed=5).summary()
    assert json.loads(result.stdout)["avg_jct_s"] == pytest.approx(api["avg_jct_s"])


def test_simulate_writes_jobs_csv_and_plot(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    csv, old, png = tmp_path / "jobs.csv", tmp_path / "old.csv", tmp_path / "run.png"
    result = invoke(
        "simulate", "-w", "deeprm", "-s", "sjf", "--jobs-out", str(csv), "--plot", str(png)
    )
    assert result.exit_code == 0, result.output
    lines = csv.read_text().splitlines()
    assert lines[0].startswith("trace_id,job_id")
    assert (
        len(lines)
        == 1 + json.loads(invoke("simulate", "-w", "deeprm", "-s", "sjf", "--json").stdout)["jobs"]
    )
    assert png.stat().st_size > 1000
    # the old spelling writes the same table, and logs that it is deprecated
    result = invoke("simulate", "-w", "deeprm", "-s", "sjf", "--jobs-csv", str(old))
    assert result.exit_code == 0, result.output
    assert "--jobs-csv is deprecated" in caplog.text
    assert old.read_text() == csv.read_text()


def test_compare_json_is_one_object_per_run():
    result = invoke(
        "compare", "-w", "deeprm", "--schedulers", "sjf,fifo", "--seeds", "1-2,5", "--json"
    )
    assert result.exit_code == 0, result.output
    runs = json.loads(result.stdout)
    assert {(r["scheduler"], r["seed"]) for r in runs} == {
        (s, n) for s in ("sjf", "fifo") for n in (1, 2, 5)
    }
    assert all(r.keys() >= SIMULATE_KEYS for r in runs)


def test_compare_table_names_every_scheduler():
    result = invoke("compare", "-w", "deeprm", "--schedulers", "sjf,random", "--seeds", "1-2")
    assert result.exit_code == 0, result.output
    assert "sjf" in result.stdout and "random" in result.stdout and "±" in result.stdout


def test_compare_table_fits_80_columns_and_shows_unfinished_jobs_only_when_there_are_any():
    names = "fifo,drf,efficient-srtf"
    narrow = {"COLUMNS": "80"}  # an 80-column terminal (off a terminal tables are wider)
    done = runner.invoke(app, ["compare", "--schedulers", names, "--seeds", "1-2"], env=narrow)
    cut = runner.invoke(
        app,
        ["compare", "--schedulers", names, "--seeds", "1", "-o", "horizon_s=20000"],
        env=narrow,
    )
    for result in (done, cut):
        assert result.exit_code == 0, result.output
        assert max(len(line) for line in result.stdout.splitlines()) <= 80
        assert "…" not in result.stdout  # nothing truncated
    assert "every job finished" in done.stdout and "left" not in done.stdout
    assert "left" in cut.stdout and "±" not in cut.stdout  # one seed: no interval


def test_list_shows_workloads_schedulers_and_experiments():
    result = runner.invoke(app, ["list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for name in ("dl2", "philly", "drf", "fifo", "sched2-fragmentation"):
        assert name in result.stdout


def test_trace_info_summarises_a_csv(tmp_path: Path):
    trace = tmp_path / "t.csv"
    trace.write_text("submit_time,duration,num_gpus\n0,100,1\n50,200,2\n100,300,1\n")
    result = invoke("trace", "info", str(trace), "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["jobs"] == 3
    shown = runner.invoke(app, ["trace", "info", str(trace)], env={"COLUMNS": "120"}).output
    assert "200.0 s" in shown  # duration_p50_s with its unit
    assert "None" not in shown and "skip_reasons" not in shown  # undated, nothing skipped


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["simulate", "-w", "nope"], "unknown workload"),
        (["simulate", "-s", "nope"], "unknown scheduler"),
        (["simulate", "-w", "trace:/no/such/file.csv"], "/no/such/file.csv"),
        (["compare", "--seeds", "3-1"], "--seeds"),
        (["compare", "--schedulers", "fifo,nope"], "nope"),
        (["compare", "--schedulers", "fifo,drf,fifo"], "'fifo' given twice"),
        (["compare", "--seeds", "1-3,2"], "seed 2 given twice"),
        (["compare", "--seeds", "-2"], "-2 is negative"),
        (["simulate", "-o", "novalue"], "KEY=VALUE"),
        (["simulate", "--load", "-1"], "load"),
        (["simulate", "--placement", "spread"], "unknown placement"),
        (["reproduce", "no-such-experiment"], "unknown experiment"),
        (["trace", "info", "/no/such/trace.csv"], "/no/such/trace.csv"),
        (["simulate", "-o", "bogus=1"], "no option 'bogus'"),
        (["simulate", "--on-bad-row", "skip"], "no option 'on_bad_row'"),
        (["simulate", "--on-bad-row", "maybe"], "--on-bad-row"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(args: list[str], message: str):
    result = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert message.lower() in result.output.lower()


def test_bad_trace_row_names_file_row_and_column(tmp_path: Path):
    trace = tmp_path / "bad.csv"
    trace.write_text("submit_time,duration,num_gpus\n0,100,1\n10,-5,1\n")
    result = runner.invoke(app, ["simulate", "-w", f"trace:{trace}"], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "bad.csv" in lines[0] and "duration" in lines[0]


def test_on_bad_row_skip_counts_what_it_skipped(tmp_path: Path):
    trace = tmp_path / "bad.csv"
    trace.write_text("submit_time,duration,num_gpus\n0,100,1\n10,-5,1\n20,50,2\n")
    args = ["simulate", "-w", f"trace:{trace}", "-s", "fifo", "--on-bad-row", "skip", "--json"]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["jobs"], summary["finished"], summary["skipped_rows"]) == (2, 2, 1)
