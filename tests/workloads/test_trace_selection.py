"""Your own trace's units, status filter, time window and train/validation/test split
(`dlsched.workloads.traces.selection`, issue 36)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.workloads.traces import TraceError, load_trace, trace_info
from dlsched.workloads.traces.selection import parse_split, unit_in_name


def write(tmp_path: Path, text: str, name: str = "mine.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def user_trace(tmp_path: Path, rows: int = 20) -> Path:
    """A trace as people write them: other names, minutes, a status column."""
    lines = ["jobname,submitted,runtime_min,gpus,state"]
    for i in range(rows):
        status = "Failed" if i % 5 == 4 else "Pass"
        lines.append(f"j{i},{i * 10},{i + 1},{1 + i % 4},{status}")
    return write(tmp_path, "\n".join(lines) + "\n")


def test_missing_column_lists_only_the_files_columns_and_the_mapping_option(
    tmp_path: Path,
) -> None:
    with pytest.raises(TraceError) as info:
        load_trace(user_trace(tmp_path))
    message = str(info.value)
    assert "(the file has: jobname, submitted, runtime_min, gpus, state)" in message
    assert "job_id" not in message and "num_gpus," not in message  # mapped, not the file's
    assert "--columns duration=YOUR_COLUMN" in message


def test_minutes_are_read_as_minutes_and_a_unit_in_a_name_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = user_trace(tmp_path)
    with caplog.at_level(logging.WARNING):
        seconds = load_trace(path, columns="duration=runtime_min", servers=4)
    assert "its name says min" in caplog.text and "--duration-unit min" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        minutes = load_trace(path, columns="duration=runtime_min", duration_unit="min", servers=4)
    assert "its name says" not in caplog.text
    assert [j.total_work for j in minutes.jobs] == [60 * j.total_work for j in seconds.jobs]
    assert [j.submit_time_s for j in minutes.jobs] == [j.submit_time_s for j in seconds.jobs]
    both = load_trace(path, columns="duration=runtime_min", time_unit="min", servers=4)
    assert both.jobs[1].submit_time_s == 600.0  # submit times in minutes too


def test_bad_unit_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="time_unit 'weeks': choose one of ms, s, min, h, d"):
        load_trace(user_trace(tmp_path), columns="duration=runtime_min", time_unit="weeks")


@pytest.mark.parametrize(
    ("column", "unit"),
    [("runtime_min", "min"), ("wall_h", "h"), ("dur_ms", "ms"), ("duration", None),
     ("run_minutes", "min"), ("days", "d"), ("admin", None)],
)  # fmt: skip
def test_unit_in_name(column: str, unit: str | None) -> None:
    assert unit_in_name(column) == unit


def test_failed_rows_stay_unless_asked_and_are_counted_when_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = user_trace(tmp_path)
    every = load_trace(path, columns="duration=runtime_min", servers=4)
    assert len(every.jobs) == 20
    with caplog.at_level(logging.WARNING):
        kept = load_trace(path, columns="duration=runtime_min", drop_status="failed", servers=4)
    assert len(kept.jobs) == 16 and kept.params["dropped_by_status"] == 4
    assert "left out 4 of 20 rows whose status is failed" in caplog.text
    info = trace_info(path, columns="duration=runtime_min", drop_status="FAILED")
    assert info.status_counts == {"pass": 16, "failed": 4} and info.dropped_by_status == 4


def test_status_filter_without_a_status_column_names_the_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "submit_time,duration,num_gpus\n0,5,1\n")
    with pytest.raises(TraceError, match="--columns status=NAME"):
        load_trace(path, drop_status="failed")


def test_time_window_in_seconds_after_the_first_job(tmp_path: Path) -> None:
    workload = load_trace(
        user_trace(tmp_path), columns="duration=runtime_min", start="50", end="100", servers=4
    )
    assert len(workload.jobs) == 5 and workload.jobs[0].submit_time_s == 0.0


def test_split_parts_are_disjoint_in_time_and_share_one_cluster(tmp_path: Path) -> None:
    path = user_trace(tmp_path)
    common = {"columns": "duration=runtime_min", "split": "0.6,0.2,0.2"}
    parts = {p: load_trace(path, part=p, **common) for p in ("train", "validation", "test")}
    assert [len(w.jobs) for w in parts.values()] == [12, 4, 4]
    assert len({len(w.servers) for w in parts.values()}) == 1
    ids = [{j.job_id for j in w.jobs} for w in parts.values()]
    assert max(ids[0]) < min(ids[1]) and max(ids[1]) < min(ids[2])
    assert parts["test"].params["part"] == "test"


def test_part_without_split_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs a split"):
        load_trace(user_trace(tmp_path), columns="duration=runtime_min", part="test")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1, 2), min_size=1, max_size=4))
def test_a_split_is_three_fractions_summing_to_one(parts: list[float]) -> None:
    text = ",".join(str(p) for p in parts)
    ok = (
        len(parts) == 3
        and min(parts) >= 0
        and parts[0] > 0
        and parts[2] > 0
        and abs(sum(parts) - 1) <= 1e-6
    )
    if ok:
        assert parse_split(text) == tuple(parts)
    else:
        with pytest.raises(ValueError, match="summing to 1"):
            parse_split(text)
