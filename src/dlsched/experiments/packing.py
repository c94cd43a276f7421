"""A `Result` in a compact form for the trip from a worker process back to the sweep.

A pickled `Result` is mostly its per-job records (one frozen dataclass a job) and its timeline
(lists of Python floats), each value pickled on its own. `pack` turns each record field and
each timeline column into one typed array (floats in 8 bytes, ints in the fewest of 1, 2, 4 or
8 bytes that hold them), pickled as one block of bytes; `unpack` rebuilds the same lists of the
same Python floats and ints, so the unpacked `Result` equals the original bit for bit. A column
that is not all plain ``float`` or all plain ``int`` (in 64 bits) travels as its list,
unchanged. The parent of a sweep, which receives every run's result one after the other,
spends about half the time on a packed one (`benchmarks/RESULTS.md`, issue 31).
"""

from __future__ import annotations

import dataclasses
from array import array
from collections import deque
from itertools import repeat
from operator import attrgetter
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
        for code in "bhiq":  # 1, 2, 4, 8 bytes
            try:
                return array(code, values)
            except OverflowError:
                continue
    return values


def _values(column: array[Any] | list[Any]) -> list[Any]:
    return column.tolist() if isinstance(column, array) else column


def _records(columns: list[list[Any]]) -> list[JobRecord]:
    """The `JobRecord`s of ``columns`` (one list a field, in field order), each field set
    through its slot the way the dataclass's own ``__init__`` sets it, a column at a time (a
    C loop: a fifth of the time of ``JobRecord(*row)`` for each row)."""
    rows = list(map(object.__new__, repeat(JobRecord, len(columns[0]))))
    for name, column in zip(_RECORD_FIELDS, columns, strict=True):
        if len(column) != len(rows):
            raise ValueError(f"packed records: {name} has {len(column)} values, not {len(rows)}")
        deque(map(getattr(JobRecord, name).__set__, rows, column), maxlen=0)  # run the map
    return rows


def pack(result: Result) -> tuple[Any, ...]:
    """The compact form of ``result`` (a picklable tuple); `unpack` gives it back."""
    records = [_column(list(map(attrgetter(name), result.records))) for name in _RECORD_FIELDS]
    timeline = [_column(getattr(result.timeline, name)) for name in _TIMELINE_FIELDS]
    rest = {
        f.name: getattr(result, f.name)
        for f in dataclasses.fields(Result)
        if f.name not in ("records", "timeline", "queued_s")
    }
    return records, timeline, _column(result.queued_s), rest


def unpack(packed: tuple[Any, ...]) -> Result:
    """The `Result` that `pack` was given, equal field for field."""
    records, timeline, queued_s, rest = packed
    return Result(
        records=_records([_values(c) for c in records]),
        timeline=Timeline(**dict(zip(_TIMELINE_FIELDS, map(_values, timeline), strict=True))),
        queued_s=_values(queued_s),
        **rest,
    )
