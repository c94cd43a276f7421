"""Cell parsing shared by the column rules: a per-row problem collector and number parsing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dlsched.workloads.traces.schema import MAX_REASONS_KEPT, NAN_WORDS, TraceError

EPOCH = pd.Timestamp("1970-01-01", tz="UTC")
"""Origin of the seconds dates are read as (1970-01-01 UTC)."""


class Checker:
    """Collects at most one problem per row, in check order, with vectorised masks."""

    def __init__(self, source: str, rows: npt.NDArray[np.int64]) -> None:
        self.source = source
        self.rows = rows
        self.bad = np.zeros(len(rows), dtype=bool)
        self.problems: dict[int, tuple[str, str]] = {}

    def flag(
        self,
        mask: npt.NDArray[np.bool_],
        column: str,
        message: str,
        shown: pd.Series | Callable[[int], Any] | None = None,
        *,
        verbatim: bool = False,
    ) -> None:
        """Mark rows where ``mask`` holds (and no earlier problem did).

        ``message`` may contain ``{v}``, replaced by the row's value from ``shown`` (quoted when
        it is text, unless ``verbatim``).
        """
        new = np.flatnonzero(mask & ~self.bad)
        if not len(new):
            return
        self.bad[new] = True
        for i in new.tolist():
            text = message
            if shown is not None:
                value = shown.iloc[i] if isinstance(shown, pd.Series) else shown(i)
                text = message.format(v=value if verbatim else _show(value))
            self.problems[i] = (column, text)

    def reason(self, i: int) -> str:
        column, text = self.problems[i]
        return f"{self.source} row {int(self.rows[i])}, column {column}: {text}"

    def raise_first(self) -> None:
        """Raise a TraceError for the first bad row, if any."""
        if not self.problems:
            return
        first = min(self.problems)
        others = len(self.problems) - 1
        more = (
            f" ({others} more bad row{'s' if others > 1 else ''}; "
            "--on-bad-row skip (-o on_bad_row=skip) leaves bad rows out)"
            if others
            else ""
        )
        raise TraceError(
            self.reason(first) + more,
            path=self.source,
            row=int(self.rows[first]),
            column=self.problems[first][0],
        )

    def reasons(self) -> list[str]:
        return [self.reason(i) for i in sorted(self.problems)[:MAX_REASONS_KEPT]]


SHOWN_CHARS = 60
"""Characters of a cell echoed in a message; longer cells are cut and end with '…'."""


def shorten(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters plus '…' when longer."""
    return text if len(text) <= limit else text[:limit] + "…"


def _show(value: Any) -> str:
    """A cell as a message shows it: numbers as they are, text quoted, cut to `SHOWN_CHARS`."""
    if isinstance(value, float):
        return f"{value:.15g}"
    text = str(value).strip()
    quoted = not text or not text.isprintable() or any(c.isalpha() for c in text)
    return repr(shorten(text)) if quoted else shorten(text)


def is_text(series: pd.Series) -> bool:
    return not (
        pd.api.types.is_numeric_dtype(series.dtype)
        or pd.api.types.is_datetime64_any_dtype(series.dtype)
    ) or pd.api.types.is_bool_dtype(series.dtype)


def as_text(series: pd.Series) -> pd.Series:
    """Cells as stripped strings ('' for missing), whatever the column's type."""
    if pd.api.types.is_string_dtype(series.dtype) and not series.hasnans:
        return series.astype(str).str.strip()
    return pd.Series(
        ["" if _missing(v) else str(v).strip() for v in series.tolist()], index=series.index
    )


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def numbers(
    check: Checker, raw: pd.Series, column: str, *, allow_dates: bool = False
) -> tuple[npt.NDArray[np.float64], bool]:
    """Parse a column to float64 seconds/values, flagging empty, non-numeric, NaN and infinite
    cells. Returns the values (NaN where flagged) and whether they came from dates."""
    if pd.api.types.is_datetime64_any_dtype(raw.dtype):
        if not allow_dates:
            check.flag(np.ones(len(raw), dtype=bool), column, "is a date, not a number")
            return np.full(len(raw), np.nan), False
        stamps = raw.dt.tz_localize("UTC") if raw.dt.tz is None else raw.dt.tz_convert("UTC")
        seconds = ((stamps - EPOCH) / pd.Timedelta(seconds=1)).to_numpy(np.float64)
        check.flag(np.isnan(seconds), column, "is empty")
        return seconds, True
    if not is_text(raw):
        values = raw.to_numpy(np.float64, na_value=np.nan)
        check.flag(np.isnan(values), column, "is missing (NaN or null)")
        check.flag(np.isinf(values), column, "{v} is infinite", raw)
        return values, False
    text = as_text(raw)
    values = pd.to_numeric(text, errors="coerce").to_numpy(np.float64, na_value=np.nan)
    empty = (text == "").to_numpy()
    nan_word = text.str.lower().isin(NAN_WORDS).to_numpy()
    unparsed = np.isnan(values) & ~empty & ~nan_word
    dated = False
    if allow_dates and unparsed.any() and not np.any(~np.isnan(values)):
        stamps = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
        parsed = np.asarray(
            ((stamps - EPOCH) / pd.Timedelta(seconds=1)).to_numpy(np.float64, na_value=np.nan),
            dtype=np.float64,
        )
        if np.any(~np.isnan(parsed)):
            values, dated = parsed, True
            unparsed = np.isnan(values) & ~empty & ~nan_word
    check.flag(empty, column, "is empty")
    kind = "an ISO date" if dated else "a number"
    check.flag(unparsed, column, "{v} is not " + kind, text)
    check.flag(nan_word, column, "{v} is NaN", text)
    check.flag(np.isinf(values), column, "{v} is infinite", text)
    return values, dated


def whole(check: Checker, values: npt.NDArray[np.float64], column: str) -> None:
    with np.errstate(invalid="ignore"):
        frac = np.isfinite(values) & (values != np.round(values))
    check.flag(frac, column, "{v} is not a whole number", pd.Series(values))


def at_least(
    check: Checker,
    values: npt.NDArray[np.float64],
    column: str,
    low: float,
    message: str,
) -> None:
    with np.errstate(invalid="ignore"):
        check.flag(values < low, column, message, pd.Series(values))


def at_most(
    check: Checker,
    values: npt.NDArray[np.float64],
    column: str,
    high: float,
    message: str,
) -> None:
    with np.errstate(invalid="ignore"):
        check.flag(values > high, column, message, pd.Series(values))
