"""Trace loaders: the packaged Microsoft Philly trace and your own CSV/Parquet traces.

Every loader returns a `Workload` of all-reduce GPU jobs (`Arch.ALLREDUCE`) that run under the
`Locality` throughput model with ``pack`` placement, scheduled on every arrival and completion.

**Generic traces** (`load_trace`): a CSV (``.csv``, ``.csv.gz``, ``.csv.bz2``, ``.csv.xz``,
``.csv.zst``) or Parquet (``.parquet``, ``.pq``) table, one job per row. Column names are matched
after trimming spaces and lower-casing.

=================  ========  ================================================================
column             required  meaning and rule
=================  ========  ================================================================
``submit_time``    yes       submission time: seconds (any origin; shifted so the first job
                             arrives at 0) or ISO-8601 dates (``2017-10-09 07:01:55``);
                             >= 0 and at most `MAX_SPAN_S` after the first job
``duration``       yes       seconds the job runs with all its GPUs at its best placement;
                             > 0 and at most `MAX_DURATION_S` (10 years)
``num_gpus``       yes       GPUs the job asks for: a whole number, >= 1, at most
                             `MAX_GPUS_PER_JOB` and at most the cluster's GPUs
``job_id``         no        non-negative whole number, unique; default: the 0-based data row
``model``          no        a model of `locality.SENSITIVITY`; default: drawn (see below)
``priority``       no        any finite number, larger is more important; default 0
``min_replicas``   no        fewest GPUs the job runs with, 1..num_gpus; default num_gpus
``max_replicas``   no        most GPUs the job can use, num_gpus..`MAX_GPUS_PER_JOB`;
                             default num_gpus
``cpu``            no        CPU cores of **each GPU worker**, >= 0, at most a server's;
                             default `CPU_PER_GPU`
``mem_gb``         no        memory (GB) of **each GPU worker**, >= 0, at most a server's;
                             default `MEM_GB_PER_GPU`
``num_workers``    no        must equal ``num_gpus`` (one GPU per worker)
``num_ps``         no        must be 0: parameter-server jobs are not supported here
``epochs``         no        ignored with a warning: a trace job's work is its duration
=================  ========  ================================================================

Each valid row becomes ``JobSpec(arch=Arch.ALLREDUCE, total_work=duration,
worker_demand=Resources(gpu=1, cpu=cpu, mem=mem_gb), num_workers=num_gpus,
min_workers=min_replicas, max_workers=max_replicas, priority=priority)``: work is measured in
seconds at the best placement, so `Locality` slows a job down only when it spans servers. Only
fixed-size and replica-elastic GPU jobs are supported; parameter-server jobs (``num_ps > 0``)
are rejected row by row with a message pointing at the ``dl2`` workload. Other columns (for
example Philly's ``gpu_time`` and ``cluster``) are ignored and listed in
``Workload.params["ignored_columns"]``.

**Row numbers** in messages are what you see in the file: for CSV the line number with the header
as row 1 (so the first job is row 2; blank lines count but are not jobs); for Parquet the 1-based
record number (the first job is row 1). Errors are one line, e.g.
``trace.csv row 17, column duration: -5 is negative``.

**Bad rows**: with ``on_bad_row="fail"`` (default) the first bad row raises `TraceError`, saying
how many other rows are bad too; with ``"skip"`` every bad row is left out, and the count and
reasons are logged (a warning with the first few) and recorded in ``Workload.params``
(``skipped_rows``; ``skip_reasons``, the first `MAX_REASONS_KEPT`). Blank CSV lines (no value
in any column) are not jobs; they are counted in ``params["blank_rows"]``.

**Models**: without a ``model`` column, each job's model is drawn with
``numpy.random.default_rng(seed)``: a category with the probabilities of
`locality.CATEGORY_MIX`, then one of that category's models (`locality.CATEGORY`) uniformly. One
draw is made per data row in file order, before any row is skipped or filtered, so a job's model
does not depend on which other rows are bad, on a Philly VC filter or time window, or on
``max_jobs``.

**Cluster**: ``servers`` servers of ``gpus_per_server`` GPUs, `CPU_PER_GPU` cores and
`MEM_GB_PER_GPU` GB per GPU. With ``servers=None`` the cluster is sized to the trace (see
`size_cluster`): enough servers for the largest job, and enough GPUs that the trace's average
GPU demand (total GPU-seconds over the trace's horizon) is `TARGET_UTILISATION` of the cluster.
Sizing uses the trace's own arrival times (load 1), so ``load`` changes how busy the *same*
cluster is: ``load=2`` divides every submit time by 2 (arrivals twice as dense).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from dlsched.core import Arch, JobSpec, Resources
from dlsched.workloads.base import Workload

log = logging.getLogger(__name__)

__all__ = [
    "CPU_PER_GPU",
    "MAX_DURATION_S",
    "MAX_GPUS_PER_JOB",
    "MAX_SPAN_S",
    "MEM_GB_PER_GPU",
    "PHILLY_FILE",
    "PHILLY_JOBS",
    "REQUIRED_COLUMNS",
    "TARGET_UTILISATION",
    "TraceError",
    "TraceInfo",
    "load_philly",
    "load_trace",
    "size_cluster",
    "trace_info",
]

REQUIRED_COLUMNS: tuple[str, ...] = ("submit_time", "duration", "num_gpus")
"""Columns every generic trace must have."""

OPTIONAL_COLUMNS: tuple[str, ...] = (
    "job_id",
    "model",
    "num_ps",
    "num_workers",
    "epochs",
    "priority",
    "min_replicas",
    "max_replicas",
    "cpu",
    "mem_gb",
)
"""Columns a generic trace may have (see the module docstring for their rules)."""

MAX_DURATION_S = 10 * 365 * 86_400.0
"""Longest job accepted: 10 years of 365 days, in seconds (anything longer is a unit mistake)."""

MAX_SPAN_S = MAX_DURATION_S
"""Latest submission accepted after the trace's first one: 10 years, in seconds."""

