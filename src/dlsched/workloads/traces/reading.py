"""Reading a trace file into a frame of text cells, with each row's number as seen in the file.

CSV files may be compressed (``.gz``, ``.bz2``, ``.xz``, ``.zst``). The header is the first
line that is not blank; lines before it count in row numbers. Only regular files are read: a
named pipe or a device would block or never end.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import lzma
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import numpy as np
import numpy.typing as npt
import pandas as pd

from dlsched.workloads.traces.cells import shorten
from dlsched.workloads.traces.schema import CSV_SUFFIXES, PARQUET_SUFFIXES, TraceError

_BLANK = " \t\r\n,;"
"""Characters of a line with no value in any column (a blank line before the header)."""


def _unique_names(columns: Sequence[object], source: str) -> list[str]:
    """Column names trimmed and lower-cased; a name given twice is refused."""
    names = [str(c).strip().lower() for c in columns]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise TraceError(
                f"{source}: column {shorten(name)!r} appears twice in the header",
                path=source,
                column=name,
            )
        seen.add(name)
    return names


def _normalise_columns(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    names = _unique_names(list(frame.columns), source)
    frame = frame.copy(deep=False)
    frame.columns = pd.Index(names)
    return frame


def read_table(path: Path, source: str) -> tuple[pd.DataFrame, npt.NDArray[np.int64], int]:
    """Read a CSV or Parquet file into a frame, with each row's number as seen in the file.

    Returns the frame (blank CSV lines removed), row numbers, and the count of blank lines.
    """
    name = path.name.lower()
    if not path.exists():
        raise TraceError(f"{source}: no such file", path=source)
    if path.is_dir():
        raise TraceError(f"{source}: is a folder, not a trace file", path=source)
    if not path.is_file():
        raise TraceError(
            f"{source}: is not a regular file (a pipe, socket or device); save the trace to a"
            " file first",
            path=source,
        )
    if name.endswith(PARQUET_SUFFIXES):
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many types for corrupt files
            raise TraceError(
                f"{source}: cannot read as Parquet: {_first_line(exc)}", path=source
            ) from None
        frame = _normalise_columns(frame, source)
        if frame.columns.empty:
            raise TraceError(f"{source}: file is empty (no columns)", path=source)
        return frame.reset_index(drop=True), np.arange(1, len(frame) + 1, dtype=np.int64), 0
    if not name.endswith(CSV_SUFFIXES):
        raise TraceError(
            f"{source}: unknown trace format; use .csv, .csv.gz or .parquet", path=source
        )
    try:
        leading, header = _header(path, name)
        if header is None:
            raise TraceError(f"{source}: file is empty", path=source)
        names = _unique_names(header, source)
        frame = pd.read_csv(
            path,
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            skip_blank_lines=False,
            skiprows=leading,
            compression="infer",
        )
    except pd.errors.EmptyDataError:
        raise TraceError(f"{source}: file is empty", path=source) from None
    except UnicodeDecodeError:
        raise TraceError(f"{source}: not a text CSV file (cannot decode it)", path=source) from None
    except TraceError:
        raise
    except Exception as exc:  # each decompressor and the parser raise their own types
        raise TraceError(f"{source}: cannot read as CSV: {_first_line(exc)}", path=source) from None
    if len(frame.columns) == len(names):
        frame.columns = pd.Index(names)
    frame = _normalise_columns(frame, source)
    rows = np.arange(leading + 2, len(frame) + leading + 2, dtype=np.int64)
    blank = np.ones(len(frame), dtype=bool)
    for column in frame.columns:
        blank &= (frame[column].astype(str).str.strip() == "").to_numpy()
    if blank.any():
        frame = frame.loc[~blank].reset_index(drop=True)
        rows = rows[~blank]
    return frame, rows, int(blank.sum())


def _open_text(path: Path, name: str) -> IO[str]:
    """The file as UTF-8 text (a byte-order mark dropped), decompressed by its suffix."""
    if name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
    if name.endswith(".bz2"):
        return bz2.open(path, "rt", encoding="utf-8-sig", newline="")
    if name.endswith(".xz"):
        return lzma.open(path, "rt", encoding="utf-8-sig", newline="")
    if name.endswith(".zst"):
        import zstandard

        return zstandard.open(path, "rt", encoding="utf-8-sig", newline="")
    return path.open(encoding="utf-8-sig", newline="")


def _header(path: Path, name: str) -> tuple[int, list[str] | None]:
    """Blank lines before the header, and the header's cells (None: the file has no header)."""
    leading = 0
    with _open_text(path, name) as text:
        for line in text:
            if line.strip(_BLANK):
                return leading, next(csv.reader([line]))
            leading += 1
    return leading, None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return shorten(text.splitlines()[0] if text else type(exc).__name__, 200)
