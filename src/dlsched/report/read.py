"""Read runs written earlier back into one `RunInput` per run (scheduler, seed): an event log
(``--events-out``, `dlsched.sim.event_log`), a per-job table (``--jobs-out``,
`dlsched.sim.jobs_table`) to go with it (slowdown, model), or a per-job table alone (one bar a
job from its first start to its finish: no allocation changes, no servers). Every row is
checked: a bad one is a `ValueError` naming the file, the row and the column."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from dlsched.report.data import RunInput
from dlsched.sim.event_log import EVENT_COLUMNS, FINISH, KINDS, START, SUBMIT, EventLog, no_clock
from dlsched.sim.result import JobRecord

_RECORD_COLUMNS = (
    *("job_id", "model", "submit_s", "start_s", "finish_s", "jct_s", "wait_s", "ideal_s"),
    *("slowdown", "effectiveness", "workers", "ps", "gpus", "rescales"),
)
"""The jobs table's columns a `JobRecord` is made of, in its field order."""

_CODES = {kind: code for code, kind in enumerate(KINDS)}


def _rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        try:
            return pq.read_table(path).to_pylist()
        except Exception as exc:  # pyarrow raises several types for a file it cannot read
            raise ValueError(f"{path}: not a readable Parquet file ({exc})") from None
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def read_runs(path: str | Path, workload: str = "") -> list[RunInput]:
    """The runs of the event log at ``path`` (.csv or .parquet), in the file's order.

    Raises:
        ValueError: a missing file or column, or a row whose value does not parse (one line:
            file, row number counting the header as 1, column).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such event log file")
    rows = _rows(path)
    missing = [c for c in EVENT_COLUMNS if rows and c not in rows[0]]
    if not rows or missing:
        what = f"column {missing[0]!r}" if missing else "any row"
        raise ValueError(f"{path}: not an event log (no {what}; see dlsched.sim.event_log)")
    runs: dict[tuple[str, int], tuple[EventLog, dict[int, str]]] = {}
    for number, row in enumerate(rows, start=2):
        column = ""
        try:
            column = "scheduler"
            key = (str(row["scheduler"]), int(row["seed"]))
            column = "time_s"
            t = float(row["time_s"])
            if not math.isfinite(t) or t < 0:
                raise ValueError
            column = "kind"
            kind = _CODES[str(row["kind"])]
            column = "job_id"
            job_id = int(row["job_id"])
            column = "gpus"
            gpus, workers, ps = int(row["gpus"]), int(row["workers"]), int(row["ps"])
            column = "servers"
            servers = str(row["servers"] or "")
            if kind != _CODES["server"] and servers:
                [int(part) for pair in servers.split() for part in pair.split(":")]
        except (KeyError, ValueError, TypeError):
            raise ValueError(
                f"{path}: row {number}, column {column}: bad value {row.get(column)!r}"
            ) from None
        log, ids = runs.setdefault(key, (EventLog(no_clock), {}))
        log.append(t, job_id, kind, gpus, workers, ps, servers)
        if job_id >= 0 and row["trace_id"] not in (None, ""):
            ids[job_id] = str(row["trace_id"])
    return [
        RunInput(workload=workload or path.stem, scheduler=s, seed=seed, log=log, trace_ids=ids)
        for (s, seed), (log, ids) in runs.items()
    ]


def is_event_log(path: str | Path) -> bool:
    """Whether ``path`` holds an event log (a ``kind`` column), not a per-job table."""
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        try:
            return "kind" in pq.read_schema(path).names
        except Exception:  # not Parquet: read_runs says so in one line
            return True
    with path.open(newline="", encoding="utf-8") as fh:
        return "kind" in next(csv.reader(fh), [])


def read_jobs(path: str | Path) -> dict[tuple[str, int], tuple[list[JobRecord], dict[int, str]]]:
    """The per-job table at ``path``: each run's records and trace IDs, by (scheduler, seed).

    Raises:
        ValueError: a missing file or column, or a value that does not parse (file, row,
            column).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such jobs file")
    rows = _rows(path)
    needed = ("trace_id", "scheduler", "seed", *_RECORD_COLUMNS)
    missing = [c for c in needed if rows and c not in rows[0]]
    if not rows or missing:
        what = f"column {missing[0]!r}" if missing else "any row"
        raise ValueError(f"{path}: not a jobs table (no {what}; see dlsched.sim.jobs_table)")
    runs: dict[tuple[str, int], tuple[list[JobRecord], dict[int, str]]] = {}
    for number, row in enumerate(rows, start=2):
        column = "seed"
        try:
            key = (str(row["scheduler"]), int(row["seed"]))
            values: list[Any] = []
            for column in _RECORD_COLUMNS:
                raw = row[column]
                if column == "model":
                    values.append(str(raw))
                elif column in ("job_id", "workers", "ps", "gpus", "rescales"):
                    values.append(int(raw))
                else:
                    values.append(float(raw) if raw not in (None, "") else math.nan)
        except (KeyError, ValueError, TypeError):
            raise ValueError(
                f"{path}: row {number}, column {column}: bad value {row.get(column)!r}"
            ) from None
        records, ids = runs.setdefault(key, ([], {}))
        records.append(JobRecord(*values))
        ids[values[0]] = str(row["trace_id"])
    return runs


def runs_from_jobs(path: str | Path) -> list[RunInput]:
    """One run a (scheduler, seed) of the per-job table at ``path``, its event log made of each
    finished job's submission, first start (its GPUs as asked) and finish."""
    runs = []
    for (scheduler, seed), (records, ids) in read_jobs(path).items():
        timed = []
        for r in records:
            timed += [
                (r.submit_s, 0, r.job_id, SUBMIT, 0),
                (r.start_s, 1, r.job_id, START, r.num_gpus),
            ]
            timed.append((r.finish_s, 0, r.job_id, FINISH, 0))
        log = EventLog(no_clock)
        for t, _, job_id, kind, gpus in sorted(timed):
            log.time_s.append(t)
            log.job_id.append(job_id)
            log.kind.append(kind)
            log.gpus.append(gpus)
            log.workers.append(0)
            log.ps.append(0)
            log.servers.append("")
        runs.append(RunInput(Path(path).stem, scheduler, seed, log, ids, records))
    return runs


def with_jobs(runs: list[RunInput], path: str | Path) -> list[RunInput]:
    """``runs`` with the records of the per-job table at ``path`` (slowdown, model), by run."""
    tables = read_jobs(path)
    for run in runs:
        found = tables.get((run.scheduler, run.seed))
        if found is not None:
            run.records = found[0]
    return runs
