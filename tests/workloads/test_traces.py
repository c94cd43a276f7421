"""Trace loaders: validation messages, skip mode, CSV/Parquet parity, the packaged Philly trace."""

from __future__ import annotations

import gzip
import logging
import math
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.core import Arch, JobSpec, Resources
from dlsched.models import locality
from dlsched.workloads.traces import (
    CPU_PER_GPU,
    MEM_GB_PER_GPU,
    PHILLY_JOBS,
    TraceError,
    TraceInfo,
    load_philly,
    load_trace,
    size_cluster,
    trace_info,
)

MODELS = sorted(locality.SENSITIVITY)
HEADER = "submit_time,duration,num_gpus"


def write(tmp_path: Path, text: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def csv_with(*rows: str, header: str = HEADER) -> str:
    return "\n".join([header, *rows]) + "\n"


# --- a good trace ---------------------------------------------------------------------------


def test_valid_trace_becomes_allreduce_jobs(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        csv_with(
            "130,500,4,7,resnet-50,2.5,2,8,6,48",
            "100,60.5,1,3,resnet-50,0,1,1,4,32",
            "100,20,2,5,resnet-50,-1,1,2,2,8",
            header=HEADER + ",job_id,model,priority,min_replicas,max_replicas,cpu,mem_gb",
        ).replace("resnet-50", MODELS[0]),
    )
    w = load_trace(path, servers=2)
    assert w.name == f"trace:{path}"
    assert [j.job_id for j in w.jobs] == [3, 5, 7]  # by submit time, ties by id
    assert [j.submit_time_s for j in w.jobs] == [0.0, 0.0, 30.0]  # first job at 0
    big = w.jobs[2]
    assert big == JobSpec(
        7,
        30.0,
        MODELS[0],
        Arch.ALLREDUCE,
        500.0,
        Resources(gpu=1, cpu=6, mem=48),
        num_workers=4,
        min_workers=2,
        max_workers=8,
        priority=2.5,
    )
    assert big.num_gpus == 4 and big.elastic
    assert w.jobs[0].total_work == 60.5 and not w.jobs[0].elastic
    assert len(w.servers) == 2
    assert w.servers[0] == Resources(8, 8 * CPU_PER_GPU, 8 * MEM_GB_PER_GPU)
    assert (w.interval_s, w.on_events, w.placement) == (None, True, "pack")
    assert w.model.name == locality.Locality().name
    assert w.params["skipped_rows"] == 0 and w.params["models"] == "column"


def test_defaults_when_optional_columns_absent(tmp_path: Path) -> None:
    w = load_trace(write(tmp_path, csv_with("5,10,2", "7,20,1")))
    first = w.jobs[0]
    assert first.job_id == 0 and first.num_workers == first.min_workers == first.max_workers == 2
    assert first.worker_demand == Resources(1, CPU_PER_GPU, MEM_GB_PER_GPU)
    assert first.priority == 0.0 and first.num_ps == 0 and first.max_ps == 0
    assert all(j.model in locality.CATEGORY for j in w.jobs)


# --- malformed input: one clear line naming file, row and column ----------------------------

BAD_ROWS = [
    # (second data row, column, message fragment, servers)
    ("5,-5,1", "duration", "-5 is negative", None),
    ("-3,5,1", "submit_time", "-3 is negative", None),
    ("5,nan,1", "duration", "'nan' is NaN", None),
    ("5,,1", "duration", "is empty", None),
    ("5,abc,1", "duration", "'abc' is not a number", None),
    ("5,inf,1", "duration", "is infinite", None),
    ("5,0,1", "duration", "is 0", None),
    ("5,10,0", "num_gpus", "is 0", None),
    ("5,10,-2", "num_gpus", "-2 is negative", None),
    ("5,10,1.5", "num_gpus", "1.5 is not a whole number", None),
    ("5,10,two", "num_gpus", "'two' is not a number", None),
    ("5,1e12,1", "duration", "more than 10 years", None),
    ("5,10,100000", "num_gpus", "more than MAX_GPUS_PER_JOB", None),
    ("5,10,17", "num_gpus", "17 GPUs is more than the cluster's 16", 2),
    ("1e10,10,1", "submit_time", "more than 10 years after the first job", None),
]


@pytest.mark.parametrize(("row", "column", "fragment", "servers"), BAD_ROWS)
def test_bad_value_names_file_row_and_column(
    tmp_path: Path, row: str, column: str, fragment: str, servers: int | None
) -> None:
    path = write(tmp_path, csv_with("0,10,1", row, "9,10,1"))
    with pytest.raises(TraceError) as info:
        load_trace(path, servers=servers)
    message = str(info.value)
    assert message.startswith(f"{path} row 3, column {column}: "), message
    assert fragment in message
    assert "\n" not in message
    assert (info.value.row, info.value.column) == (3, column)


@pytest.mark.parametrize(
    ("header", "row", "column", "fragment"),
    [
        ("job_id", "4", "job_id", "4 repeats the job id of row 2"),
        ("job_id", "", "job_id", "is empty"),  # text ids are accepted: see test_traces_real.py
        ("num_ps", "2", "num_ps", "PS jobs are not supported"),
        ("num_workers", "3", "num_workers", "differs from num_gpus"),
        ("min_replicas", "5", "min_replicas", "5 is more than num_gpus"),
        ("max_replicas", "1", "max_replicas", "1 is less than num_gpus"),
        ("cpu", "-1", "cpu", "-1 is negative"),
        ("mem_gb", "1e9", "mem_gb", "more than a server's"),
        ("model", "no-such-net", "model", "'no-such-net' is not a known model"),
        ("priority", "NaN", "priority", "is NaN"),
    ],
)
def test_bad_optional_value(
    tmp_path: Path, header: str, row: str, column: str, fragment: str
) -> None:
    good = {"model": MODELS[0], "num_ps": "0", "num_workers": "2", "min_replicas": "1"}
    first = good.get(header, "4")
    path = write(
        tmp_path, csv_with(f"0,10,2,{first}", f"5,10,2,{row}", header=f"{HEADER},{header}")
    )
    with pytest.raises(TraceError, match=f"row 3, column {column}: ") as info:
        load_trace(path)
    assert fragment in str(info.value)


def test_missing_columns_are_named(tmp_path: Path) -> None:
    # "gpus" would be read as num_gpus (columns.ALIASES); "gpu" is no known name.
    path = write(tmp_path, "submit_time,gpu\n0,1\n")
    with pytest.raises(TraceError) as info:
        load_trace(path)
    message = str(info.value)
    assert str(path) in message
    assert "missing required columns duration, num_gpus" in message
    assert "the file has: submit_time, gpu)" in message
    assert "--columns duration=YOUR_COLUMN,num_gpus=YOUR_COLUMN" in message


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("", "file is empty"),
        (HEADER + "\n", "no jobs"),
        ("\n\n", "file is empty"),
    ],
)
def test_empty_files(tmp_path: Path, content: str, fragment: str) -> None:
    path = write(tmp_path, content)
    with pytest.raises(TraceError, match=fragment) as info:
        load_trace(path)
    assert str(path) in str(info.value)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such file"):
        load_trace(tmp_path / "absent.csv")
    with pytest.raises(TraceError, match="unknown trace format"):
        load_trace(write(tmp_path, HEADER + "\n0,1,1\n", "trace.txt"))
    ragged = write(tmp_path, csv_with("0,1,1", "0,1,1,9,9"))
    with pytest.raises(TraceError, match="cannot read as CSV"):
        load_trace(ragged)
    binary = tmp_path / "trace.parquet"
    binary.write_bytes(b"\x00\x01 not parquet")
    with pytest.raises(TraceError, match="cannot read as Parquet"):
        load_trace(binary)


