"""Loading your own CSV/Parquet trace (`load_trace`) and summarising any trace (`trace_info`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

import numpy as np

from dlsched.workloads.base import Workload
from dlsched.workloads.traces.building import build_workload, check_options, iso, size_cluster
from dlsched.workloads.traces.columns import map_columns, parse_columns
from dlsched.workloads.traces.philly import philly_table
from dlsched.workloads.traces.reading import read_table
from dlsched.workloads.traces.schema import SHOWN_REASONS, Table, TraceError, TraceInfo
from dlsched.workloads.traces.selection import (
    drop_by_status,
    in_window,
    parse_split,
    split_part,
    status_counts,
    unit_seconds,
    warn_unit_names,
)
from dlsched.workloads.traces.validation import validate

log = logging.getLogger(__name__)

Progress = Callable[[str], None]
"""Called with a short line at each stage of a load (reading, validating, building)."""


def _stage(progress: Progress | None, text: str) -> None:
    log.info("%s", text)
    if progress is not None:
        progress(text)


def read_trace(
    path: str | Path,
    *,
    on_bad_row: str,
    servers: int | None,
    gpus_per_server: int,
    seed: int,
    progress: Progress | None = None,
    columns: Mapping[str, str] | str | None = None,
    time_unit: str | None = None,
    duration_unit: str | None = None,
    drop_status: str | None = None,
) -> Table:
    """Read, map, filter by status and validate a trace file (`load_trace`'s arguments)."""
    if on_bad_row not in ("skip", "fail"):
        raise ValueError(f"on_bad_row must be 'skip' or 'fail', got {on_bad_row!r}")
    time_unit_s = unit_seconds(time_unit, "time_unit")
    duration_unit_s = unit_seconds(duration_unit, "duration_unit") or time_unit_s
    source = str(path)
    started = time.perf_counter()
    _stage(progress, f"reading {source}")
    explicit = parse_columns(columns)
    frame, rows, blank = read_table(Path(path), source)
    file_columns = [str(c) for c in frame.columns]
    frame, column_map = map_columns(frame, explicit, source)
    if not len(frame):
        raise TraceError(f"{source}: has a header but no jobs", path=source)
    warn_unit_names(column_map.mapped, time_unit, duration_unit, source)
    statuses = status_counts(frame)
    frame, rows, dropped = drop_by_status(frame, rows, drop_status, source)
    _stage(
        progress,
        f"read {len(frame):,} rows in {time.perf_counter() - started:.1f} s; validating",
    )
    table = validate(
        frame,
        source=source,
        rows=rows,
        on_bad_row=on_bad_row,
        cluster_gpus=None if servers is None else servers * gpus_per_server,
        gpus_per_server=gpus_per_server,
        seed=seed,
        time_unit_s=time_unit_s or 1.0,
        duration_unit_s=duration_unit_s or 1.0,
        file_columns=file_columns,
    )
    table.blank_rows = blank
    table.mapped = column_map.mapped
    table.inferred = column_map.inferred
    table.status_counts = statuses
    table.dropped_by_status = dropped
    _stage(progress, f"{len(table.rows):,} valid jobs after {time.perf_counter() - started:.1f} s")
    return table


def load_trace(
    path: str | Path,
    *,
    on_bad_row: Literal["skip", "fail"] = "fail",
    servers: int | None = None,
    gpus_per_server: int = 8,
    seed: int = 0,
    load: float | None = None,
    progress: Progress | None = None,
    columns: Mapping[str, str] | str | None = None,
    time_unit: str | None = None,
    duration_unit: str | None = None,
    drop_status: str | None = None,
    start: str | float | None = None,
    end: str | float | None = None,
    split: str | None = None,
    part: str | None = None,
) -> Workload:
    """Load a CSV or Parquet trace of GPU jobs (columns and rules in the module docstring).

    Args:
        path: a ``.csv``, ``.csv.gz`` (or other compressed CSV) or ``.parquet`` file.
        on_bad_row: "fail" raises on the first bad row; "skip" leaves bad rows out, logs a
            warning with their count and first reasons, and records them in ``params``.
        servers: cluster size in servers; None sizes it to the trace (`size_cluster`).
        gpus_per_server: GPUs per server.
        seed: seed of the model draw when the trace has no ``model`` column.
        load: arrival-rate multiplier: submit times are divided by it (2 = twice as dense);
            None or 1 keeps the trace's times.
        progress: called with a line at each stage (also logged at INFO), for long loads.
        columns: schema column → the file's column, e.g. ``{"submit_time": "submission_time"}``
            or ``"submit_time=submission_time,num_gpus=num_gpu"``; common names (`ALIASES`)
            are recognised without it.
        time_unit: unit of the numeric time columns: ``ms``, ``s`` (None: seconds), ``min``,
            ``h`` or ``d`` (`dlsched.workloads.traces.selection`).
        duration_unit: unit of the ``duration`` column when it differs (None: ``time_unit``).
        drop_status: statuses whose rows are left out, e.g. ``"failed,killed"`` (None: keep
            every row); counted in ``params["dropped_by_status"]``.
        start, end: keep jobs submitted in [start, end): seconds after the first
            submission, or ISO dates for a dated trace.
        split, part: only the ``part`` (train, validation, test) of the jobs cut in
            submission order by ``split`` (``"0.6,0.2,0.2"``), on the whole's cluster.

    Returns:
        A workload named ``trace:<path>`` of all-reduce jobs, first arriving at 0 s.

    Raises:
        TraceError: unreadable, empty or malformed file, with file, row and column.
        ValueError: a bad option value.
    """
    check_options(servers, gpus_per_server, load)
    parse_split(split)  # a bad split fails before the file is read
    table = read_trace(
        path,
        on_bad_row=on_bad_row,
        servers=servers,
        gpus_per_server=gpus_per_server,
        seed=seed,
        progress=progress,
        columns=columns,
        time_unit=time_unit,
        duration_unit=duration_unit,
        drop_status=drop_status,
    )
    given = {"time_unit": time_unit, "duration_unit": duration_unit, "start": start, "end": end}
    given |= {"drop_status": drop_status, "split": split, "part": part}
    extra: dict[str, object] = {"on_bad_row": on_bad_row}
    extra |= {k: v for k, v in given.items() if v is not None}
    table, servers = _select(table, start, end, split, part, servers, gpus_per_server, extra)
    _stage(progress, f"building {len(table.rows):,} jobs")
    return build_workload(
        table,
        name=f"trace:{path}",
        servers=servers,
        gpus_per_server=gpus_per_server,
        seed=seed,
        load=load,
        extra=extra,
    )


def _select(
    table: Table,
    start: str | float | None,
    end: str | float | None,
    split: str | None,
    part: str | None,
    servers: int | None,
    gpus_per_server: int,
    extra: dict[str, object],
) -> tuple[Table, int | None]:
    """The window's jobs, then ``part`` of them, with the cluster size: sized to the whole
    window before the cut when a part is taken, so every part gets the same cluster."""
    table = in_window(table, start, end)
    if part is not None and servers is None:
        servers = size_cluster(table.submit_s, table.duration_s, table.num_gpus, gpus_per_server)
        extra["servers_sized_to_trace"] = True
    if table.dropped_by_status:
        extra["dropped_by_status"] = table.dropped_by_status
    return split_part(table, split, part), servers


def trace_info(
    source: str | Path,
    progress: Progress | None = None,
    columns: Mapping[str, str] | str | None = None,
    **selection: str | None,
) -> TraceInfo:
    """Summarise a trace: ``philly``, ``philly:VC`` or a CSV/Parquet path (``trace:`` prefix
    allowed). Bad rows of a file are skipped and counted rather than raised. ``selection``:
    `load_trace`'s ``time_unit``, ``duration_unit``, ``drop_status``, ``start``, ``end``,
    ``split`` and ``part`` (None: not given).

    Raises:
        TraceError: unreadable or empty file, unknown virtual cluster, or no valid job.
    """
    text = str(source)
    if text.startswith("trace:"):
        text = text[len("trace:") :]
    elif (text == "philly" or text.startswith("philly:")) and not Path(text).exists():
        given = ["columns"] if parse_columns(columns) else []
        given += [k for k, v in selection.items() if v is not None]
        if given:
            raise ValueError(
                f"{given[0]}: {text!r} is the shipped Philly trace, whose columns are known; "
                f"--{given[0].replace('_', '-')} applies to your own CSV/Parquet files"
            )
        vc = text.partition(":")[2] or None
        return _summarise(philly_table(vc, None, None, None, None, 8, 0), text, 8)
    table = read_trace(
        text,
        on_bad_row="skip",
        servers=None,
        gpus_per_server=8,
        seed=0,
        progress=progress,
        columns=columns,
        time_unit=selection.get("time_unit"),
        duration_unit=selection.get("duration_unit"),
        drop_status=selection.get("drop_status"),
    )
    table = in_window(table, selection.get("start"), selection.get("end"))
    table = split_part(table, selection.get("split"), selection.get("part"))
    return _summarise(table, text, 8)


def _summarise(table: Table, source: str, gpus_per_server: int) -> TraceInfo:
    first = float(table.submit_s[0])
    last = float(table.submit_s.max())
    counts = np.unique(table.num_gpus, return_counts=True)
    p50, p90, p99 = (float(x) for x in np.percentile(table.duration_s, [50, 90, 99]))
    return TraceInfo(
        source=source,
        jobs=len(table.job_id),
        skipped_rows=table.skipped,
        first_submit_s=first,
        last_submit_s=last,
        span_s=last - first,
        first_submit=iso(first) if table.dated else None,
        last_submit=iso(last) if table.dated else None,
        gpu_histogram={int(g): int(c) for g, c in zip(*counts, strict=True)},
        duration_p50_s=p50,
        duration_p90_s=p90,
        duration_p99_s=p99,
        total_gpu_hours=float(np.dot(table.num_gpus, table.duration_s)) / 3600.0,
        servers=size_cluster(table.submit_s, table.duration_s, table.num_gpus, gpus_per_server),
        gpus_per_server=gpus_per_server,
        skip_reasons=list(table.reasons[:SHOWN_REASONS]),
        mapped_columns=dict(table.mapped),
        inferred_columns=list(table.inferred),
        string_job_ids=table.trace_ids is not None,
        status_counts=dict(table.status_counts),
        dropped_by_status=table.dropped_by_status,
    )