MAX_GPUS_PER_JOB = 4096
"""Most GPUs (and max replicas) one job may ask for, whatever the cluster."""

TARGET_UTILISATION = 0.8
"""Share of the GPUs the trace's average demand should use when the cluster is sized to it."""

CPU_PER_GPU = 4.0
"""CPU cores a server has per GPU, and each worker's default request (cores)."""

MEM_GB_PER_GPU = 32.0
"""Memory a server has per GPU, and each worker's default request (GB)."""

MAX_REASONS_KEPT = 1000
"""Skip reasons kept in ``Workload.params["skip_reasons"]`` (``skipped_rows`` counts them all)."""

PHILLY_FILE = "philly_jobs.csv.gz"
"""Packaged Philly trace (``dlsched/data``; source line in ``data/README.md``)."""

PHILLY_JOBS = 82_247
"""Jobs in the packaged Philly trace."""

_CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst")
_PARQUET_SUFFIXES = (".parquet", ".pq")
_NAN_WORDS = frozenset({"nan", "-nan", "+nan", "na", "n/a", "null", "none", "#n/a"})
_INT_COLUMNS = ("num_gpus", "job_id", "num_ps", "num_workers", "min_replicas", "max_replicas")
_SHOWN_REASONS = 5
_EPOCH = pd.Timestamp("1970-01-01", tz="UTC")


class TraceError(ValueError):
    """A trace that cannot be loaded, with a one-line message naming file, row and column.

    Attributes:
        path: the file (as given, or the packaged file's name).
        row: row as seen in the file (see the module docstring), or None for whole-file errors.
        column: the column at fault, or None.
    """

    def __init__(
        self, message: str, *, path: str = "", row: int | None = None, column: str | None = None
    ) -> None:
        super().__init__(message)
        self.path = path
        self.row = row
        self.column = column


@dataclass(frozen=True)
class TraceInfo:
    """Summary of a trace (what ``dlsched trace info`` prints).

    Attributes:
        source: the path, or ``philly`` / ``philly:VC``.
        jobs: valid jobs.
        skipped_rows: bad rows left out (with their first reasons in ``skip_reasons``).
        first_submit_s: first submission as in the file, seconds (Unix seconds for dated traces).
        last_submit_s: last submission as in the file, seconds.
        span_s: last minus first submission, seconds.
        first_submit: first submission as an ISO date, when the trace has dates (else None).
        last_submit: last submission as an ISO date, when the trace has dates (else None).
        gpu_histogram: number of GPUs → number of jobs asking for that many.
        duration_p50_s: median duration, seconds.
        duration_p90_s: 90th percentile of durations, seconds.
        duration_p99_s: 99th percentile of durations, seconds.
        total_gpu_hours: sum of GPUs × duration, GPU-hours.
        servers: servers of `gpus_per_server` GPUs the trace would be given by `size_cluster`.
        gpus_per_server: GPUs per server used for ``servers``.
        skip_reasons: the first few reasons rows were skipped.
    """

    source: str
    jobs: int
    skipped_rows: int
    first_submit_s: float
    last_submit_s: float
    span_s: float
    first_submit: str | None
    last_submit: str | None
    gpu_histogram: dict[int, int]
    duration_p50_s: float
    duration_p90_s: float
    duration_p99_s: float
    total_gpu_hours: float
    servers: int
    gpus_per_server: int
    skip_reasons: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Validation


@dataclass
class _Table:
    """Validated, kept rows of a trace, sorted by (submit time, job id)."""

    source: str
    rows: npt.NDArray[np.int64]
    submit_s: npt.NDArray[np.float64]
    dated: bool
    duration_s: npt.NDArray[np.float64]
    num_gpus: npt.NDArray[np.int64]
    job_id: npt.NDArray[np.int64]
    model: npt.NDArray[np.str_]
    priority: npt.NDArray[np.float64]
    min_replicas: npt.NDArray[np.int64]
    max_replicas: npt.NDArray[np.int64]
    cpu: npt.NDArray[np.float64]
    mem_gb: npt.NDArray[np.float64]
    models_from: str
    skipped: int
    reasons: list[str]
    blank_rows: int
    ignored_columns: list[str]


