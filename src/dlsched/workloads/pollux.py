"""Pollux's simulator study (OSDI'21 §5.3): 160 jobs over 8 hours on 16 nodes × 4 GPUs.

Jobs come from the artifact's ``workload-N.csv`` (N = 1..8; ``data/pollux/workloads``): submission
time, application (cifar10, bert, deepspeech2, imagenet, ncf, yolov3), and the GPUs and total
batch size a user would have tuned (``num_replicas``, ``batch_size``). Speeds are goodput
(`dlsched.models.goodput.PolluxGoodput`), work is progress in initial-batch steps.

``jobs`` picks what the scheduler manages:

* ``"adaptive"`` (Pollux): the batch size is re-chosen for every allocation; a job may hold 1 to
  its cap GPUs (the artifact's Pollux cap: twice the largest replica count it has run on, at most
  64 and ``max_bsz / min_local_bsz``; we use the static part, ``min(64, max_bsz // min_local)``;
  ncf is fixed at one GPU and batch 32,768 as in the artifact); it asks for one GPU.
* ``"tuned"`` (Tiresias+TunedJobs, Optimus+TunedJobs): the batch size is fixed to the trace's;
  the job asks for the trace's GPUs and may hold 1 to ``batch_size // min_local_bsz`` (the
  artifact's Optimus cap; ncf: 1).
* ``"tuned-batch"`` (Optimus+TunedJobs): as ``tuned`` but asking for one GPU — the artifact's
  Optimus jobs carry the tuned batch size only and Optimus sizes them from one replica up.

Settings as the artifact's simulator: scheduling rounds every 60 s only (arrivals wait for the
next round, freed GPUs are reassigned at the next round), 30 s lost at every restart or resume,
no interference noise, placement on the nodes with the most free GPUs first.

``load`` ≠ 1 makes the relative-job-load variants (the artifact's ``workloads-0.5/1.5/2.0``,
whose generator needs its Philly sample): ``round(160·load)`` jobs drawn with replacement from
workload N's jobs (seeded), each keeping its application, replicas and batch size, at a
submission time drawn uniformly over the same 8 hours.
"""

from __future__ import annotations

import csv
import logging
from pathlib import Path

import numpy as np

from dlsched.core import Arch, JobSpec, Resources
from dlsched.models.goodput import DATA_DIR, GPUS_PER_NODE, PolluxGoodput, profile
from dlsched.sim.config import RescaleCost
from dlsched.workloads.base import Workload

log = logging.getLogger(__name__)

NODE = Resources(gpu=float(GPUS_PER_NODE), cpu=32.0, mem=256.0)
"""One node: 4 GPUs; CPU and memory never bind (8 cores, 64 GB per GPU)."""
TASK = Resources(gpu=1.0, cpu=8.0, mem=64.0)
DEFAULT_NODES = 16
INTERVAL_S = 60.0
RESTART_S = 30.0
TRACE_SPAN_S = 8 * 3600.0
JOB_MODES = ("adaptive", "tuned", "tuned-batch")
RESCALE = RescaleCost(mode="restart", hot_s=RESTART_S, restart_s=RESTART_S)
"""The Pollux workloads' `Workload.rescale`: every reallocation restarts the job (30 s)."""


