"""Reading a trace file into a frame of text cells, with each row's number as seen in the file.

CSV files may be compressed (``.gz``, ``.bz2``, ``.xz``, ``.zst``); a compressed file that ends
before its end-of-stream marker (a cut download) is an error in every codec, never a shorter
trace. The header is the first line that is not blank; lines before it count in row numbers.
Only regular files are read: a named pipe or a device would block or never end.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
from collections.abc import Sequence
from contextlib import nullcontext
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
        zst = name.endswith(".zst")
        with _zstd_bytes(path) if zst else nullcontext(path) as data:
            frame = pd.read_csv(
                data,
                dtype=str,
                keep_default_na=False,
                na_filter=False,
                skip_blank_lines=False,
                skiprows=leading,
                compression=None if zst else "infer",
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
        return io.TextIOWrapper(_zstd_bytes(path), encoding="utf-8-sig", newline="")
    return path.open(encoding="utf-8-sig", newline="")


def _zstd_bytes(path: Path) -> io.BufferedReader:
    """A ``.zst`` file's content, every frame of it, as a binary stream."""
    return io.BufferedReader(_ZstdFrames(path), buffer_size=1 << 20)


class _ZstdFrames(io.RawIOBase):
    """The decompressed content of a Zstandard file across all its frames. A file that ends
    inside a frame raises `EOFError` as `gzip`, `bz2` and `lzma` do (Zstandard's own readers
    return the part decoded so far as if it were the whole file)."""

    CHUNK = 1 << 20
    """Compressed bytes read at a time."""

    def __init__(self, path: Path) -> None:
        import zstandard

        super().__init__()
        self._file = path.open("rb")
        self._dctx = zstandard.ZstdDecompressor()
        self._frame = self._dctx.decompressobj()
        self._in_frame = False  # bytes of a frame fed whose end has not been seen yet
        self._out = b""
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while self._pos >= len(self._out):
            chunk = self._file.read(self.CHUNK)
            if not chunk:
                if self._in_frame:
                    raise EOFError(
                        "Compressed file ended before the end-of-stream marker was reached"
                    )
                return 0
            self._out, self._pos = self._decode(chunk), 0
        n = min(len(buffer), len(self._out) - self._pos)
        buffer[:n] = self._out[self._pos : self._pos + n]
        self._pos += n
        return n

    def _decode(self, data: bytes) -> bytes:
        parts: list[bytes] = []
        while data:
            parts.append(self._frame.decompress(data))
            if self._frame.eof:  # a frame ended: the rest starts the next one
                data = self._frame.unused_data
                self._frame = self._dctx.decompressobj()
                self._in_frame = False
            else:
                data = b""
                self._in_frame = True
        return b"".join(parts)

    def close(self) -> None:
        self._file.close()
        super().close()


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
