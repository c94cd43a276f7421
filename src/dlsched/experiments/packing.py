"""A `Result` in a compact form for the trip from a worker process back to the sweep.

A pickled `Result` is mostly its per-job records (one frozen dataclass a job) and its timeline
(lists of Python floats): ~28 kB and ~1.5 ms to pickle, ~1 ms to unpickle, for a 100-job run.
`pack` turns each record field and each timeline column into one typed array (8 bytes a value,
pickled as one block of bytes); `unpack` rebuilds the same lists of the same Python floats and
ints, so the unpacked `Result` equals the original bit for bit. A column that is not all plain
``float`` or all plain ``int`` (in 64 bits) travels as its list, unchanged.
"""

from __future__ import annotations

import dataclasses
from array import array
from typing import Any

from dlsched.sim.metrics import Timeline
from dlsched.sim.result import JobRecord, Result

_RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(JobRecord))
_TIMELINE_FIELDS = tuple(f.name for f in dataclasses.fields(Timeline))


def _column(values: list[Any]) -> array[Any] | list[Any]:
    """``values`` as a typed array when every one is a plain float, or a plain int that fits
    in 64 bits (same values back from `_values`); else the list itself."""
    if all(type(v) is float for v in values):
        return array("d", values)
    if all(type(v) is int for v in values):
        try:
            return array("q", values)
        except OverflowError:
            return values
    return values


def _values(column: array[Any] | list[Any]) -> list[Any]:
    return column.tolist() if isinstance(column, array) else column


def pack(result: Result) -> tuple[Any, ...]:
    """The compact form of ``result`` (a picklable tuple); `unpack` gives it back."""
    records = [_column([getattr(r, name) for r in result.records]) for name in _RECORD_FIELDS]
    timeline = [_column(getattr(result.timeline, name)) for name in _TIMELINE_FIELDS]
    rest = {
        f.name: getattr(result, f.name)
        for f in dataclasses.fields(Result)
        if f.name not in ("records", "timeline", "queued_s")
    }
    return len(result.records), records, timeline, _column(result.queued_s), rest


def unpack(packed: tuple[Any, ...]) -> Result:
    """The `Result` that `pack` was given, equal field for field."""
    _count, records, timeline, queued_s, rest = packed
    columns = [_values(c) for c in records]
    rows = [JobRecord(*row) for row in zip(*columns, strict=True)]
    return Result(
        records=rows,
        timeline=Timeline(**dict(zip(_TIMELINE_FIELDS, map(_values, timeline), strict=True))),
        queued_s=_values(queued_s),
        **rest,
    )
