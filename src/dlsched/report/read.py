"""Read an event log written earlier (``--events-out``, `dlsched.sim.event_log`) back into one
`RunInput` per run (scheduler, seed), checking every row: a bad one is a `ValueError` naming
the file, the row and the column."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from dlsched.report.data import RunInput
from dlsched.sim.event_log import EVENT_COLUMNS, KINDS, EventLog

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
    clock_never_read = float  # a log read back records nothing more
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
        log, ids = runs.setdefault(key, (EventLog(clock_never_read), {}))
        log.time_s.append(t)
        log.job_id.append(job_id)
        log.kind.append(kind)
        log.gpus.append(gpus)
        log.workers.append(workers)
        log.ps.append(ps)
        log.servers.append(servers)
        if job_id >= 0 and row["trace_id"] not in (None, ""):
            ids[job_id] = str(row["trace_id"])
    return [
        RunInput(workload=workload or path.stem, scheduler=s, seed=seed, log=log, trace_ids=ids)
        for (s, seed), (log, ids) in runs.items()
    ]