def read_trace(number: int, root: Path = DATA_DIR / "workloads") -> list[dict[str, str]]:
    """Rows of ``workload-NUMBER.csv`` (name, time, application, num_replicas, batch_size)."""
    if number not in range(1, 9):
        raise ValueError(f"pollux workload must be 1..8, got {number}")
    with (root / f"workload-{number}.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def _resample(rows: list[dict[str, str]], load: float, seed: int) -> list[dict[str, str]]:
    rng = np.random.default_rng(seed)
    n = max(1, round(len(rows) * load))
    picks = rng.integers(0, len(rows), size=n)
    times = np.sort(rng.uniform(0.0, TRACE_SPAN_S, size=n))
    return [{**rows[int(p)], "time": str(int(t))} for p, t in zip(picks, times, strict=True)]


def job_spec(job_id: int, row: dict[str, str], jobs: str) -> JobSpec:
    """One trace row as a job under ``jobs`` (``adaptive`` or ``tuned``)."""
    app = row["application"]
    prof = profile(app)
    replicas, batch = int(row["num_replicas"]), int(row["batch_size"])
    if jobs == "adaptive":
        model = app
        cap = 1 if app == "ncf" else min(64, prof.max_bsz // prof.min_local_bsz)
        asked = 1
    else:
        model = f"{app}@{batch}"
        cap = 1 if app == "ncf" else max(batch // prof.min_local_bsz, replicas)
        asked = replicas if jobs == "tuned" else 1
    return JobSpec(
        job_id=job_id,
        submit_time_s=float(row["time"]),
        model=model,
        arch=Arch.ALLREDUCE,
        total_work=prof.total_progress,
        worker_demand=TASK,
        num_workers=min(asked, cap),
        min_workers=1,
        max_workers=cap,
    )


def make_pollux(
    *,
    seed: int = 0,
    servers: int | None = None,
    load: float | None = None,
    number: int = 6,
    jobs: str = "adaptive",
    num_jobs: int | None = None,
) -> Workload:
    """Build Pollux workload ``number`` (1..8) with ``jobs`` managed as ``adaptive``/``tuned``.

    Args:
        seed: seeds the load variants' resampling (unused at ``load`` 1).
        servers: 4-GPU nodes; None → 16.
        load: relative job load (1 → the trace as is; 0.5, 1.5, 2 → resampled variants).
        number: which of the artifact's 8 traces (``-o number=6`` on the CLI).
        jobs: ``adaptive`` (Pollux's jobs), ``tuned`` (fixed batch and GPUs asked) or
            ``tuned-batch`` (fixed batch, one GPU asked).
        num_jobs: keep only the first this many jobs (None: all).

    Raises:
        ValueError: a bad ``number``, ``jobs``, ``servers`` or ``load``.
    """
    if jobs not in JOB_MODES:
        raise ValueError(f"pollux jobs must be one of {JOB_MODES}, got {jobs!r}")
    servers = DEFAULT_NODES if servers is None else servers
    if servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    load = 1.0 if load is None else load
    if not load > 0:
        raise ValueError(f"load must be > 0, got {load}")
    rows = read_trace(int(number))
    if load != 1.0:
        rows = _resample(rows, load, seed)
    if num_jobs is not None:
        if num_jobs < 1:
            raise ValueError(f"num_jobs must be >= 1, got {num_jobs}")
        rows = sorted(rows, key=lambda r: float(r["time"]))[:num_jobs]
    specs = [job_spec(i, row, jobs) for i, row in enumerate(rows)]
    specs.sort(key=lambda s: (s.submit_time_s, s.job_id))
    cap = servers * GPUS_PER_NODE
    specs = [
        s
        if s.max_workers <= cap
        else JobSpec(
            s.job_id,
            s.submit_time_s,
            s.model,
            s.arch,
            s.total_work,
            s.worker_demand,
            num_workers=min(s.num_workers, cap),
            min_workers=1,
            max_workers=cap,
        )
        for s in specs
    ]
    log.debug("pollux workload-%d (%s, load %.2f): %d jobs", number, jobs, load, len(specs))
    return Workload(
        name=f"pollux-{number}" + ("" if jobs == "adaptive" else f"-{jobs}"),
        jobs=tuple(specs),
        servers=(NODE,) * servers,
        model=PolluxGoodput(),
        interval_s=INTERVAL_S,
        on_events=False,
        placement="load_balance",
        noise=0.0,
        rescale=RESCALE,
        params={
            "seed": seed,
            "servers": servers,
            "load": load,
            "workload": number,
            "jobs": jobs,
            "num_jobs": len(specs),
            "restart_s": RESTART_S,
        },
    )
