"""Validation of a trace's cells: one rule per column, applied in a fixed order.

Each row gets at most one problem, the first rule that flags it (`Checker`), so the order of the
rules below is the order in which a row's problems are reported.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dlsched.workloads.traces.building import draw_models, seconds_shown
from dlsched.workloads.traces.cells import (
    Checker,
    as_text,
    at_least,
    at_most,
    is_text,
    numbers,
    shorten,
    whole,
)
from dlsched.workloads.traces.columns import TIME_COLUMNS
from dlsched.workloads.traces.schema import (
    CPU_PER_GPU,
    MAX_DURATION_S,
    MAX_GPUS_PER_JOB,
    MAX_SPAN_S,
    MEM_GB_PER_GPU,
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    SHOWN_REASONS,
    Table,
    TraceError,
)

log = logging.getLogger(__name__)

Values = npt.NDArray[np.float64]


@dataclass
class _Rows:
    """The frame being checked, its problem collector and what it needs to know."""

    frame: pd.DataFrame
    check: Checker
    gpus_per_server: int
    time_unit_s: float = 1.0
    """Seconds per unit of the numeric time columns."""
    duration_unit_s: float = 1.0
    """Seconds per unit of the duration column."""

    def has(self, column: str) -> bool:
        return column in self.frame.columns

    def optional(self, column: str, default: Values) -> Values:
        """The column's values (bad cells flagged), or ``default`` when the column is absent."""
        if not self.has(column):
            return default
        values, _ = numbers(self.check, self.frame[column], column)
        return values


def _require_columns(frame: pd.DataFrame, source: str, file_columns: list[str] | None) -> None:
    """A one-line error for a missing required column, listing the file's own columns (not the
    ones mapped from them) and how to map one."""
    inferable = {"duration"} if {"start_time", "end_time"} <= set(frame.columns) else set()
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns and c not in inferable]
    if missing:
        names = [str(c) for c in (frame.columns if file_columns is None else file_columns)]
        found = shorten(", ".join(shorten(c if c.isprintable() else repr(c)) for c in names), 200)
        found = found or "none"
        hint = ""
        if len(names) == 1 and any(sep in names[0] for sep in ";\t|"):
            hint = "; columns must be separated by commas"
        elif file_columns is not None:
            mapping = ",".join(f"{c}=YOUR_COLUMN" for c in missing)
            hint = f"; map yours with --columns {mapping} (or -o columns={mapping})"
        raise TraceError(
            f"{source}: missing required column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)} (the file has: {found}){hint}",
            path=source,
            column=missing[0],
        )


def _ignored_columns(frame: pd.DataFrame, source: str) -> list[str]:
    known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS)
    if "duration" not in frame.columns or "start_time" in frame.columns:
        known |= set(TIME_COLUMNS)  # read to infer submit_time or duration
    ignored = [c for c in frame.columns if c not in known]
    if "epochs" in frame.columns:
        ignored.append("epochs")
        log.warning(
            "%s: column epochs is ignored: a trace job's work is its duration (seconds)", source
        )
    if ignored:
        log.info("%s: ignoring column(s) %s", source, ", ".join(ignored))
    return ignored


def _submit_time(r: _Rows) -> tuple[Values, bool]:
    submit, dated = numbers(r.check, r.frame["submit_time"], "submit_time", allow_dates=True)
    if not dated:
        submit = submit * r.time_unit_s
    at_least(r.check, submit, "submit_time", 0.0, "{v} is negative")
    return submit, dated


def _duration(r: _Rows) -> Values:
    if r.has("duration"):
        duration, _ = numbers(r.check, r.frame["duration"], "duration")
        duration = duration * r.duration_unit_s
    else:  # inferred from start and end times (numbers or dates alike)
        start, start_dated = numbers(r.check, r.frame["start_time"], "start_time", allow_dates=True)
        end, end_dated = numbers(r.check, r.frame["end_time"], "end_time", allow_dates=True)
        start = start if start_dated else start * r.time_unit_s
        duration = (end if end_dated else end * r.time_unit_s) - start
    at_least(r.check, duration, "duration", 0.0, "{v} is negative")
    with np.errstate(invalid="ignore"):
        r.check.flag(duration == 0, "duration", "is 0: a job must run for some time")
    at_most(
        r.check,
        duration,
        "duration",
        MAX_DURATION_S,
        "{v} s is more than 10 years (MAX_DURATION_S; are durations in seconds?)",
    )
    return duration


