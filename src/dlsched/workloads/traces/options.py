"""`TraceOptions`: how your own trace is read, the same options on every command that reads one
(``simulate``, ``compare``, ``trace info``, ``train sched2``, ``train dl2``) and the same keys in an
experiment file (`dlsched.commands.experiment`). Each field is a `load_trace` argument.

No pandas here: every command's options are built from this module at the CLI's start-up."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Annotated, Any

from dlsched.option_fields import Opt

TIME_UNITS: dict[str, float] = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
"""Seconds per unit, by the name ``time_unit`` and ``duration_unit`` take."""

PARTS = ("train", "validation", "test")
"""The parts of a split, in time order."""

_UNITS = tuple(TIME_UNITS)


@dataclass(frozen=True)
class TraceOptions:
    """Your trace's column names, units, status filter, time window and split (trace:PATH)."""

    columns: Annotated[str | None, Opt(metavar="NAME=COLUMN,…")] = None
    """Trace column = your file's column, e.g. submit_time=submitted,duration=runtime_min
    (names: submit_time, duration, num_gpus, job_id, status, start_time, end_time, …)."""
    time_unit: Annotated[str | None, Opt(choices=_UNITS)] = None
    """Unit of the trace's numeric times (submit, duration, start, end): ms, s, min, h or d
    (default s)."""
    duration_unit: Annotated[str | None, Opt(choices=_UNITS)] = None
    """Unit of the duration column when it differs from --time-unit."""
    drop_status: Annotated[str | None, Opt(metavar="STATUS,…")] = None
    """Leave out rows with these statuses (e.g. failed,killed), counted and said (default:
    keep every row)."""
    start: str | None = None
    """Keep jobs submitted from this time: seconds after the first job, or an ISO date."""
    end: str | None = None
    """Keep jobs submitted before this time (same forms as --start)."""
    split: Annotated[str | None, Opt(metavar="TRAIN,VAL,TEST")] = None
    """Cut the jobs in submission order into train, validation and test parts, e.g.
    0.6,0.2,0.2 (every part on the same cluster)."""
    part: Annotated[str | None, Opt(choices=PARTS)] = None
    """Only this part of --split: train, validation or test."""

    def given(self) -> dict[str, Any]:
        """The options given (not None), as `load_trace` keywords."""
        return {key: value for key, value in asdict(self).items() if value is not None}
