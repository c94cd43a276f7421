"""The report's data (`dlsched.report.data`), its page and its CLI, without a browser: bars
match the event log, server slots never overlap, a log read back draws the same page, bad
input is one line with exit 2, and the page references nothing outside itself."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import dlsched
from dlsched.cli import app
from dlsched.report import report_results, run_input
from dlsched.report.data import run_data
from dlsched.report.read import read_runs
from dlsched.sim.event_log import KINDS, write_event_rows

ALLOCATING = {KINDS.index(k) for k in ("start", "rescale", "migrate")}


def _run(scheduler: str = "tiresias", seed: int = 1, jobs: int = 50) -> dlsched.sim.Result:
    return dlsched.simulate("dl2", scheduler, seed, num_jobs=jobs, load=2.0, record_events=True)


def check_page_data(data: dict, log: dlsched.sim.event_log.EventLog) -> None:
    """One bar an allocation of the log; its server segments hold its GPUs on slots no other
    segment holds at the same time; the series stay in range."""
    bars, segs = data["bars"], data["segs"]
    assert len(bars["job"]) == sum(k in ALLOCATING for k in log.kind)
    gpus_drawn: dict[int, int] = defaultdict(int)
    for bar, n in zip(segs["bar"], segs["n"], strict=True):
        gpus_drawn[bar] += n
    for bar, gpus in enumerate(bars["gpus"]):
        assert gpus_drawn[bar] == gpus
        assert bars["t0"][bar] <= bars["t1"][bar]
    by_slot: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for bar, y, n in zip(segs["bar"], segs["y"], segs["n"], strict=True):
        for slot in range(y, y + n):
            by_slot[slot].append((bars["t0"][bar], bars["t1"][bar]))
    for spans in by_slot.values():
        spans.sort()
        for (_, end), (begin, _) in pairwise(spans):
            assert end <= begin
    assert max(by_slot, default=0) < sum(data["servers"])
    series = data["series"]
    assert all(0 <= u <= 1 + 1e-9 for u in series["util"])
    assert all(q >= 0 for q in series["queue"]) and series["queue"][-1] == 0
    assert len(series["t"]) == len(series["util"]) == len(series["running"])


@pytest.mark.parametrize("scheduler", ["fifo", "tiresias", "optimus"])
def test_bars_and_slots_follow_the_log(scheduler: str) -> None:
    result = _run(scheduler)
    assert result.event_log is not None
    data = run_data(run_input(result))
    check_page_data(data, result.event_log)
    assert len(data["jobs"]["id"]) == 50
    assert sum(f is not None for f in data["jobs"]["finish"]) == len(result.records)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 5000), jobs=st.integers(1, 30))
def test_page_data_holds_for_any_seed(seed: int, jobs: int) -> None:
    result = _run("drf", seed, jobs)
    assert result.event_log is not None
    check_page_data(run_data(run_input(result)), result.event_log)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_log_read_back_draws_the_same(tmp_path: Path, suffix: str) -> None:
    result = _run()
    assert result.event_log is not None
    path = tmp_path / f"events{suffix}"
    write_event_rows(result.event_log.rows(result.scheduler, result.seed), path)
    [back] = read_runs(path)
    original, again = run_data(run_input(result)), run_data(back)
    for key in ("bars", "segs", "series", "servers"):
        assert again[key] == original[key]
    assert again["jobs"]["jct"] == original["jobs"]["jct"]


def test_bad_rows_name_file_row_and_column(tmp_path: Path) -> None:
    result = _run(jobs=5)
    assert result.event_log is not None
    path = tmp_path / "events.csv"
    write_event_rows(result.event_log.rows("x", 0), path)
    lines = path.read_text().splitlines()
    lines[20] = lines[20].replace(",submit,", ",sumbit,").replace(",start,", ",sumbit,")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"events.csv: row 21, column kind: bad value 'sumbit'"):
        read_runs(path)


def test_cli_writes_report_and_events_and_report_redraws(tmp_path: Path) -> None:
    runner = CliRunner()
    page, events = tmp_path / "run.html", tmp_path / "run-events.parquet"
    args = ["simulate", "-s", "fifo", "-o", "num_jobs=20", "--seed", "2"]
    done = runner.invoke(app, [*args, "--report", str(page), "--events-out", str(events)])
    assert done.exit_code == 0, done.output
    html = page.read_text()
    assert '"scheduler":"fifo"' in html
    # self-contained: no element loads anything from a URL or another file
    assert not re.search(r"<(script|link|img|iframe)[^>]*\b(src|href)=", html)
    again = tmp_path / "again.html"
    done = runner.invoke(app, ["report", str(events), "-o", str(again)])
    assert done.exit_code == 0, done.output
    assert again.stat().st_size > 10_000


def test_cli_bad_report_path_is_one_line_exit_2(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["simulate", "--report", str(tmp_path / "r.png")])
    assert done.exit_code == 2
    assert "--report" in done.output and ".html" in done.output
    done = CliRunner().invoke(app, ["report", str(tmp_path / "missing.csv")])
    assert done.exit_code == 2 and "no such event log" in done.output


def test_compare_report_has_means_of_every_seed(tmp_path: Path) -> None:
    runs = [_run(s, seed, 20) for seed in (1, 2, 3) for s in ("fifo", "drf")]
    path = report_results(runs, tmp_path / "cmp.html", "compare")
    html = path.read_text()
    assert html.count('"runs":3') == 2  # one means row a scheduler, over the three seeds
    assert "first seed of each scheduler" in html


def test_report_of_a_run_folder_and_of_a_jobs_table(tmp_path: Path) -> None:
    runner = CliRunner()
    folder = tmp_path / "run"
    args = ["simulate", "-s", "drf", "-o", "num_jobs=15", "--seed", "4"]
    outputs = ["--events-out", str(folder / "events.csv"), "--jobs-out", str(folder / "jobs.csv")]
    assert runner.invoke(app, [*args, *outputs]).exit_code == 0
    from_folder = tmp_path / "folder.html"
    done = runner.invoke(app, ["report", str(folder), "-o", str(from_folder)])
    assert done.exit_code == 0, done.output
    [run] = read_runs(folder / "events.csv")
    assert '"slowdown":[null' not in from_folder.read_text()  # the jobs table's slowdowns
    from_jobs = tmp_path / "jobs.html"
    done = runner.invoke(app, ["report", str(folder / "jobs.csv"), "-o", str(from_jobs)])
    assert done.exit_code == 0, done.output
    html = from_jobs.read_text()
    assert "Drawn from a per-job table" in html
    assert html.count('"open":[2,2,2,2,2,2,2,2,2,2,2,2,2,2,2]') == 1  # one start a job
    assert len(run_data(run)["bars"]["job"]) >= 15


def test_live_run_refuses_a_bad_dashboard_address_or_report_before_starting() -> None:
    runner = CliRunner()
    done = runner.invoke(app, ["live", "run", "--dashboard", "host:port"])
    assert done.exit_code == 2 and "--dashboard" in done.output
    done = runner.invoke(app, ["live", "run", "--report", "r.txt"])
    assert done.exit_code == 2 and "--report" in done.output


def test_reproduce_draws_the_runs_the_experiment_simulated(tmp_path: Path) -> None:
    page = tmp_path / "kubeflow.html"
    args = ["reproduce", "kubeflow", "--out", str(tmp_path / "kf"), "--report", str(page)]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    html = page.read_text()
    for mix in ("uniform", "high-priority-burst", "large-jobs"):  # one workload name, 3 mixes
        for name in ("kubeflow-dynamic", "kubeflow-static"):
            assert f'"scheduler":{json.dumps(f"{name} · kubeflow {mix}")}' in html
    assert "The 18 runs this experiment simulated" in html  # 3 mixes x 2 schedulers x 3 seeds
    assert (tmp_path / "kf" / "summary.csv").is_file()  # the experiment's own outputs as before


def test_runs_in_worker_processes_are_kept_with_their_event_logs() -> None:
    from dlsched.experiments.compare import run_grid
    from dlsched.runner import keeping_runs

    with keeping_runs() as kept:
        results = run_grid("dl2", ["fifo", "drf"], [1], workers=2, num_jobs=12, servers=4)
    assert kept == results and len(kept) == 2
    for result in kept:
        assert result.event_log is not None
        starts = [k for k in result.event_log.kind if KINDS[k] == "start"]
        assert len(starts) >= len(result.records) == 12
    plain = run_grid("dl2", ["fifo"], [1], workers=2, num_jobs=12, servers=4)
    assert plain[0].event_log is None  # only when a report was asked
