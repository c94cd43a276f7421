"""The packaged Philly trace read without pandas: its columns, and its checked `Table`.

Reading ``data/philly_jobs.csv.gz`` with pandas cost about 0.3 s of a CLI run's start-up
(importing pandas and pyarrow), more than the FIFO simulation of a virtual cluster (issue 34).
The file is fixed and plain (``timestamp,duration,num_gpus,gpu_time,cluster``, no quoting), so
the standard library and NumPy read it to the same numbers (``tests/workloads/
test_philly_columns.py`` compares every column with pandas' reading). `philly_rows` gives the
same `Table` as `dlsched.workloads.traces.validation.validate` for rows it finds all good;
otherwise it returns None and the caller runs `validate`, which words the error.

The columns read are kept in a compact ``.npz`` in the user's cache folder (`cache_dir`), named
after the SHA-256 of the packaged file, and loaded from there by later processes (NumPy arrays
only: ``allow_pickle=False``, nothing in it can run code); a cache that cannot be read or
written is ignored.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from dlsched.workloads.traces.schema import (
    CPU_PER_GPU,
    MAX_DURATION_S,
    MAX_GPUS_PER_JOB,
    MAX_SPAN_S,
    MEM_GB_PER_GPU,
    PHILLY_FILE,
    Table,
    TraceError,
)

log = logging.getLogger(__name__)

HEADER = "timestamp,duration,num_gpus,gpu_time,cluster"
"""The packaged file's first line."""

CACHE_FORMAT = 1
"""Version of the cached columns' layout (part of the cache file's name)."""


@dataclass(frozen=True)
class PhillyColumns:
    """The packaged trace's columns, one entry per data row (file order)."""

    submit_s: npt.NDArray[np.int64]
    """Submission time: whole seconds since 1970-01-01 UTC."""
    duration_s: npt.NDArray[np.float64]
    num_gpus: npt.NDArray[np.int64]
    cluster: npt.NDArray[np.str_]
    """Virtual cluster id of each job."""


def cache_dir() -> Path | None:
    """Where dlsched keeps files it can rebuild: ``$DLSCHED_CACHE_DIR`` (empty: no cache), else
    ``$XDG_CACHE_HOME/dlsched``, else ``~/.cache/dlsched``."""
    chosen = os.environ.get("DLSCHED_CACHE_DIR")
    if chosen is not None:
        return Path(chosen) if chosen else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dlsched"


@functools.cache
def philly_columns() -> PhillyColumns:
    """The packaged trace's columns (once per process; the arrays are read-only): from the
    cache when it holds this file's, else read from the file and cached."""
    packed = (resources.files("dlsched") / "data" / PHILLY_FILE).read_bytes()
    folder = cache_dir()
    name = f"philly-{hashlib.sha256(packed).hexdigest()[:20]}-v{CACHE_FORMAT}.npz"
    columns = _load(folder / name) if folder is not None else None
    if columns is None:
        columns = _parse(packed)
        if folder is not None:
            _save(folder / name, columns)
    for array in (columns.submit_s, columns.duration_s, columns.num_gpus, columns.cluster):
        array.flags.writeable = False
    return columns


def _parse(packed: bytes) -> PhillyColumns:
    """The columns of the gzip-compressed CSV ``packed``."""
    import gzip  # a first run's only (then the cache is read)

    header, _, body = gzip.decompress(packed).decode("ascii").partition("\n")
    lines = [line for line in body.splitlines() if line]  # blank lines are not rows (pandas)
    cells = ",".join(lines).split(",")
    if header.strip() != HEADER or len(cells) != 5 * len(lines):
        raise TraceError(f"{PHILLY_FILE}: not the packaged Philly layout ({HEADER})")
    return PhillyColumns(
        submit_s=np.array(cells[0::5], dtype="datetime64[s]").astype(np.int64),
        duration_s=np.array(cells[1::5], dtype=np.float64),
        num_gpus=np.array(cells[2::5], dtype=np.int64),
        cluster=np.array(cells[4::5], dtype=str),
    )