def test_first_error_counts_the_others(tmp_path: Path) -> None:
    path = write(tmp_path, csv_with("0,10,1", "1,-1,1", "2,x,1", "3,10,0"))
    with pytest.raises(TraceError, match=r"row 3, column duration: .*\(2 more bad rows"):
        load_trace(path)


def test_row_numbers_count_blank_lines(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + "\n0,10,1\n\n5,10,1\n\n7,-4,1\n")
    with pytest.raises(TraceError, match=r"row 6, column duration"):
        load_trace(path)
    w = load_trace(path, on_bad_row="skip")
    assert len(w.jobs) == 2 and w.params["blank_rows"] == 2


def test_column_names_are_trimmed_and_case_insensitive(tmp_path: Path) -> None:
    w = load_trace(write(tmp_path, " Submit_Time ,DURATION,num_gpus\n0,10,1\n"))
    assert len(w.jobs) == 1


# --- skip mode ------------------------------------------------------------------------------


def test_skip_mode_counts_and_reports(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write(
        tmp_path,
        csv_with(
            "0,10,1,0",
            "1,-1,1,1",
            "2,x,1,2",
            "3,10,2,3",
            "4,10,0,4",
            "5,10,1,3",
            header=HEADER + ",job_id",
        ),
    )
    with caplog.at_level(logging.WARNING, logger="dlsched.workloads.traces"):
        w = load_trace(path, on_bad_row="skip")
    assert [j.job_id for j in w.jobs] == [0, 3]
    assert w.params["skipped_rows"] == 4
    reasons = w.params["skip_reasons"]
    assert len(reasons) == 4
    assert reasons[0] == f"{path} row 3, column duration: -1 is negative"
    assert reasons[-1] == f"{path} row 7, column job_id: 3 repeats the job id of row 5"
    assert "skipped 4 bad row(s) of 6" in caplog.text
    assert "row 3, column duration" in caplog.text


def test_skip_mode_with_no_good_row_fails(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no valid jobs in 2 row"):
        load_trace(write(tmp_path, csv_with("0,-1,1", "1,1,0")), on_bad_row="skip")


def test_models_do_not_depend_on_other_rows(tmp_path: Path) -> None:
    rows = [f"{i},{10 + i},1" for i in range(40)]
    clean = load_trace(write(tmp_path, csv_with(*rows), "a.csv"), seed=3)
    rows[5] = "5,-1,1"
    dirty = load_trace(write(tmp_path, csv_with(*rows), "b.csv"), seed=3, on_bad_row="skip")
    by_id = {j.job_id: j.model for j in clean.jobs}
    assert all(by_id[j.job_id] == j.model for j in dirty.jobs)
    assert len(dirty.jobs) == 39
    other = load_trace(write(tmp_path, csv_with(*rows), "b.csv"), seed=4, on_bad_row="skip")
    assert [j.model for j in other.jobs] != [j.model for j in dirty.jobs]


def test_model_draw_follows_category_mix(tmp_path: Path) -> None:
    n = 4000
    frame = pd.DataFrame({"submit_time": np.arange(n), "duration": 5.0, "num_gpus": 1})
    frame.to_parquet(tmp_path / "t.parquet")
    w = load_trace(tmp_path / "t.parquet", seed=1)
    cats = pd.Series([locality.CATEGORY[j.model] for j in w.jobs]).value_counts(normalize=True)
    total = sum(locality.CATEGORY_MIX.values())
    for category, share in locality.CATEGORY_MIX.items():
        assert abs(cats.get(category, 0.0) - share / total) < 0.04


# --- formats, load, cluster -----------------------------------------------------------------


def sample_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "job_id": [10, 11, 12, 13],
            "submit_time": [50.0, 10.5, 10.5, 400.0],
            "duration": [100.0, 3600.0, 7.25, 86400.0],
            "num_gpus": [1, 8, 2, 16],
            "priority": [0.0, 1.0, 2.0, 3.0],
        }
    )


