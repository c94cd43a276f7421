"""What a generic trace's options select and convert: time units, the status filter, the time
window and the train/validation/test split.

* **Units** (`TIME_UNITS`): ``time_unit`` is the unit of every numeric time column
  (``submit_time``, ``duration``, ``start_time``, ``end_time``; dates are dates), and
  ``duration_unit`` that of ``duration`` alone when it differs (default ``time_unit``, itself
  default seconds). A duration or submit column whose name says another unit (``runtime_min``,
  ``wait_h``) read without a unit gives a warning (`warn_unit_names`).
* **Status** (`drop_by_status`): with ``drop_status="failed,killed"`` the rows whose ``status``
  column (or its alias, `dlsched.workloads.traces.columns.ALIASES`) is one of those words
  (any case) are left out before validation, counted in ``params["dropped_by_status"]`` and
  said in a warning; without it every row is simulated, whatever its status.
* **Window** (`in_window`): ``start``/``end`` keep the jobs submitted in ``[start, end)``: a
  number is seconds after the trace's first submission, an ISO date (dated traces) a moment.
* **Split** (`split_part`): ``split="0.6,0.2,0.2"`` cuts the jobs, in submission order, into a
  train, a validation and a test part (the earliest 60 % train, the latest 20 % test);
  ``part`` picks one. The cluster is sized to the whole selection before the cut, so every
  part runs on the same cluster.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dlsched.workloads.traces.cells import EPOCH, as_text
from dlsched.workloads.traces.options import PARTS, TIME_UNITS
from dlsched.workloads.traces.schema import Table, TraceError

log = logging.getLogger(__name__)


_UNIT_IN_NAME = re.compile(
    r"(?:^|_)(ms|msec|millis|mins?|minutes?|h|hrs?|hours?|d|days?)$", re.IGNORECASE
)
_NAMED = {"ms": "ms", "msec": "ms", "millis": "ms", "h": "h", "hr": "h", "hrs": "h"}
_NAMED |= {"hour": "h", "hours": "h", "d": "d", "day": "d", "days": "d"}


def unit_seconds(unit: str | None, option: str) -> float | None:
    """Seconds per ``unit`` (None stays None); ValueError naming ``option`` otherwise."""
    if unit is None:
        return None
    if unit not in TIME_UNITS:
        raise ValueError(f"{option} {unit!r}: choose one of {', '.join(TIME_UNITS)}")
    return TIME_UNITS[unit]


def unit_in_name(column: str) -> str | None:
    """The unit a column's name says (``runtime_min`` → ``min``), or None."""
    found = _UNIT_IN_NAME.search(column)
    if found is None:
        return None
    word = found.group(1).lower()
    return _NAMED.get(word, "min")


def warn_unit_names(
    mapped: Mapping[str, str], time_unit: str | None, duration_unit: str | None, source: str
) -> None:
    """A warning when the file column read as the duration or submit time names a unit but no
    unit was given for it: it is read as seconds."""
    for schema, given in (("duration", duration_unit or time_unit), ("submit_time", time_unit)):
        column = mapped.get(schema, schema)
        said = unit_in_name(column)
        if said is not None and given is None and said != "s":
            option = "--time-unit" if schema == "submit_time" else "--duration-unit"
            log.warning(
                "%s: column %s is read as the %s in seconds, but its name says %s; "
                "if it is in %s, give %s %s (or -o %s=%s)",
                source, column, schema, said, said, option, said,
                option[2:].replace("-", "_"), said,
            )  # fmt: skip


def drop_by_status(
    frame: pd.DataFrame, rows: npt.NDArray[np.int64], drop_status: str | None, source: str
) -> tuple[pd.DataFrame, npt.NDArray[np.int64], int]:
    """``frame`` and ``rows`` without the rows whose status is in ``drop_status`` (comma
    separated, any case), and how many were dropped."""
    if drop_status is None:
        return frame, rows, 0
    words = {w.strip().lower() for w in drop_status.split(",") if w.strip()}
    if not words:
        raise ValueError("drop_status: give the statuses to leave out, e.g. failed,killed")
    if "status" not in frame.columns:
        raise TraceError(
            f"{source}: drop_status needs a status column; map yours with "
            "--columns status=NAME (or -o columns=status=NAME)",
            path=source,
            column="status",
        )
    drop = as_text(frame["status"]).str.strip().str.lower().isin(words).to_numpy()
    dropped = int(drop.sum())
    if dropped:
        log.warning(
            "%s: left out %d of %d rows whose status is %s (drop_status)",
            source, dropped, len(frame), "/".join(sorted(words)),
        )  # fmt: skip
    if dropped == len(frame):
        raise TraceError(f"{source}: drop_status leaves no jobs", path=source, column="status")
    keep = ~drop
    return frame.loc[keep].reset_index(drop=True), rows[keep], dropped