def _num_gpus(r: _Rows, cluster_gpus: int | None) -> Values:
    gpus, _ = numbers(r.check, r.frame["num_gpus"], "num_gpus")
    whole(r.check, gpus, "num_gpus")
    at_least(r.check, gpus, "num_gpus", 0.0, "{v} is negative")
    with np.errstate(invalid="ignore"):
        r.check.flag(gpus == 0, "num_gpus", "is 0: every trace job needs at least 1 GPU")
    at_most(
        r.check,
        gpus,
        "num_gpus",
        MAX_GPUS_PER_JOB,
        f"{{v}} GPUs is more than MAX_GPUS_PER_JOB ({MAX_GPUS_PER_JOB})",
    )
    if cluster_gpus is not None:
        at_most(
            r.check,
            gpus,
            "num_gpus",
            cluster_gpus,
            f"{{v}} GPUs is more than the cluster's {cluster_gpus}",
        )
    return gpus


def _text_ids(r: _Rows) -> pd.Series | None:
    """The ``job_id`` column as text when any of its cells is not a number, else None."""
    if not r.has("job_id"):
        return None
    raw = r.frame["job_id"]
    if not is_text(raw):
        return None
    text = as_text(raw)
    numeric = pd.to_numeric(text, errors="coerce").notna() | (text == "")
    return None if bool(numeric.all()) else text


def _job_id(r: _Rows, n: int, text_ids: pd.Series | None) -> Values:
    job_id = np.arange(n, dtype=np.float64)
    if text_ids is not None:
        r.check.flag((text_ids == "").to_numpy(), "job_id", "is empty")
        return job_id
    job_id = r.optional("job_id", job_id)
    if r.has("job_id"):
        whole(r.check, job_id, "job_id")
        at_least(r.check, job_id, "job_id", 0.0, "{v} is negative")
        at_most(r.check, job_id, "job_id", 2.0**62, "{v} is too large for a job id")
    return job_id


def _num_ps(r: _Rows, n: int) -> None:
    num_ps = r.optional("num_ps", np.zeros(n))
    if r.has("num_ps"):
        whole(r.check, num_ps, "num_ps")
        at_least(r.check, num_ps, "num_ps", 0.0, "{v} is negative")
        at_most(
            r.check,
            num_ps,
            "num_ps",
            0.0,
            "{v} parameter servers: PS jobs are not supported in traces (use the dl2 workload,"
            " or set num_ps to 0)",
        )


def _num_workers(r: _Rows, gpus: Values) -> None:
    num_workers = r.optional("num_workers", gpus)
    if r.has("num_workers"):
        whole(r.check, num_workers, "num_workers")
        with np.errstate(invalid="ignore"):
            differs = num_workers != gpus
        r.check.flag(
            differs & ~np.isnan(gpus),
            "num_workers",
            "{v} differs from num_gpus (trace jobs have one GPU per worker)",
            pd.Series(num_workers),
        )


def _min_replicas(r: _Rows, gpus: Values) -> Values:
    min_rep = r.optional("min_replicas", gpus)
    if r.has("min_replicas"):
        whole(r.check, min_rep, "min_replicas")
        at_least(r.check, min_rep, "min_replicas", 1.0, "{v} is less than 1")
        with np.errstate(invalid="ignore"):
            r.check.flag(
                min_rep > gpus, "min_replicas", "{v} is more than num_gpus", pd.Series(min_rep)
            )
    return min_rep


def _max_replicas(r: _Rows, gpus: Values) -> Values:
    max_rep = r.optional("max_replicas", gpus)
    if r.has("max_replicas"):
        whole(r.check, max_rep, "max_replicas")
        with np.errstate(invalid="ignore"):
            r.check.flag(
                max_rep < gpus, "max_replicas", "{v} is less than num_gpus", pd.Series(max_rep)
            )
        at_most(
            r.check,
            max_rep,
            "max_replicas",
            MAX_GPUS_PER_JOB,
            f"{{v}} is more than MAX_GPUS_PER_JOB ({MAX_GPUS_PER_JOB})",
        )
    return max_rep


def _cpu(r: _Rows, n: int) -> Values:
    server_cpu = CPU_PER_GPU * r.gpus_per_server
    cpu = r.optional("cpu", np.full(n, CPU_PER_GPU))
    if r.has("cpu"):
        at_least(r.check, cpu, "cpu", 0.0, "{v} is negative")
        at_most(
            r.check, cpu, "cpu", server_cpu, f"{{v}} cores is more than a server's {server_cpu:g}"
        )
    return cpu


def _mem_gb(r: _Rows, n: int) -> Values:
    server_mem = MEM_GB_PER_GPU * r.gpus_per_server
    mem = r.optional("mem_gb", np.full(n, MEM_GB_PER_GPU))
    if r.has("mem_gb"):
        at_least(r.check, mem, "mem_gb", 0.0, "{v} is negative")
        at_most(
            r.check, mem, "mem_gb", server_mem, f"{{v}} GB is more than a server's {server_mem:g}"
        )
    return mem