def test_parquet_csv_and_gzip_give_identical_workloads(tmp_path: Path) -> None:
    frame = sample_frame()
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_csv(tmp_path / "t.csv.gz", index=False)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    loaded = [load_trace(tmp_path / f"t.{ext}", seed=7) for ext in ("csv", "csv.gz", "parquet")]
    for other in loaded[1:]:
        assert other.jobs == loaded[0].jobs
        assert other.servers == loaded[0].servers
    assert [j.job_id for j in loaded[0].jobs] == [11, 12, 10, 13]


def test_parquet_errors_use_record_numbers(tmp_path: Path) -> None:
    frame = sample_frame()
    frame.loc[2, "duration"] = np.nan
    frame.to_parquet(tmp_path / "t.parquet")
    with pytest.raises(TraceError, match=r"t\.parquet row 3, column duration: is missing"):
        load_trace(tmp_path / "t.parquet")


def test_iso_dates_as_submit_times(tmp_path: Path) -> None:
    path = write(tmp_path, csv_with("2017-10-01 00:00:10,5,1", "2017-10-01 00:00:00,5,1"))
    w = load_trace(path)
    assert [j.submit_time_s for j in w.jobs] == [0.0, 10.0]
    assert w.params["origin"] == "2017-10-01 00:00:00"
    bad = write(tmp_path, csv_with("2017-10-01 00:00:10,5,1", "yesterday,5,1"), "bad.csv")
    with pytest.raises(TraceError, match="row 3, column submit_time: 'yesterday' is not an ISO"):
        load_trace(bad)


