"""The packaged Microsoft Philly trace (``data/philly_jobs.csv.gz``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from dlsched.workloads.base import Workload
from dlsched.workloads.traces.building import build_workload, check_options, draw_models
from dlsched.workloads.traces.philly_columns import PhillyColumns, philly_columns, philly_rows
from dlsched.workloads.traces.schema import PHILLY_FILE, PHILLY_JOBS, Table, TraceError

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


def philly_table(
    vc: str | None,
    start: str | None,
    end: str | None,
    max_jobs: int | None,
    servers: int | None,
    gpus_per_server: int,
    seed: int,
) -> Table:
    columns = philly_columns()
    n = len(columns.submit_s)
    if n != PHILLY_JOBS:
        log.warning("%s has %d jobs, expected %d", PHILLY_FILE, n, PHILLY_JOBS)
    models = draw_models(n, seed)
    rows = np.arange(2, n + 2, dtype=np.int64)
    keep = np.ones(n, dtype=bool)
    if vc is not None:
        keep &= columns.cluster == vc
        if not keep.any():
            clusters = np.unique(columns.cluster).tolist()
            raise TraceError(
                f"{PHILLY_FILE}: unknown virtual cluster {vc!r}; choose one of "
                + ", ".join(clusters),
                path=PHILLY_FILE,
                column="cluster",
            )
    lo = _when(start, "start")
    hi = _when(end, "end")
    if lo is not None and hi is not None and lo >= hi:
        raise ValueError(f"start {start} is not before end {end}")
    submit_ns = columns.submit_s * 10**9  # compared with the bounds to the nanosecond
    if lo is not None:
        keep &= submit_ns >= lo.value
    if hi is not None:
        keep &= submit_ns < hi.value
    if not keep.any():
        where = f" of virtual cluster {vc}" if vc else ""
        raise TraceError(
            f"{PHILLY_FILE}: no jobs{where} between {start or 'the start'} and {end or 'the end'}",
            path=PHILLY_FILE,
        )
    cluster_gpus = None if servers is None else servers * gpus_per_server
    table = philly_rows(columns, keep, rows, models, cluster_gpus, seed)
    if table is None:  # a row breaks a rule: `validate` says which
        table = _validated(columns, keep, rows, models, cluster_gpus, gpus_per_server, seed)
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


def _validated(
    columns: PhillyColumns,
    keep: npt.NDArray[np.bool_],
    rows: npt.NDArray[np.int64],
    models: npt.NDArray[np.str_],
    cluster_gpus: int | None,
    gpus_per_server: int,
    seed: int,
) -> Table:
    """The kept rows through the generic trace checks (`validate`, with pandas), which raise
    the first bad row's error."""
    import pandas as pd

    from dlsched.workloads.traces.validation import validate

    chosen = pd.DataFrame(
        {
            "duration": columns.duration_s[keep],
            "num_gpus": columns.num_gpus[keep],
            "submit_time": pd.to_datetime(columns.submit_s[keep], unit="s", utc=True),
        }
    )
    return validate(
        chosen,
        source=PHILLY_FILE,
        rows=rows[keep],
        on_bad_row="fail",
        cluster_gpus=cluster_gpus,
        gpus_per_server=gpus_per_server,
        seed=seed,
        models=models[keep],
    )


def _when(text: str | None, what: str) -> pd.Timestamp | None:
    """Parse an ISO-8601 date/time (UTC unless it says otherwise); None stays None."""
    if text is None:
        return None
    import pandas as pd

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
    check_options(servers, 8, load)
    table = philly_table(vc, start, end, max_jobs, servers, 8, seed)
    return build_workload(
        table,
        name="philly" if vc is None else f"philly:{vc}",
        servers=servers,
        gpus_per_server=8,
        seed=seed,
        load=load,
        extra={"vc": vc, "start": start, "end": end, "max_jobs": max_jobs},
    )
