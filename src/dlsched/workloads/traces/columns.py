"""Column names as real traces spell them: common aliases and an explicit mapping.

Real traces (Philly, Helios, Alibaba PAI, ...) name their columns differently
(``submission_time``, ``num_gpu``, ``gpu_num``, ``start_time``/``end_time``). Before validation
a trace's columns are mapped to the schema's names: first the explicit ``columns`` mapping
(schema name → the file's name), then `ALIASES` for schema columns still missing. Without
``submit_time``, a ``start_time`` column is the submission time; without ``duration``, the
validation computes it as ``end_time − start_time`` (see `validation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from dlsched.workloads.traces.cells import shorten
from dlsched.workloads.traces.schema import OPTIONAL_COLUMNS, REQUIRED_COLUMNS, TraceError

ALIASES: dict[str, tuple[str, ...]] = {
    "submit_time": (
        "submission_time",
        "submitted_time",
        "submit_ts",
        "submit",
        "submitted",
        "arrival_time",
        "timestamp",
        "create_time",
        "creation_time",
    ),
    "duration": ("duration_s", "run_time", "runtime", "elapsed", "job_duration"),
    "num_gpus": ("num_gpu", "gpu_num", "gpus", "gpu_count", "n_gpus", "ngpus", "gpu_request"),
    "job_id": ("jobid", "job", "id", "job_name", "jobname", "uuid"),
    "start_time": ("start", "started_time", "start_ts", "begin_time"),
    "end_time": ("end", "finish_time", "finished_time", "end_ts", "completion_time"),
    "status": ("state", "job_status", "final_status", "jobstatus"),
    "user": ("user_name", "username", "user_id", "owner"),
}
"""Other names (lower case) accepted for each column, tried in order when it is missing."""

TIME_COLUMNS = ("start_time", "end_time")
"""Columns used only to infer ``submit_time`` and ``duration`` when the trace lacks them."""


@dataclass
class ColumnMap:
    """What was renamed and what will be inferred (shown by ``dlsched trace info``)."""

    mapped: dict[str, str] = field(default_factory=dict)
    inferred: list[str] = field(default_factory=list)


def parse_columns(columns: Mapping[str, str] | str | None) -> dict[str, str]:
    """``{"submit_time": "submission_time"}`` or ``"submit_time=submission_time,num_gpus=gpus"``."""
    if columns is None:
        return {}
    items: list[tuple[object, object]] = (
        list(columns.items()) if isinstance(columns, Mapping) else []
    )
    if isinstance(columns, str):
        for item in filter(None, (p.strip() for p in columns.split(","))):
            key, sep, value = item.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise ValueError(f"columns: {shorten(item)!r} is not SCHEMA_NAME=FILE_NAME")
            items.append((key, value))
    known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS) | set(TIME_COLUMNS)
    out: dict[str, str] = {}
    for schema, file_name in items:
        name = str(schema).strip().lower()
        if name not in known:
            raise ValueError(
                f"columns: {shorten(name)!r} is not a trace column ({', '.join(sorted(known))})"
            )
        if name in out:
            raise ValueError(f"columns: {name!r} is mapped twice; map each trace column once")
        out[name] = str(file_name).strip().lower()
    return out


def _check_mapping(columns: Mapping[str, str], found: list[str], source: str) -> None:
    """Refuse a mapping that names a column the file lacks, feeds one file column to two
    trace columns, or hides a column the file has under the trace's own name. A file's
    ``start_time`` may also be its submission time (`TIME_COLUMNS` only infer a duration)."""
    known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS)
    fed: dict[str, str] = {}
    for schema, name in columns.items():
        if name not in found:
            raise TraceError(
                f"{source}: columns maps {schema} to {shorten(name)!r}, which the file lacks",
                path=source,
                column=schema,
            )
        if name in fed:
            raise TraceError(
                f"{source}: columns maps both {fed[name]} and {schema} to the file's column "
                f"{shorten(name)!r}; one file column can feed one trace column",
                path=source,
                column=schema,
            )
        fed[name] = schema
    for schema, name in columns.items():
        if schema == name:
            continue
        if name in known and name not in columns:
            raise TraceError(
                f"{source}: columns maps {schema} to {shorten(name)!r}, which is also read as "
                f"the trace's {name}; map {name} to another column too, or choose another",
                path=source,
                column=schema,
            )
        if schema in found and schema not in fed:
            raise TraceError(
                f"{source}: columns maps {schema} to {shorten(name)!r}, but the file has its "
                f"own {schema} column, which would be dropped; map it to another trace column "
                "or rename it in the file",
                path=source,
                column=schema,
            )


def map_columns(
    frame: pd.DataFrame, columns: Mapping[str, str], source: str
) -> tuple[pd.DataFrame, ColumnMap]:
    """Rename ``frame``'s columns to the schema's names (``columns`` first, then `ALIASES`)."""
    found = [str(c) for c in frame.columns]
    _check_mapping(columns, found, source)
    rename: dict[str, str] = {}
    info = ColumnMap()
    for schema, name in columns.items():
        if schema != name:
            rename[name] = schema
            info.mapped[schema] = name
    taken = (set(found) - set(rename)) | set(rename.values())
    for schema, aliases in ALIASES.items():
        if schema in taken:
            continue
        alias = next((a for a in aliases if a in found and a not in rename), None)
        if alias is not None:
            rename[alias] = schema
            info.mapped[schema] = alias
            taken.add(schema)
    if rename:  # copies, not renames: one file column may feed two (start_time, submit_time)
        frame = frame.assign(**{schema: frame[name] for name, schema in rename.items()})
    if "submit_time" not in frame.columns and "start_time" in frame.columns:
        frame = frame.assign(submit_time=frame["start_time"])
        info.inferred.append("submit_time = start_time")
    if "duration" not in frame.columns and {"start_time", "end_time"} <= set(frame.columns):
        info.inferred.append("duration = end_time - start_time")
    return frame, info