def _load(path: Path) -> PhillyColumns | None:
    """The cached columns at ``path``, or None when it is missing or not as written."""
    try:
        with np.load(path, allow_pickle=False) as saved:
            columns = PhillyColumns(
                submit_s=saved["submit_s"],
                duration_s=saved["duration_s"],
                num_gpus=saved["num_gpus"],
                cluster=saved["cluster"],
            )
    except (OSError, ValueError, KeyError) as error:
        if path.exists():
            log.debug("ignoring the cached Philly columns %s: %s", path, error)
        return None
    kinds = (columns.submit_s.dtype, columns.duration_s.dtype, columns.num_gpus.dtype)
    lengths = {len(columns.submit_s), len(columns.duration_s), len(columns.num_gpus)}
    if kinds != (np.int64, np.float64, np.int64) or columns.cluster.dtype.kind != "U":
        return None
    return columns if lengths == {len(columns.cluster)} else None


def _save(path: Path, columns: PhillyColumns) -> None:
    """Write ``columns`` to ``path`` atomically (a partial file is never seen); failures are
    logged at debug level and otherwise ignored."""
    import tempfile  # a first run's only

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as out:
            np.savez(
                out,
                submit_s=columns.submit_s,
                duration_s=columns.duration_s,
                num_gpus=columns.num_gpus,
                cluster=columns.cluster,
            )
        os.replace(out.name, path)
    except OSError as error:
        log.debug("could not cache the Philly columns in %s: %s", path, error)


def philly_rows(
    columns: PhillyColumns,
    keep: npt.NDArray[np.bool_],
    rows: npt.NDArray[np.int64],
    models: npt.NDArray[np.str_],
    cluster_gpus: int | None,
    seed: int,
) -> Table | None:
    """The kept rows as `validate` returns them (sorted by submission, then row), or None when
    any of `validate`'s rules would flag one of them.

    Args:
        columns: the packaged trace (`philly_columns`).
        keep: the rows selected (virtual cluster, dates).
        rows: each data row's line number in the file.
        models: each data row's drawn model.
        cluster_gpus: GPUs of a fixed-size cluster (no job may ask for more), else None.
        seed: the seed ``models`` were drawn with.
    """
    submit = columns.submit_s[keep].astype(np.float64)
    duration = columns.duration_s[keep]
    gpus = columns.num_gpus[keep].astype(np.float64)
    n = len(submit)
    most_gpus = MAX_GPUS_PER_JOB if cluster_gpus is None else min(MAX_GPUS_PER_JOB, cluster_gpus)
    with np.errstate(invalid="ignore"):
        good = (
            (submit >= 0)
            & (duration > 0)
            & (duration <= MAX_DURATION_S)
            & (gpus > 0)
            & (gpus <= most_gpus)
        )
    if n == 0 or not good.all() or float(submit.max() - submit.min()) > MAX_SPAN_S:
        return None
    job_id = np.arange(n, dtype=np.float64)
    order = np.lexsort((job_id, submit))
    return Table(
        source=PHILLY_FILE,
        rows=rows[keep][order],
        submit_s=submit[order],
        dated=True,
        duration_s=duration[order],
        num_gpus=gpus[order].astype(np.int64),
        job_id=job_id[order].astype(np.int64),
        model=np.asarray(models[keep])[order],
        priority=np.zeros(n)[order],
        min_replicas=gpus[order].astype(np.int64),
        max_replicas=gpus[order].astype(np.int64),
        cpu=np.full(n, CPU_PER_GPU)[order],
        mem_gb=np.full(n, MEM_GB_PER_GPU)[order],
        models_from=f"drawn from CATEGORY_MIX with seed {seed}",
        skipped=0,
        reasons=[],
        blank_rows=0,
        ignored_columns=[],
    )
