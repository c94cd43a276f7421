"""The ``--out`` folder of ``dlsched live run``, written as things happen so that a killed run
loses nothing it reported: ``scaling_events.csv`` and ``jobs.csv`` get a row per event and per
ended job (appended, flushed and fsynced), ``summary.json`` is replaced (atomically) whenever a
job ends, ``run.json`` holds the run's settings for ``live run --resume``, and ``work/`` the
jobs' state and snapshots until the run is complete.
"""

from __future__ import annotations

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


def last_time_s(out_dir: Path) -> float:
    """Seconds into the run of the last event a killed run recorded (0 if none)."""
    path = out_dir / "scaling_events.csv"
    if not path.exists():
        return 0.0
    with path.open(newline="") as fh:
        times = []
        for row in csv.DictReader(fh):
            try:
                times.append(float(row["t_s"]))
            except (KeyError, TypeError, ValueError):
                continue
    return max(times, default=0.0)