def status_counts(frame: pd.DataFrame) -> dict[str, int]:
    """Rows per status (lower case), when the trace has a status column."""
    if "status" not in frame.columns:
        return {}
    counts = as_text(frame["status"]).str.strip().str.lower().value_counts()
    return {str(k): int(v) for k, v in counts.items()}


def take(table: Table, index: npt.NDArray[np.int64]) -> Table:
    """The rows ``index`` of ``table`` (every per-job array)."""
    per_job = ("rows", "submit_s", "duration_s", "num_gpus", "job_id", "model", "priority",
               "min_replicas", "max_replicas", "cpu", "mem_gb")  # fmt: skip
    changes: dict[str, Any] = {name: getattr(table, name)[index] for name in per_job}
    if table.trace_ids is not None:
        changes["trace_ids"] = table.trace_ids[index]
    if table.users is not None:
        changes["users"] = table.users[index]
    return replace(table, **changes)


def _moment(text: str | float, table: Table, what: str) -> float:
    """``start``/``end`` as the table's submit-time seconds."""
    try:
        return float(table.submit_s[0]) + float(text)
    except ValueError:
        pass
    if not table.dated:
        raise ValueError(
            f"{what} {text!r}: give seconds after the first submission (this trace has no dates)"
        )
    try:
        stamp = pd.Timestamp(str(text))
    except ValueError:
        raise ValueError(f"{what} {text!r} is neither seconds nor an ISO date") from None
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return float((stamp - EPOCH) / pd.Timedelta(seconds=1))


def in_window(table: Table, start: str | float | None, end: str | float | None) -> Table:
    """The jobs submitted in ``[start, end)`` (module docstring); all without either."""
    if start is None and end is None:
        return table
    lo = -math.inf if start is None else _moment(start, table, "start")
    hi = math.inf if end is None else _moment(end, table, "end")
    if lo >= hi:
        raise ValueError(f"start {start} is not before end {end}")
    index = np.flatnonzero((table.submit_s >= lo) & (table.submit_s < hi))
    if not len(index):
        raise TraceError(
            f"{table.source}: no jobs between {start or 'the start'} and {end or 'the end'}",
            path=table.source,
        )
    return take(table, index)


def parse_split(text: str | None) -> tuple[float, float, float] | None:
    """``"0.6,0.2,0.2"`` → the train, validation and test fractions (each >= 0, train and
    test > 0, sum 1)."""
    if text is None:
        return None
    try:
        parts = tuple(float(p) for p in str(text).split(","))
    except ValueError:
        parts = ()
    if (
        len(parts) != 3
        or not all(math.isfinite(p) and p >= 0 for p in parts)
        or parts[0] == 0
        or parts[2] == 0
        or abs(sum(parts) - 1.0) > 1e-6
    ):
        raise ValueError(
            f"split {text!r}: give train,validation,test fractions of the jobs summing to 1, "
            "e.g. 0.6,0.2,0.2"
        )
    return parts[0], parts[1], parts[2]


def split_part(table: Table, split: str | None, part: str | None) -> Table:
    """The ``part`` of ``table`` under ``split`` (module docstring); all without ``part``."""
    fractions = parse_split(split)
    if part is None:
        return table
    if part not in PARTS:
        raise ValueError(f"part {part!r}: choose one of {', '.join(PARTS)}")
    if fractions is None:
        raise ValueError(f"part {part!r} needs a split (e.g. --split 0.6,0.2,0.2)")
    n = len(table.submit_s)
    cuts = [0, round(fractions[0] * n), round((fractions[0] + fractions[1]) * n), n]
    k = PARTS.index(part)
    if cuts[k + 1] <= cuts[k]:
        raise TraceError(
            f"{table.source}: the {part} part of split {split} has no jobs (of {n})",
            path=table.source,
        )
    return take(table, np.arange(cuts[k], cuts[k + 1]))