def test_load_scales_arrivals_on_the_same_cluster(tmp_path: Path) -> None:
    sample_frame().to_csv(tmp_path / "t.csv", index=False)
    base = load_trace(tmp_path / "t.csv")
    dense = load_trace(tmp_path / "t.csv", load=2.0)
    assert [j.submit_time_s for j in dense.jobs] == [j.submit_time_s / 2 for j in base.jobs]
    assert dense.servers == base.servers
    with pytest.raises(ValueError, match="load"):
        load_trace(tmp_path / "t.csv", load=0)


def test_cluster_sized_to_trace() -> None:
    # Largest job: 20 GPUs → 3 servers; demand 1 GPU·10 s over 100 s is tiny.
    assert size_cluster([0, 100], [10, 10], [20, 1]) == 3
    # Demand: 100 jobs × 4 GPUs × 1000 s over a 1000 s horizon = 400 GPUs / 0.8 / 8 = 62.5 → 63.
    assert size_cluster(np.linspace(0, 1000, 100), np.full(100, 1000.0), np.full(100, 4)) == 63
    # All at once: the horizon is the longest duration.
    assert size_cluster([0, 0], [100, 100], [8, 8], gpus_per_server=4) == 5


# --- the packaged Philly trace --------------------------------------------------------------


@pytest.fixture(scope="module")
def philly_raw() -> pd.DataFrame:
    with resources.as_file(resources.files("dlsched") / "data" / "philly_jobs.csv.gz") as path:
        return pd.read_csv(path)


@pytest.fixture(scope="module")
def philly_all():  # type: ignore[no-untyped-def]
    return load_philly()


def test_packaged_file_matches_shared_copy(philly_raw: pd.DataFrame) -> None:
    shared = Path("/work/shared/data/philly_jobs.csv")
    assert len(philly_raw) == PHILLY_JOBS
    if shared.exists():  # only in the development checkout
        with resources.as_file(resources.files("dlsched") / "data" / "philly_jobs.csv.gz") as p:
            assert gzip.decompress(p.read_bytes()) == shared.read_bytes()