def _model(
    r: _Rows, n: int, seed: int, models: npt.NDArray[np.str_] | None
) -> tuple[npt.NDArray[np.str_], str]:
    if not r.has("model"):
        drawn = models if models is not None else draw_models(n, seed)
        return drawn, f"drawn from CATEGORY_MIX with seed {seed}"
    from dlsched.models import locality

    model_text = as_text(r.frame["model"])
    model = model_text.to_numpy(dtype=str)
    valid = sorted(locality.SENSITIVITY)
    r.check.flag(model == "", "model", "is empty")
    r.check.flag(
        ~np.isin(model, valid),
        "model",
        "{v} is not a known model (" + ", ".join(valid) + ")",
        model_text,
    )
    return model, "column"


def _span(r: _Rows, submit: Values, dated: bool) -> None:
    """Submissions at most `MAX_SPAN_S` after the first among otherwise good rows."""
    good = ~r.check.bad
    if not good.any():
        return
    first = float(submit[good].min())
    with np.errstate(invalid="ignore"):
        late = submit - first > MAX_SPAN_S
    r.check.flag(
        late,
        "submit_time",
        "{v} is more than 10 years after the first job (are times in seconds?)",
        seconds_shown(submit, dated),
    )


def _unique_ids(
    r: _Rows, ids_in_file: npt.NDArray[Any], rows: npt.NDArray[np.int64], n: int
) -> None:
    """Among rows otherwise good, a repeated id makes the later rows bad."""
    if not r.has("job_id"):
        return
    job_id = ids_in_file
    good_idx = np.flatnonzero(~r.check.bad)
    ids = pd.Series(job_id[good_idx])
    repeat = ids.duplicated(keep="first").to_numpy()
    if not repeat.any():
        return
    first_row = dict(
        zip(job_id[good_idx][::-1].tolist(), rows[good_idx][::-1].tolist(), strict=True)
    )
    dup = np.zeros(n, dtype=bool)
    dup[good_idx[repeat]] = True
    texts = np.full(n, "", dtype=object)
    for i in np.flatnonzero(dup).tolist():
        shown = f"{job_id[i]:g}" if isinstance(job_id[i], float) else repr(shorten(job_id[i]))
        texts[i] = f"{shown} repeats the job id of row {first_row[job_id[i]]}"
    r.check.flag(dup, "job_id", "{v}", pd.Series(texts), verbatim=True)


def _kept_rows(
    check: Checker, on_bad_row: str, source: str, n: int
) -> tuple[npt.NDArray[np.bool_], int, list[str]]:
    """(rows kept, rows skipped, reasons) once every cell is checked: the first bad row's error
    with ``on_bad_row="fail"``, else a warning naming the skipped rows; an error if none is
    left."""
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
            "; ".join(reasons[:SHOWN_REASONS]),
            " …" if skipped > SHOWN_REASONS else "",
        )
    return keep, skipped, reasons


def validate(
    frame: pd.DataFrame,
    *,
    source: str,
    rows: npt.NDArray[np.int64],
    on_bad_row: str,
    cluster_gpus: int | None,
    gpus_per_server: int,
    seed: int,
    models: npt.NDArray[np.str_] | None = None,
    time_unit_s: float = 1.0,
    duration_unit_s: float = 1.0,
    file_columns: list[str] | None = None,
) -> Table:
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
        time_unit_s: seconds per unit of the numeric time columns (dates are dates).
        duration_unit_s: seconds per unit of the ``duration`` column.
        file_columns: the file's own column names, for messages (default ``frame``'s).
    """
    _require_columns(frame, source, file_columns)
    n = len(frame)
    r = _Rows(frame, Checker(source, rows), gpus_per_server, time_unit_s, duration_unit_s)
    ignored = _ignored_columns(frame, source)

    submit, dated = _submit_time(r)
    duration = _duration(r)
    gpus = _num_gpus(r, cluster_gpus)
    text_ids = _text_ids(r)
    job_id = _job_id(r, n, text_ids)
    _num_ps(r, n)
    _num_workers(r, gpus)
    priority = r.optional("priority", np.zeros(n))
    min_rep = _min_replicas(r, gpus)
    max_rep = _max_replicas(r, gpus)
    cpu = _cpu(r, n)
    mem = _mem_gb(r, n)
    model, models_from = _model(r, n, seed, models)
    _span(r, submit, dated)
    ids_in_file = job_id if text_ids is None else text_ids.to_numpy(dtype=object)
    _unique_ids(r, ids_in_file, rows, n)

    keep, skipped, reasons = _kept_rows(r.check, on_bad_row, source, n)
    idx = np.flatnonzero(keep)
    order = idx[np.lexsort((job_id[idx], submit[idx]))]
    return Table(
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
        trace_ids=None if text_ids is None else text_ids.to_numpy(dtype=str)[order],
        users=as_text(frame["user"]).to_numpy(dtype=str)[order] if r.has("user") else None,
    )
