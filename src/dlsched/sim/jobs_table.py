"""Per-job results of one or more runs as one table, written as CSV or Parquet.

One row a finished job: the trace's own job ID where the workload came from a trace with text
IDs (``Result.params["trace_ids"]``), else the simulator's job id as text; times in seconds of
simulated time from the workload's origin; the scheduler and seed of its run. ``dlsched
simulate --jobs-out`` writes one run, ``dlsched compare --jobs-out`` all runs of the sweep, the
live runtime its ``jobs.csv``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dlsched.csv_rows import write_csv
from dlsched.sim.result import Result

JOB_COLUMNS = (
    "trace_id",
    "job_id",
    "scheduler",
    "seed",
    "model",
    "submit_s",
    "start_s",
    "finish_s",
    "jct_s",
    "wait_s",
    "ideal_s",
    "slowdown",
    "effectiveness",
    "gpus",
    "workers",
    "ps",
    "rescales",
)
"""Columns of the table: ``trace_id`` (text), ``job_id`` (the simulator's), ``scheduler``,
``seed``, ``model``; submit/first start/finish time, JCT, wait and ideal duration (s); slowdown
(JCT / ideal) and SCED²'s effectiveness (ideal / JCT); GPUs, workers and parameter servers as
asked; times its allocation changed while it ran (`dlsched.sim.result.JobRecord`)."""

_INT_COLUMNS = ("job_id", "seed", "gpus", "workers", "ps", "rescales")
_TEXT_COLUMNS = ("trace_id", "scheduler", "model")

SUFFIXES = (".csv", ".parquet")
"""File types by suffix: ``.csv`` or ``.parquet``."""


def check_jobs_path(path: str | Path, option: str = "jobs_out") -> Path:
    """The path to write to, checked before any run: a known suffix, not a folder; its parent
    folder is created.

    Raises:
        ValueError: naming ``option``, for another suffix, an existing folder or a parent
            folder that cannot be created.
    """
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise ValueError(f"{option}: {str(path)!r} must end in .csv or .parquet")
    if path.is_dir():
        raise ValueError(f"{option}: {str(path)!r} is a folder, give a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ValueError(f"{option}: cannot create folder {str(path.parent)!r}: {reason}") from None
    return path


def job_rows(result: Result) -> list[dict[str, Any]]:
    """The table's rows of one run, in job-id order (as ``Result.records``)."""
    trace_ids: dict[int, str] = result.params.get("trace_ids") or {}
    return [
        {
            "trace_id": trace_ids.get(record.job_id, str(record.job_id)),
            "job_id": record.job_id,
            "scheduler": result.scheduler,
            "seed": result.seed,
            "model": record.model,
            "submit_s": record.submit_s,
            "start_s": record.start_s,
            "finish_s": record.finish_s,
            "jct_s": record.jct_s,
            "wait_s": record.wait_s,
            "ideal_s": record.ideal_s,
            "slowdown": record.slowdown,
            "effectiveness": record.effectiveness,
            "gpus": record.num_gpus,
            "workers": record.num_workers,
            "ps": record.num_ps,
            "rescales": record.rescales,
        }
        for record in result.records
    ]


def write_jobs(results: Iterable[Result], path: str | Path, option: str = "jobs_out") -> Path:
    """Write every finished job of ``results`` (in their order) to ``path``: CSV (floats
    written with ``repr``, so they read back equal) or Parquet, by the suffix. Returns the
    path."""
    path = check_jobs_path(path, option)
    rows = [row for result in results for row in job_rows(result)]
    try:
        _write(rows, path)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ValueError(f"{option}: cannot write {str(path)!r}: {reason}") from None
    return path


def _write(rows: list[dict[str, Any]], path: Path) -> None:
    if path.suffix.lower() == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pa.schema(
            [
                (name, pa.int64() if name in _INT_COLUMNS else pa.float64())
                if name not in _TEXT_COLUMNS
                else (name, pa.string())
                for name in JOB_COLUMNS
            ]
        )
        columns = {name: [row[name] for row in rows] for name in JOB_COLUMNS}
        pq.write_table(pa.table(columns, schema=schema), path)
        return
    write_csv(path, rows, JOB_COLUMNS)
