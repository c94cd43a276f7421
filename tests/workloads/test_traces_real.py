"""Traces as they come (issue 18): string job ids, other column names, dated start/end times."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.workloads.traces import TraceError, load_trace, trace_info
from dlsched.workloads.traces.columns import ALIASES

REAL = "\n".join(
    [
        "job_name,submission_time,start_time,end_time,num_gpu,status",
        "930dd644-e119-8ce9-0935-e6148a7c7bed,2020-04-01 10:00:00,2020-04-01 10:01:00,"
        "2020-04-01 11:00:00,8,ok",
        "openb-pod-0000,2020-04-01 10:05:00,2020-04-01 10:06:00,2020-04-01 10:36:00,1,ok",
        "openb-pod-0001,2020-04-01 10:07:00,2020-04-01 10:08:00,2020-04-01 12:08:00,2,failed",
        "",
    ]
)


def test_real_trace_loads_with_string_ids_aliases_and_inferred_duration(tmp_path: Path) -> None:
    path = tmp_path / "real.csv"
    path.write_text(REAL)
    work = load_trace(path)
    assert [j.job_id for j in work.jobs] == [0, 1, 2]
    assert [j.submit_time_s for j in work.jobs] == [0.0, 300.0, 420.0]
    assert [j.total_work for j in work.jobs] == [3540.0, 1800.0, 7200.0]
    assert [j.num_workers for j in work.jobs] == [8, 1, 2]
    assert work.params["trace_ids"] == {
        0: "930dd644-e119-8ce9-0935-e6148a7c7bed",
        1: "openb-pod-0000",
        2: "openb-pod-0001",
    }
    assert work.params["mapped_columns"] == {
        "submit_time": "submission_time",
        "num_gpus": "num_gpu",
        "job_id": "job_name",
    }
    assert work.params["inferred_columns"] == ["duration = end_time - start_time"]
    info = trace_info(path)
    assert info.string_job_ids and info.servers == 1 and info.jobs == 3
    assert info.inferred_columns == ["duration = end_time - start_time"]


def test_explicit_columns_mapping_wins_and_bad_ones_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "real.csv"
    path.write_text(REAL)
    work = load_trace(path, columns={"submit_time": "start_time"})
    assert work.params["mapped_columns"]["submit_time"] == "start_time"
    assert [j.total_work for j in work.jobs] == [3540.0, 1800.0, 7200.0]
    assert load_trace(path, columns="submit_time=start_time").params == work.params
    with pytest.raises(TraceError, match="columns maps submit_time to 'nope', which the file"):
        load_trace(path, columns={"submit_time": "nope"})
    with pytest.raises(ValueError, match="'when' is not a trace column"):
        load_trace(path, columns={"when": "start_time"})
    with pytest.raises(ValueError, match="is not SCHEMA_NAME=FILE_NAME"):
        load_trace(path, columns="submit_time")


def test_repeated_and_empty_string_ids_are_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time,duration,num_gpus\na,0,5,1\nb,1,5,1\na,2,5,1\n,3,5,1\n")
    with pytest.raises(TraceError, match=r"row 4, column job_id: 'a' repeats the job id of row 2"):
        load_trace(path)
    work = load_trace(path, on_bad_row="skip")
    assert work.params["trace_ids"] == {0: "a", 1: "b"}
    assert work.params["skipped_rows"] == 2


def test_cli_trace_info_reports_mapping_and_takes_columns(tmp_path: Path) -> None:
    path = tmp_path / "real.csv"
    path.write_text(REAL)
    shown = CliRunner().invoke(app, ["trace", "info", str(path)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "duration = end_time - start_time" in shown.output
    assert "'num_gpus': 'num_gpu'" in shown.output
    bad = CliRunner().invoke(app, ["trace", "info", str(path), "--columns", "num_gpus=gpuz"])
    assert bad.exit_code == 2


NAMES = {
    "submit_time": ["submit_time", *ALIASES["submit_time"][:4]],
    "num_gpus": ["num_gpus", *ALIASES["num_gpus"]],
    "job_id": ["job_id", *ALIASES["job_id"]],
}
START = datetime(2021, 3, 1, tzinfo=UTC)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.data(),
    n=st.integers(1, 12),
    id_kind=st.sampled_from(["int", "uuid", "pod"]),
    time_kind=st.sampled_from(["seconds", "iso", "iso_t"]),
    with_duration=st.booleans(),
)
def test_loader_properties(
    tmp_path: Path, data: st.DataObject, n: int, id_kind: str, time_kind: str, with_duration: bool
) -> None:
    """Whatever the column order, names, id type and time format, the jobs are the same."""
    submits = data.draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n))
    durations = data.draw(st.lists(st.integers(1, 10**5), min_size=n, max_size=n))
    gpus = data.draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=n, max_size=n))
    ids = {
        "int": [str(i * 7) for i in range(n)],
        "uuid": [f"{i:08x}-e119-8ce9-0935-e6148a7c7bed" for i in range(n)],
        "pod": [f"openb-pod-{i:04d}" for i in range(n)],
    }[id_kind]

    def stamp(seconds: int) -> str:
        if time_kind == "seconds":
            return str(seconds)
        when = START + timedelta(seconds=seconds)
        return when.strftime("%Y-%m-%d %H:%M:%S" if time_kind == "iso" else "%Y-%m-%dT%H:%M:%SZ")

    names = {k: data.draw(st.sampled_from(v)) for k, v in NAMES.items()}
    columns: dict[str, list[str]] = {
        names["job_id"]: ids,
        names["submit_time"]: [stamp(s) for s in submits],
        names["num_gpus"]: [str(g) for g in gpus],
    }
    if with_duration:
        columns["duration"] = [str(d) for d in durations]
    else:
        columns["start_time"] = [stamp(s) for s in submits]
        columns["end_time"] = [stamp(s + d) for s, d in zip(submits, durations, strict=True)]
    order = data.draw(st.permutations(list(columns)))
    path = tmp_path / f"t{data.draw(st.integers(0, 10**9))}.csv"
    pd.DataFrame({k: columns[k] for k in order}).to_csv(path, index=False)
    logging.getLogger("dlsched").setLevel(logging.ERROR)

    work = load_trace(path)
    expected = sorted(
        (s - min(submits), d, g) for s, d, g in zip(submits, durations, gpus, strict=True)
    )
    got = sorted((j.submit_time_s, j.total_work, j.num_workers) for j in work.jobs)
    assert got == [(float(s), float(d), g) for s, d, g in expected]
    if id_kind == "int":
        assert "trace_ids" not in work.params
        assert sorted(j.job_id for j in work.jobs) == [int(i) for i in ids]
    else:
        assert sorted(work.params["trace_ids"].values()) == sorted(ids)
        assert sorted(work.params["trace_ids"]) == sorted(j.job_id for j in work.jobs)