class _Checker:
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
            "on_bad_row='skip' leaves bad rows out)"
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


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.15g}"
    text = str(value).strip()
    return repr(text) if not text or any(c.isalpha() for c in text) else text


def _is_text(series: pd.Series) -> bool:
    return not (
        pd.api.types.is_numeric_dtype(series.dtype)
        or pd.api.types.is_datetime64_any_dtype(series.dtype)
    ) or pd.api.types.is_bool_dtype(series.dtype)


def _as_text(series: pd.Series) -> pd.Series:
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


def _numbers(
    check: _Checker, raw: pd.Series, column: str, *, allow_dates: bool = False
) -> tuple[npt.NDArray[np.float64], bool]:
    """Parse a column to float64 seconds/values, flagging empty, non-numeric, NaN and infinite
    cells. Returns the values (NaN where flagged) and whether they came from dates."""
    if pd.api.types.is_datetime64_any_dtype(raw.dtype):
        if not allow_dates:
            check.flag(np.ones(len(raw), dtype=bool), column, "is a date, not a number")
            return np.full(len(raw), np.nan), False
        stamps = raw.dt.tz_localize("UTC") if raw.dt.tz is None else raw.dt.tz_convert("UTC")
        seconds = ((stamps - _EPOCH) / pd.Timedelta(seconds=1)).to_numpy(np.float64)
        check.flag(np.isnan(seconds), column, "is empty")
        return seconds, True
    if not _is_text(raw):
        values = raw.to_numpy(np.float64, na_value=np.nan)
        check.flag(np.isnan(values), column, "is missing (NaN or null)")
        check.flag(np.isinf(values), column, "{v} is infinite", raw)
        return values, False
    text = _as_text(raw)
    values = pd.to_numeric(text, errors="coerce").to_numpy(np.float64, na_value=np.nan)
    empty = (text == "").to_numpy()
    nan_word = text.str.lower().isin(_NAN_WORDS).to_numpy()
    unparsed = np.isnan(values) & ~empty & ~nan_word
    dated = False
    if allow_dates and unparsed.any() and not np.any(~np.isnan(values)):
        stamps = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
        parsed = np.asarray(
            ((stamps - _EPOCH) / pd.Timedelta(seconds=1)).to_numpy(np.float64, na_value=np.nan),
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


def _whole(check: _Checker, values: npt.NDArray[np.float64], column: str) -> None:
    with np.errstate(invalid="ignore"):
        frac = np.isfinite(values) & (values != np.round(values))
    check.flag(frac, column, "{v} is not a whole number", pd.Series(values))


def _at_least(
    check: _Checker,
    values: npt.NDArray[np.float64],
    column: str,
    low: float,
    message: str,
) -> None:
    with np.errstate(invalid="ignore"):
        check.flag(values < low, column, message, pd.Series(values))


def _at_most(
    check: _Checker,
    values: npt.NDArray[np.float64],
    column: str,
    high: float,
    message: str,
) -> None:
    with np.errstate(invalid="ignore"):
        check.flag(values > high, column, message, pd.Series(values))


def _normalise_columns(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    names = [str(c).strip().lower() for c in frame.columns]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise TraceError(f"{source}: column {name!r} appears twice", path=source, column=name)
        seen.add(name)
    frame = frame.copy(deep=False)
    frame.columns = pd.Index(names)
    return frame


def _validate(
    frame: pd.DataFrame,
    *,
    source: str,
    rows: npt.NDArray[np.int64],
    on_bad_row: str,
    cluster_gpus: int | None,
    gpus_per_server: int,
    seed: int,
    models: npt.NDArray[np.str_] | None = None,
) -> _Table:
    """Check every cell of ``frame`` and return the kept rows, sorted by submission.

    Args:
        frame: one row per job, columns already normalised.
        source: file name used in messages.
        rows: row number of each frame row as the user sees it in the file.
        on_bad_row: "fail" or "skip".
        cluster_gpus: GPUs of the cluster when fixed, else None (sized to the trace later).
        gpus_per_server: GPUs per server (bounds cpu/mem per worker through server capacity).
        seed: seed of the model draw when there is no ``model`` column.
        models: pre-drawn models, one per frame row (Philly draws over the whole file).
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        found = ", ".join(map(str, frame.columns)) or "none"
        raise TraceError(
            f"{source}: missing required column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)} (found: {found})",
            path=source,
            column=missing[0],
        )
    n = len(frame)
    check = _Checker(source, rows)
    known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS)
    ignored = [c for c in frame.columns if c not in known]
    if "epochs" in frame.columns:
        ignored.append("epochs")
        log.warning(
            "%s: column epochs is ignored: a trace job's work is its duration (seconds)", source
        )
    if ignored:
        log.info("%s: ignoring column(s) %s", source, ", ".join(ignored))

    submit, dated = _numbers(check, frame["submit_time"], "submit_time", allow_dates=True)
    _at_least(check, submit, "submit_time", 0.0, "{v} is negative")
    duration, _ = _numbers(check, frame["duration"], "duration")
    _at_least(check, duration, "duration", 0.0, "{v} is negative")
    with np.errstate(invalid="ignore"):
        check.flag(duration == 0, "duration", "is 0: a job must run for some time")
    _at_most(
        check,
        duration,
        "duration",
        MAX_DURATION_S,
        "{v} s is more than 10 years (MAX_DURATION_S; are durations in seconds?)",
    )
    gpus, _ = _numbers(check, frame["num_gpus"], "num_gpus")
    _whole(check, gpus, "num_gpus")
    _at_least(check, gpus, "num_gpus", 0.0, "{v} is negative")
    with np.errstate(invalid="ignore"):
        check.flag(gpus == 0, "num_gpus", "is 0: every trace job needs at least 1 GPU")
    _at_most(
        check,
        gpus,
        "num_gpus",
        MAX_GPUS_PER_JOB,
        f"{{v}} GPUs is more than MAX_GPUS_PER_JOB ({MAX_GPUS_PER_JOB})",
    )
    if cluster_gpus is not None:
        _at_most(
            check,
            gpus,
            "num_gpus",
            cluster_gpus,
            f"{{v}} GPUs is more than the cluster's {cluster_gpus}",
        )

    def optional(column: str, default: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        if column not in frame.columns:
            return default
        values, _ = _numbers(check, frame[column], column)
        return values

    job_id = optional("job_id", np.arange(n, dtype=np.float64))
    if "job_id" in frame.columns:
        _whole(check, job_id, "job_id")
        _at_least(check, job_id, "job_id", 0.0, "{v} is negative")
        _at_most(check, job_id, "job_id", 2.0**62, "{v} is too large for a job id")
    num_ps = optional("num_ps", np.zeros(n))
    if "num_ps" in frame.columns:
        _whole(check, num_ps, "num_ps")
        _at_least(check, num_ps, "num_ps", 0.0, "{v} is negative")
        _at_most(
            check,
            num_ps,
            "num_ps",
            0.0,
            "{v} parameter servers: PS jobs are not supported in traces (use the dl2 workload,"
            " or set num_ps to 0)",
        )
    num_workers = optional("num_workers", gpus)
    if "num_workers" in frame.columns:
        _whole(check, num_workers, "num_workers")
        with np.errstate(invalid="ignore"):
            differs = num_workers != gpus
        check.flag(
            differs & ~np.isnan(gpus),
            "num_workers",
            "{v} differs from num_gpus (trace jobs have one GPU per worker)",
            pd.Series(num_workers),
        )
    priority = optional("priority", np.zeros(n))
    min_rep = optional("min_replicas", gpus)
    if "min_replicas" in frame.columns:
        _whole(check, min_rep, "min_replicas")
        _at_least(check, min_rep, "min_replicas", 1.0, "{v} is less than 1")
        with np.errstate(invalid="ignore"):
            check.flag(
                min_rep > gpus, "min_replicas", "{v} is more than num_gpus", pd.Series(min_rep)
            )
    max_rep = optional("max_replicas", gpus)
    if "max_replicas" in frame.columns:
        _whole(check, max_rep, "max_replicas")
        with np.errstate(invalid="ignore"):
            check.flag(
                max_rep < gpus, "max_replicas", "{v} is less than num_gpus", pd.Series(max_rep)
            )
        _at_most(
            check,
            max_rep,
            "max_replicas",
            MAX_GPUS_PER_JOB,
            f"{{v}} is more than MAX_GPUS_PER_JOB ({MAX_GPUS_PER_JOB})",
        )
    server_cpu = CPU_PER_GPU * gpus_per_server
    server_mem = MEM_GB_PER_GPU * gpus_per_server
    cpu = optional("cpu", np.full(n, CPU_PER_GPU))
    if "cpu" in frame.columns:
        _at_least(check, cpu, "cpu", 0.0, "{v} is negative")
        _at_most(
            check, cpu, "cpu", server_cpu, f"{{v}} cores is more than a server's {server_cpu:g}"
        )
    mem = optional("mem_gb", np.full(n, MEM_GB_PER_GPU))
    if "mem_gb" in frame.columns:
        _at_least(check, mem, "mem_gb", 0.0, "{v} is negative")
        _at_most(
            check, mem, "mem_gb", server_mem, f"{{v}} GB is more than a server's {server_mem:g}"
        )

    if "model" in frame.columns:
        model_text = _as_text(frame["model"])
        model = model_text.to_numpy(dtype=str)
        from dlsched.models import locality

        valid = sorted(locality.SENSITIVITY)
        check.flag(model == "", "model", "is empty")
        check.flag(
            ~np.isin(model, valid),
            "model",
            "{v} is not a known model (" + ", ".join(valid) + ")",
            model_text,
        )
        models_from = "column"
    else:
        model = models if models is not None else _draw_models(n, seed)
        models_from = f"drawn from CATEGORY_MIX with seed {seed}"

    # Span: measured from the first submission among otherwise good rows.
    good = ~check.bad
    if good.any():
        first = float(submit[good].min())
        with np.errstate(invalid="ignore"):
            late = submit - first > MAX_SPAN_S
        check.flag(
            late,
            "submit_time",
            "{v} is more than 10 years after the first job (are times in seconds?)",
            _seconds(submit, dated),
        )

    # Duplicate ids last, among rows that are otherwise good: the later rows are the bad ones.
    if "job_id" in frame.columns:
        good_idx = np.flatnonzero(~check.bad)
        ids = pd.Series(job_id[good_idx])
        repeat = ids.duplicated(keep="first").to_numpy()
        if repeat.any():
            first_row = dict(
                zip(job_id[good_idx][::-1].tolist(), rows[good_idx][::-1].tolist(), strict=True)
            )
            dup = np.zeros(n, dtype=bool)
            dup[good_idx[repeat]] = True
            texts = np.full(n, "", dtype=object)
            for i in np.flatnonzero(dup).tolist():
                texts[i] = f"{job_id[i]:g} repeats the job id of row {first_row[job_id[i]]}"
            check.flag(dup, "job_id", "{v}", pd.Series(texts), verbatim=True)

    if on_bad_row == "fail":
        check.raise_first()
    keep = ~check.bad
    skipped = int(check.bad.sum())
    reasons = check.reasons()
    if not keep.any():
        detail = f"; first: {reasons[0]}" if reasons else ""
        raise TraceError(f"{source}: no valid jobs in {n} row(s){detail}", path=source)
    if skipped:
        log.warning(
            "%s: skipped %d bad row(s) of %d: %s%s",
            source,
            skipped,
            n,
            "; ".join(reasons[:_SHOWN_REASONS]),
            " …" if skipped > _SHOWN_REASONS else "",
        )

    idx = np.flatnonzero(keep)
    order = idx[np.lexsort((job_id[idx], submit[idx]))]
    return _Table(
        source=source,
        rows=rows[order],
        submit_s=submit[order],
        dated=dated,
        duration_s=duration[order],
        num_gpus=gpus[order].astype(np.int64),
        job_id=job_id[order].astype(np.int64),
        model=np.asarray(model)[order],
        priority=priority[order],
        min_replicas=min_rep[order].astype(np.int64),
        max_replicas=max_rep[order].astype(np.int64),
        cpu=cpu[order],
        mem_gb=mem[order],
        models_from=models_from,
        skipped=skipped,
        reasons=reasons,
        blank_rows=0,
        ignored_columns=ignored,
    )


def _seconds(values: npt.NDArray[np.float64], dated: bool) -> Callable[[int], Any]:
    """Shows submit time ``i`` as in the file: a number, or an ISO date for dated traces."""
    if dated:
        return lambda i: _iso(float(values[i]))
    return lambda i: float(values[i])


def _iso(unix_s: float) -> str:
    return str(pd.Timestamp(unix_s, unit="s", tz="UTC").tz_localize(None))


def _draw_models(n: int, seed: int) -> npt.NDArray[np.str_]:
    """One model per row: a category by ``CATEGORY_MIX``, then a model of it uniformly."""
    from dlsched.models import locality

    categories = list(locality.CATEGORY_MIX)
    weights = np.array([locality.CATEGORY_MIX[c] for c in categories], dtype=np.float64)
    by_category = {
        c: sorted(m for m, cat in locality.CATEGORY.items() if cat == c) for c in categories
    }
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(categories), size=n, p=weights / weights.sum())
    slot = rng.random(n)
    out = np.empty(n, dtype=object)
    for k, c in enumerate(categories):
        names = by_category[c]
        where = picked == k
        out[where] = np.asarray(names, dtype=object)[(slot[where] * len(names)).astype(np.int64)]
    return out.astype(str)


# --------------------------------------------------------------------------------------------
# Reading files


def _read_table(path: Path, source: str) -> tuple[pd.DataFrame, npt.NDArray[np.int64], int]:
    """Read a CSV or Parquet file into a frame, with each row's number as seen in the file.

    Returns the frame (blank CSV lines removed), row numbers, and the count of blank lines.
    """
    name = path.name.lower()
    if not path.exists():
        raise TraceError(f"{source}: no such file", path=source)
    if path.is_dir():
        raise TraceError(f"{source}: is a folder, not a trace file", path=source)
    if name.endswith(_PARQUET_SUFFIXES):
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
    if not name.endswith(_CSV_SUFFIXES):
        raise TraceError(
            f"{source}: unknown trace format; use .csv, .csv.gz or .parquet", path=source
        )
    try:
        frame = pd.read_csv(
            path,
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            skip_blank_lines=False,
            compression="infer",
        )
    except pd.errors.EmptyDataError:
        raise TraceError(f"{source}: file is empty", path=source) from None
    except UnicodeDecodeError:
        raise TraceError(f"{source}: not a text CSV file (cannot decode it)", path=source) from None
    except (pd.errors.ParserError, OSError, EOFError, ValueError) as exc:
        raise TraceError(f"{source}: cannot read as CSV: {_first_line(exc)}", path=source) from None
    frame = _normalise_columns(frame, source)
    rows = np.arange(2, len(frame) + 2, dtype=np.int64)
    blank = np.ones(len(frame), dtype=bool)
    for column in frame.columns:
        blank &= (frame[column].astype(str).str.strip() == "").to_numpy()
    if blank.any():
        frame = frame.loc[~blank].reset_index(drop=True)
        rows = rows[~blank]
    return frame, rows, int(blank.sum())


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --------------------------------------------------------------------------------------------
# Cluster and workload


def size_cluster(
    submit_s: npt.NDArray[np.float64] | Sequence[float],
    duration_s: npt.NDArray[np.float64] | Sequence[float],
    num_gpus: npt.NDArray[np.int64] | Sequence[int],
    gpus_per_server: int = 8,
    utilisation: float = TARGET_UTILISATION,
) -> int:
    """Servers a trace needs: the most of two counts, and at least 1.

    * the largest job fits: ``ceil(max(num_gpus) / gpus_per_server)``;
    * the average GPU demand is ``utilisation`` of the cluster:
      ``ceil(sum(num_gpus * duration) / horizon / utilisation / gpus_per_server)``, where the
      horizon is the longer of the submission span and the longest duration (seconds), so a
      trace whose jobs all arrive at once gets a cluster that could finish them in about the time
      of its longest job.

    Args:
        submit_s: submission times, seconds (any origin).
        duration_s: durations at full allocation, seconds.
        num_gpus: GPUs of each job.
        gpus_per_server: GPUs per server.
        utilisation: target share of the GPUs busy on average (0-1].
    """
    submit = np.asarray(submit_s, dtype=np.float64)
    duration = np.asarray(duration_s, dtype=np.float64)
    gpus = np.asarray(num_gpus, dtype=np.float64)
    if not len(gpus):
        return 1
    largest = math.ceil(float(gpus.max()) / gpus_per_server)
    horizon = max(float(submit.max() - submit.min()), float(duration.max()), 1.0)
    demand = float(np.dot(gpus, duration)) / horizon
    busy = math.ceil(demand / utilisation / gpus_per_server - 1e-9)
    return max(1, largest, busy)


def _check_options(servers: int | None, gpus_per_server: int, load: float | None) -> None:
    if servers is not None and servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    if gpus_per_server < 1:
        raise ValueError(f"gpus_per_server must be >= 1, got {gpus_per_server}")
    if load is not None and not (math.isfinite(load) and load > 0):
        raise ValueError(f"load must be a positive number, got {load}")


def _workload(
    table: _Table,
    *,
    name: str,
    servers: int | None,
    gpus_per_server: int,
    seed: int,
    load: float | None,
    extra: Mapping[str, Any],
) -> Workload:
    from dlsched.models.locality import Locality

    sized = servers is None
    if servers is None:
        servers = size_cluster(table.submit_s, table.duration_s, table.num_gpus, gpus_per_server)
    origin = float(table.submit_s[0])
    shifted = table.submit_s - origin
    submit = (shifted / load if load is not None else shifted).tolist()
    # One shared Resources per distinct (cpu, mem) request; positional JobSpec arguments in a
    # comprehension keep 82,247 Philly jobs to a fraction of a second.
    cache: dict[tuple[float, float], Resources] = {}
    demands = [
        cache.get(key) or cache.setdefault(key, Resources(1.0, key[0], key[1]))
        for key in zip(table.cpu.tolist(), table.mem_gb.tolist(), strict=True)
    ]
    no_ps = Resources()
    allreduce = Arch.ALLREDUCE
    jobs = [
        JobSpec(jid, t, model, allreduce, work, demand, no_ps, g, 0, lo, hi, 0, prio)
        for jid, t, model, work, demand, g, lo, hi, prio in zip(
            table.job_id.tolist(),
            submit,
            table.model.tolist(),
            table.duration_s.tolist(),
            demands,
            table.num_gpus.tolist(),
            table.min_replicas.tolist(),
            table.max_replicas.tolist(),
            table.priority.tolist(),
            strict=True,
        )
    ]
    capacity = Resources(
        float(gpus_per_server), CPU_PER_GPU * gpus_per_server, MEM_GB_PER_GPU * gpus_per_server
    )
    params: dict[str, Any] = {
        "source": table.source,
        "seed": seed,
        "load": load,
        "servers": servers,
        "servers_sized_to_trace": sized,
        "gpus_per_server": gpus_per_server,
        "jobs": len(jobs),
        "origin": _iso(origin) if table.dated else origin,
        "models": table.models_from,
        "skipped_rows": table.skipped,
        "skip_reasons": list(table.reasons),
        "blank_rows": table.blank_rows,
        "ignored_columns": list(table.ignored_columns),
        **extra,
    }
    return Workload(
        name=name,
        jobs=tuple(jobs),
        servers=(capacity,) * servers,
        model=Locality(gpus_per_server=gpus_per_server),
        interval_s=None,
        on_events=True,
        placement="pack",
        params=params,
    )


# --------------------------------------------------------------------------------------------
# Public loaders


def _read_trace(
    path: str | Path,
    *,
    on_bad_row: str,
    servers: int | None,
    gpus_per_server: int,
    seed: int,
) -> _Table:
    if on_bad_row not in ("skip", "fail"):
        raise ValueError(f"on_bad_row must be 'skip' or 'fail', got {on_bad_row!r}")
    source = str(path)
    frame, rows, blank = _read_table(Path(path), source)
    if not len(frame):
        raise TraceError(f"{source}: has a header but no jobs", path=source)
    table = _validate(
        frame,
        source=source,
        rows=rows,
        on_bad_row=on_bad_row,
        cluster_gpus=None if servers is None else servers * gpus_per_server,
        gpus_per_server=gpus_per_server,
        seed=seed,
    )
    table.blank_rows = blank
    return table


def load_trace(
    path: str | Path,
    *,
    on_bad_row: Literal["skip", "fail"] = "fail",
    servers: int | None = None,
    gpus_per_server: int = 8,
    seed: int = 0,
    load: float | None = None,
) -> Workload:
    """Load a CSV or Parquet trace of GPU jobs (columns and rules in the module docstring).

    Args:
        path: a ``.csv``, ``.csv.gz`` (or other compressed CSV) or ``.parquet`` file.
        on_bad_row: "fail" raises on the first bad row; "skip" leaves bad rows out, logs a
            warning with their count and first reasons, and records them in ``params``.
        servers: cluster size in servers; None sizes it to the trace (`size_cluster`).
        gpus_per_server: GPUs per server.
        seed: seed of the model draw when the trace has no ``model`` column.
        load: arrival-rate multiplier: submit times are divided by it (2 = twice as dense);
            None or 1 keeps the trace's times.

    Returns:
        A workload named ``trace:<path>`` of all-reduce jobs, first arriving at 0 s.

    Raises:
        TraceError: unreadable, empty or malformed file, with file, row and column.
        ValueError: a bad option value.
    """
    _check_options(servers, gpus_per_server, load)
    table = _read_trace(
        path, on_bad_row=on_bad_row, servers=servers, gpus_per_server=gpus_per_server, seed=seed
    )
    return _workload(
        table,
        name=f"trace:{path}",
        servers=servers,
        gpus_per_server=gpus_per_server,
        seed=seed,
        load=load,
        extra={"on_bad_row": on_bad_row},
    )


def _philly_frame() -> pd.DataFrame:
    with resources.as_file(resources.files("dlsched") / "data" / PHILLY_FILE) as path:
        return pd.read_csv(
            path,
            dtype={"duration": np.float64, "num_gpus": np.int64, "gpu_time": np.float64},
            engine="c",
        )


def _philly_table(
    vc: str | None,
    start: str | None,
    end: str | None,
    max_jobs: int | None,
    servers: int | None,
    gpus_per_server: int,
    seed: int,
) -> _Table:
    frame = _philly_frame()
    if len(frame) != PHILLY_JOBS:
        log.warning("%s has %d jobs, expected %d", PHILLY_FILE, len(frame), PHILLY_JOBS)
    models = _draw_models(len(frame), seed)
    rows = np.arange(2, len(frame) + 2, dtype=np.int64)
    submit = pd.to_datetime(frame["timestamp"], format="%Y-%m-%d %H:%M:%S", utc=True)
    keep = np.ones(len(frame), dtype=bool)
    if vc is not None:
        clusters = sorted(frame["cluster"].unique().tolist())
        if vc not in clusters:
            raise TraceError(
                f"{PHILLY_FILE}: unknown virtual cluster {vc!r}; choose one of "
                + ", ".join(clusters),
                path=PHILLY_FILE,
                column="cluster",
            )
        keep &= (frame["cluster"] == vc).to_numpy()
    lo = _when(start, "start")
    hi = _when(end, "end")
    if lo is not None and hi is not None and lo >= hi:
        raise ValueError(f"start {start} is not before end {end}")
    if lo is not None:
        keep &= (submit >= lo).to_numpy()
    if hi is not None:
        keep &= (submit < hi).to_numpy()
    if not keep.any():
        where = f" of virtual cluster {vc}" if vc else ""
        raise TraceError(
            f"{PHILLY_FILE}: no jobs{where} between {start or 'the start'} and {end or 'the end'}",
            path=PHILLY_FILE,
        )
    chosen = frame.loc[keep, ["duration", "num_gpus"]].reset_index(drop=True)
    chosen["submit_time"] = submit[keep].reset_index(drop=True)
    table = _validate(
        chosen,
        source=PHILLY_FILE,
        rows=rows[keep],
        on_bad_row="fail",
        cluster_gpus=None if servers is None else servers * gpus_per_server,
        gpus_per_server=gpus_per_server,
        seed=seed,
        models=models[keep],
    )
    table.job_id = table.rows - 2  # job id = 0-based row of the packaged file
    if max_jobs is not None:
        if max_jobs < 1:
            raise ValueError(f"max_jobs must be >= 1, got {max_jobs}")
        for name in (
            "rows",
            "submit_s",
            "duration_s",
            "num_gpus",
            "job_id",
            "model",
            "priority",
            "min_replicas",
            "max_replicas",
            "cpu",
            "mem_gb",
        ):
            setattr(table, name, getattr(table, name)[:max_jobs])
    return table


def _when(text: str | None, what: str) -> pd.Timestamp | None:
    """Parse an ISO-8601 date/time (UTC unless it says otherwise); None stays None."""
    if text is None:
        return None
    try:
        stamp = pd.to_datetime(str(text), format="ISO8601")
    except (ValueError, TypeError):
        raise ValueError(f"{what} {text!r} is not an ISO date (e.g. 2017-10-01)") from None
    if not isinstance(stamp, pd.Timestamp) or pd.isna(stamp):
        raise ValueError(f"{what} {text!r} is not an ISO date (e.g. 2017-10-01)")
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


def load_philly(
    vc: str | None = None,
    *,
    start: str | None = None,
    end: str | None = None,
    servers: int | None = None,
    seed: int = 0,
    load: float | None = None,
    max_jobs: int | None = None,
) -> Workload:
    """The Microsoft Philly trace (2017, 82,247 jobs) packaged as ``data/philly_jobs.csv.gz``.

    Jobs are all-reduce GPU jobs on 8-GPU servers, built and validated as in `load_trace`
    (``timestamp`` → submit time, ``duration`` → total work in seconds, ``num_gpus``;
    ``gpu_time`` equals duration × GPUs in every row and is not used; ``cluster`` is the virtual
    cluster). Job ``k`` is data row ``k`` (0-based; line ``k + 2``) of the packaged CSV, so a job
    keeps its id whatever the filter. Models are drawn as in `load_trace`, over the whole file
    before filtering, so ``philly:VC`` jobs have the models they have in ``philly``. Sized to
    the trace, all of Philly gets 59 servers (472 GPUs; its average demand is about 374 GPUs).

    Args:
        vc: one virtual cluster (e.g. ``"6214e9"``); None for all 15.
        start: keep jobs submitted at or after this ISO date/time (UTC, e.g. ``2017-10-01``).
        end: keep jobs submitted before this ISO date/time (exclusive).
        servers: cluster size in 8-GPU servers; None sizes it to the selection (`size_cluster`).
        seed: seed of the model draw.
        load: arrival-rate multiplier (2 = arrivals twice as dense); None or 1 keeps the times.
        max_jobs: keep only the first ``max_jobs`` jobs by submission (after the filters).

    Returns:
        A workload named ``philly`` or ``philly:<vc>``, first job at 0 s.

    Raises:
        TraceError: unknown virtual cluster (listing the valid ones), or no job selected.
        ValueError: a bad date or option value.
    """
    _check_options(servers, 8, load)
    table = _philly_table(vc, start, end, max_jobs, servers, 8, seed)
    return _workload(
        table,
        name="philly" if vc is None else f"philly:{vc}",
        servers=servers,
        gpus_per_server=8,
        seed=seed,
        load=load,
        extra={"vc": vc, "start": start, "end": end, "max_jobs": max_jobs},
    )


def trace_info(source: str | Path) -> TraceInfo:
    """Summarise a trace: ``philly``, ``philly:VC`` or a CSV/Parquet path (``trace:`` prefix
    allowed). Bad rows of a file are skipped and counted rather than raised.

    Raises:
        TraceError: unreadable or empty file, unknown virtual cluster, or no valid job.
    """
    text = str(source)
    if text.startswith("trace:"):
        text = text[len("trace:") :]
    elif (text == "philly" or text.startswith("philly:")) and not Path(text).exists():
        vc = text.partition(":")[2] or None
        return _summarise(_philly_table(vc, None, None, None, None, 8, 0), text, 8)
    table = _read_trace(text, on_bad_row="skip", servers=None, gpus_per_server=8, seed=0)
    return _summarise(table, text, 8)


def _summarise(table: _Table, source: str, gpus_per_server: int) -> TraceInfo:
    first = float(table.submit_s[0])
    last = float(table.submit_s.max())
    counts = np.unique(table.num_gpus, return_counts=True)
    p50, p90, p99 = (float(x) for x in np.percentile(table.duration_s, [50, 90, 99]))
    return TraceInfo(
        source=source,
        jobs=len(table.job_id),
        skipped_rows=table.skipped,
        first_submit_s=first,
        last_submit_s=last,
        span_s=last - first,
        first_submit=_iso(first) if table.dated else None,
        last_submit=_iso(last) if table.dated else None,
        gpu_histogram={int(g): int(c) for g, c in zip(*counts, strict=True)},
        duration_p50_s=p50,
        duration_p90_s=p90,
        duration_p99_s=p99,
        total_gpu_hours=float(np.dot(table.num_gpus, table.duration_s)) / 3600.0,
        servers=size_cluster(table.submit_s, table.duration_s, table.num_gpus, gpus_per_server),
        gpus_per_server=gpus_per_server,
        skip_reasons=list(table.reasons[:_SHOWN_REASONS]),
    )
