"""The one CSV writer of the project: result tables (`write_csv`) and logs appended row by row
(`CsvLog`, which continues an existing log only if its columns match and repairs a last line
that lost its newline).

Plain ``csv`` module, no pandas: every table the CLI, the experiments and the trainers write
goes through here, so they all quote, order columns and end lines the same way.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

__all__ = ["CsvLog", "read_header", "write_csv"]


def write_csv(
    path: str | Path,
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
) -> Path:
    """Write ``rows`` as a CSV table with a header and return ``path``.

    Args:
        path: the file (its folder must exist; an existing file is replaced).
        rows: one mapping per row.
        columns: the header, in order (None: the first row's keys; no rows: an empty file).
            Keys of a row outside ``columns`` raise ``ValueError``; missing ones are empty.
    """
    target = Path(path)
    header = list(columns) if columns is not None else (list(rows[0]) if rows else [])
    with target.open("w", newline="") as fh:
        if header:
            writer = csv.DictWriter(fh, fieldnames=header, restval="")
            writer.writeheader()
            writer.writerows(rows)
    return target


def read_header(path: Path) -> list[str]:
    """The first row of the CSV file ``path`` (empty for an empty file)."""
    with path.open(newline="") as fh:
        return next(csv.reader(fh), [])


class CsvLog:
    """A CSV log written one row at a time and flushed after each, so a killed run keeps every
    row it wrote.

    Args:
        path: the log file (its folder is created).
        columns: the header, in order; a row's missing columns are written empty.
        append: continue an existing file: its header must equal ``columns``, and a last line
            without its newline gets one first (so the next row does not glue onto it).
            False: start a new file (replacing one there).
        keep_rows: with ``append``, keep only the first this many data rows (those a resumed
            run's state covers; None: all).
        sync: also ``fsync`` after each row (a crash of the machine keeps it too).

    Raises:
        ValueError: ``append`` onto a file with other columns, naming the file and both headers.
    """

    def __init__(
        self,
        path: str | Path,
        columns: Sequence[str],
        *,
        append: bool = False,
        keep_rows: int | None = None,
        sync: bool = False,
    ) -> None:
        self.path = Path(path)
        self.sync = sync
        self.columns = list(columns)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        resuming = append and self.path.exists() and self.path.stat().st_size > 0
        if resuming:
            self._prepare_append(keep_rows)
        self._fh: IO[str] = self.path.open("a" if resuming else "w", newline="")
        self._writer = csv.DictWriter(self._fh, fieldnames=self.columns, restval="")
        if not resuming:
            self._writer.writeheader()
            self._fh.flush()

    def _prepare_append(self, keep_rows: int | None) -> None:
        header = read_header(self.path)
        if header != self.columns:
            raise ValueError(
                f"{self.path}: columns {','.join(header)}, but this run writes "
                f"{','.join(self.columns)}; move the old log away to resume"
            )
        text = self.path.read_text(encoding="utf-8")
        if keep_rows is not None:
            lines = text.splitlines(keepends=True)  # log cells hold no line breaks
            if len(lines) > keep_rows + 1:  # rows of steps after the state's checkpoint
                text = "".join(lines[: keep_rows + 1])
                self.path.write_text(text, encoding="utf-8")
        if not text.endswith("\n"):  # the last row lost its line end (a killed writer)
            with self.path.open("a", newline="") as fh:
                fh.write("\n" if text.endswith("\r") else "\r\n")  # csv ends rows "\r\n"

    def write(self, row: Mapping[str, Any]) -> None:
        """Append one row (keys outside `columns` raise ``ValueError``) and flush it."""
        self._writer.writerow(row)
        self._fh.flush()
        if self.sync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> CsvLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