def test_philly_loads_every_job(philly_all, philly_raw: pd.DataFrame) -> None:  # type: ignore[no-untyped-def]
    w = philly_all
    assert w.name == "philly" and len(w.jobs) == PHILLY_JOBS
    assert w.jobs[0].submit_time_s == 0.0
    times = [j.submit_time_s for j in w.jobs]
    assert times == sorted(times)
    assert {j.job_id for j in w.jobs} == set(range(PHILLY_JOBS))
    job = w.jobs[len(w.jobs) // 2]
    row = philly_raw.iloc[job.job_id]
    assert (job.total_work, job.num_gpus) == (row["duration"], row["num_gpus"])
    origin = pd.Timestamp(philly_raw["timestamp"].min())
    assert job.submit_time_s == (pd.Timestamp(row["timestamp"]) - origin).total_seconds()
    assert max(j.num_gpus for j in w.jobs) <= len(w.servers) * 8
    assert w.params["origin"] == "2017-09-04 10:30:41"


def test_philly_vc_window_and_max_jobs(philly_all, philly_raw: pd.DataFrame) -> None:  # type: ignore[no-untyped-def]
    w = load_philly("b436b2")
    assert w.name == "philly:b436b2"
    assert len(w.jobs) == (philly_raw["cluster"] == "b436b2").sum()
    models = {j.job_id: j.model for j in philly_all.jobs}
    assert all(models[j.job_id] == j.model for j in w.jobs)  # same draw as the whole trace

    stamps = pd.to_datetime(philly_raw["timestamp"])
    inside = (stamps >= "2017-10-01") & (stamps < "2017-10-08")
    window = load_philly(start="2017-10-01", end="2017-10-08", load=2.0, servers=10)
    assert len(window.jobs) == inside.sum()
    first = stamps[inside].min()
    last = stamps[inside].max()
    assert window.jobs[-1].submit_time_s == (last - first).total_seconds() / 2
    assert len(window.servers) == 10

    head = load_philly("6214e9", max_jobs=100)
    assert len(head.jobs) == 100


def test_philly_unknown_vc_lists_valid_ones() -> None:
    with pytest.raises(TraceError, match=r"unknown virtual cluster 'nope'; choose one of .*6214e9"):
        load_philly("nope")
    with pytest.raises(TraceError, match="no jobs"):
        load_philly(start="2030-01-01")
    with pytest.raises(ValueError, match="not an ISO date"):
        load_philly(start="October")


def test_trace_info_for_philly_vc_and_files(tmp_path: Path, philly_raw: pd.DataFrame) -> None:
    info = trace_info("philly:6214e9")
    sub = philly_raw[philly_raw["cluster"] == "6214e9"]
    assert isinstance(info, TraceInfo)
    assert info.jobs == len(sub)
    assert info.gpu_histogram == {int(k): int(v) for k, v in sub["num_gpus"].value_counts().items()}
    assert info.duration_p50_s == float(np.percentile(sub["duration"], 50))
    assert (
        info.first_submit == sub["timestamp"].min() and info.last_submit == sub["timestamp"].max()
    )

    path = write(tmp_path, csv_with("100,10,1", "160,30,2", "130,-5,1"))
    info = trace_info(path)
    assert (info.jobs, info.skipped_rows, info.span_s, info.first_submit) == (2, 1, 60.0, None)
    assert info.gpu_histogram == {1: 1, 2: 1}
    assert trace_info(f"trace:{path}") == info


# --- property: valid frames round-trip through CSV ------------------------------------------

finite = st.floats(min_value=0.0, max_value=1e8, allow_nan=False, allow_infinity=False)
row_strategy = st.tuples(
    finite,
    st.floats(min_value=1e-3, max_value=1e8, allow_nan=False),
    st.integers(min_value=1, max_value=64),
    st.sampled_from(MODELS),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.floats(min_value=0.0, max_value=8 * CPU_PER_GPU, allow_nan=False),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(row_strategy, min_size=1, max_size=20), data=st.data())
def test_valid_frames_round_trip_through_csv(
    tmp_path: Path, rows: list, data: st.DataObject
) -> None:  # type: ignore[type-arg]
    ids = data.draw(
        st.lists(st.integers(0, 10**9), min_size=len(rows), max_size=len(rows), unique=True)
    )
    frame = pd.DataFrame(
        rows, columns=["submit_time", "duration", "num_gpus", "model", "priority", "cpu"]
    )
    frame.insert(0, "job_id", ids)
    path = tmp_path / "prop.csv"
    frame.to_csv(path, index=False)
    w = load_trace(path)
    origin = min(r[0] for r in rows)
    expected = sorted(
        (
            JobSpec(
                jid,
                t - origin,
                model,
                Arch.ALLREDUCE,
                duration,
                Resources(1, cpu, MEM_GB_PER_GPU),
                num_workers=gpus,
                min_workers=gpus,
                max_workers=gpus,
                priority=prio,
            )
            for jid, (t, duration, gpus, model, prio, cpu) in zip(ids, rows, strict=True)
        ),
        key=lambda j: (j.submit_time_s, j.job_id),
    )
    assert list(w.jobs) == expected
    assert w.params["skipped_rows"] == 0
    assert math.ceil(max(r[2] for r in rows) / 8) <= len(w.servers)
