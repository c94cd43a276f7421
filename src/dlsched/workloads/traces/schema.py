"""Trace schema: the columns, their bounds, the error type and the summary/table records."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

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
    "status",
    "user",
)
"""Columns a generic trace may have (see the module docstring for their rules)."""

MAX_DURATION_S = 10 * 365 * 86_400.0
"""Longest job accepted: 10 years of 365 days, in seconds (anything longer is a unit mistake)."""

MAX_SPAN_S = MAX_DURATION_S
"""Latest submission accepted after the trace's first one: 10 years, in seconds."""

MAX_GPUS_PER_JOB = 4096
"""Most GPUs (and max replicas) one job may ask for, whatever the cluster."""

MAX_SIZED_SERVERS = 4096
"""Most servers a cluster sized to a trace may have (32,768 GPUs at 8 per server, about five
times the largest public GPU traces); a trace needing more is refused: pass ``servers``."""

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

CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst")
PARQUET_SUFFIXES = (".parquet", ".pq")
NAN_WORDS = frozenset({"nan", "-nan", "+nan", "na", "n/a", "null", "none", "#n/a"})
SHOWN_REASONS = 5


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
        mapped_columns: schema column → the file's column read for it (aliases, ``columns=``).
        inferred_columns: columns computed from others, e.g. ``duration = end_time - start_time``.
        string_job_ids: whether the trace's job ids are text (kept in ``params["trace_ids"]``).
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
    mapped_columns: dict[str, str] = field(default_factory=dict)
    inferred_columns: list[str] = field(default_factory=list)
    string_job_ids: bool = False
    status_counts: dict[str, int] = field(default_factory=dict)
    """Rows per value of the trace's status column (lower case), when it has one."""
    dropped_by_status: int = 0
    """Rows left out by ``drop_status``."""


# --------------------------------------------------------------------------------------------
# Validation


@dataclass
class Table:
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
    trace_ids: npt.NDArray[np.str_] | None = None
    """The trace's own job ids when they are not numbers (``job_id`` is then the data row)."""
    users: npt.NDArray[np.str_] | None = None
    """Who submitted each job (the ``user`` column; empty: unknown), when the trace says."""
    mapped: dict[str, str] = field(default_factory=dict)
    """Schema column → the file's column it was read from, where the names differ."""
    inferred: list[str] = field(default_factory=list)
    """Columns computed from others (e.g. ``duration = end_time - start_time``)."""
    status_counts: dict[str, int] = field(default_factory=dict)
    """Rows per status (lower case) before ``drop_status``, when the trace has a status column."""
    dropped_by_status: int = 0
    """Rows left out by ``drop_status``."""
