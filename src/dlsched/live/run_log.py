"""The ``--out`` folder of ``dlsched live run``, written as things happen so that a killed run
loses nothing it reported: ``scaling_events.csv`` and ``jobs.csv`` get a row per event and per
ended job (appended, flushed and fsynced), ``summary.json`` is replaced (atomically) whenever a
job ends, ``run.json`` holds the run's settings for ``live run --resume``, and ``work/`` the
jobs' state and snapshots until the run is complete.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from dlsched.csv_rows import CsvLog
from dlsched.live.snapshot import ScalingEvent
from dlsched.sim.jobs_table import JOB_COLUMNS

LIVE_JOB_COLUMNS = (*JOB_COLUMNS, "status", "error", "steps_redone")
"""``jobs.csv`` of a live run: the simulator's columns, then ``status`` (``finished`` or
``failed``), the ``error`` of a failed job, and the steps it redid after faults."""
EVENT_COLUMNS = tuple(ScalingEvent.__dataclass_fields__)
RUN_FILE = "run.json"
WORK_DIR = "work"
PROGRESS_FILE = "progress.json"
"""In the work folder: seconds into the run of the last decision, and each job's steps then."""


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Replace ``path`` by ``data`` as JSON in one step, fsynced."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as fh:
        fh.write(json.dumps(data, indent=2) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class RunLog:
    """The files of one live run's ``--out`` folder (see the module docstring).

    Args:
        out_dir: the folder (created).
        resume: continue the files of a killed run (their columns must match).
    """

    def __init__(self, out_dir: Path, *, resume: bool = False) -> None:
        self.out_dir = out_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        self.jobs = CsvLog(out_dir / "jobs.csv", LIVE_JOB_COLUMNS, append=resume, sync=True)
        self.events = CsvLog(
            out_dir / "scaling_events.csv", EVENT_COLUMNS, append=resume, sync=True
        )

    @property
    def work_dir(self) -> Path:
        """Where the jobs' state and snapshots live until the run is complete."""
        return (self.out_dir / WORK_DIR).resolve()

    def event(self, event: ScalingEvent) -> None:
        self.events.write(asdict(event))

    def job(self, row: dict[str, Any]) -> None:
        self.jobs.write(row)

    def summary(self, summary: dict[str, Any]) -> None:
        write_json_atomic(self.out_dir / "summary.json", summary)

    def close(self) -> None:
        self.jobs.close()
        self.events.close()


def save_settings(out_dir: Path, settings: dict[str, Any]) -> None:
    """Write the run's settings (``run.json``) for ``live run --resume``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out_dir / RUN_FILE, settings)


def load_settings(out_dir: Path) -> dict[str, Any]:
    """The settings of the run in ``out_dir``.

    Raises:
        ValueError: naming the file, if it is missing or not a JSON object.
    """
    path = out_dir / RUN_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"--resume: {path} is not the settings of a live run ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"--resume: {path} is not a JSON object")
    return data


def ended_jobs(out_dir: Path) -> dict[int, dict[str, str]]:
    """Rows of ``jobs.csv`` by job id: the jobs a killed run had ended (finished or failed)."""
    path = out_dir / "jobs.csv"
    if not path.exists():
        return {}
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    out: dict[int, dict[str, str]] = {}
    for row in rows:
        try:
            out[int(row["job_id"])] = row
        except (KeyError, TypeError, ValueError):
            continue  # a row cut by the kill: the job runs again
    return out


def resumed_at(out_dir: Path) -> float:
    """Seconds into a killed run where ``--resume`` goes on: its last recorded event, ended job
    or decision, whichever is latest (0 if none)."""
    times = [0.0]
    for name in ("scaling_events.csv", "jobs.csv"):
        path = out_dir / name
        if path.exists():
            with path.open(newline="") as fh:
                for row in csv.DictReader(fh):
                    for key in ("t_s", "finish_s"):
                        try:
                            times.append(float(row.get(key) or "nan"))
                        except (TypeError, ValueError):
                            continue
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        times.append(float(json.loads((out_dir / WORK_DIR / PROGRESS_FILE).read_text())["t_s"]))
    return max(t for t in times if t == t)  # NaN (an empty cell) never equals itself


def read_progress(workdir: Path) -> dict[int, int]:
    """Steps each job had done at the last decision of a killed run (empty if unknown)."""
    try:
        data = json.loads((workdir / PROGRESS_FILE).read_text())
        return {int(k): int(v) for k, v in data["steps"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def first_starts(out_dir: Path) -> dict[int, float]:
    """When each job first started in a killed run (its first ``start`` event), seconds."""
    path = out_dir / "scaling_events.csv"
    out: dict[int, float] = {}
    if not path.exists():
        return out
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            try:
                if row["action"] == "start":
                    job, t = int(row["job_id"]), float(row["t_s"])
                    out[job] = min(t, out.get(job, t))
            except (KeyError, TypeError, ValueError):
                continue
    return out
