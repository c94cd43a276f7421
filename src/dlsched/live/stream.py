"""A stream of real training jobs for the live scheduling loop, as `JobSpec` + `JobConfig` pairs.

CPU cores of this machine stand in for GPUs: a worker takes one "GPU" (a core) and one CPU slot,
a parameter server one CPU slot, so a machine given ``cores`` C offers C workers and up to 2C
processes in all (`live_server`). ``total_work`` is in epochs, as for the simulator's PS jobs:
``total_steps · total_batch / dataset_size``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlsched.core import Arch, JobSpec, Resources
from dlsched.live.config import JobConfig

WORKER_DEMAND = Resources(gpu=1.0, cpu=1.0, mem=1.0)
"""One worker: a core standing in for a GPU, one CPU slot, 1 GB (nominal)."""
PS_DEMAND = Resources(cpu=1.0, mem=1.0)
"""One parameter server: one CPU slot, 1 GB (nominal)."""
LIVE_MODELS = ("mlp", "cnn", "smooth")
"""Models a live stream draws from (small ones: they train on a laptop-class CPU)."""
MAX_PS = 4
"""Most PS a live job can use."""
SNAPSHOT_EVERY = 20
"""Default steps between two snapshots of a live job."""
HEARTBEAT_TIMEOUT_S = 3.0
"""Default silence after which a member of a live job is declared dead, seconds."""


def live_server(cores: int) -> Resources:
    """Capacity of this machine when it offers ``cores`` cores as GPUs (2 CPU slots a core)."""
    if cores < 1:
        raise ValueError(f"cores must be >= 1, got {cores}")
    return Resources(gpu=float(cores), cpu=2.0 * cores, mem=2.0 * cores)


def epochs_per_step(config: JobConfig) -> float:
    """Epochs one synchronous step covers (the unit conversion of `JobSpec.total_work`)."""
    return config.total_batch / config.dataset_size


@dataclass(frozen=True, slots=True)
class LiveJobRequest:
    """One job of the stream: what the scheduler sees (``spec``) and how it trains (``config``)."""

    spec: JobSpec
    config: JobConfig


def make_stream(
    num_jobs: int,
    *,
    seed: int = 0,
    cores: int = 2,
    steps: int = 300,
    arrival_gap_s: float = 2.0,
    total_batch: int = 32,
    step_sleep_s: float = 0.0,
    models: tuple[str, ...] = LIVE_MODELS,
    snapshot_every: int = SNAPSHOT_EVERY,
    heartbeat_timeout_s: float = HEARTBEAT_TIMEOUT_S,
) -> list[LiveJobRequest]:
    """``num_jobs`` jobs with exponential inter-arrival times (the first at 0 s).

    Args:
        num_jobs: jobs in the stream.
        seed: seeds ``numpy.random.default_rng`` (models, lengths, requests, arrivals).
        cores: cores offered as GPUs; caps each job's workers and PS.
        steps: mean synchronous steps of a job (each draws uniformly in [0.5, 1.5] × steps).
        arrival_gap_s: mean seconds between arrivals.
        total_batch: samples per step of every job.
        step_sleep_s: extra seconds each worker sleeps per step (slows jobs without using CPU).
        models: model names to draw from (`dlsched.live.models.MODELS`).
        snapshot_every: each job snapshots its parameters every this many steps (what a job
            whose last PS or worker died, or a killed run, redoes at most).
        heartbeat_timeout_s: silence after which a member is declared dead, seconds (at
            least: the coordinator stretches it when heartbeats come late on a loaded box).

    Raises:
        ValueError: on a non-positive count, size, length or gap.
    """
    if num_jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {num_jobs}")
    if steps < 1:
        raise ValueError(f"--steps must be >= 1, got {steps}")
    if arrival_gap_s < 0:
        raise ValueError(f"--arrival-gap must be >= 0, got {arrival_gap_s}")
    if snapshot_every < 0:
        raise ValueError(f"--snapshot-every must be >= 0, got {snapshot_every}")
    if not heartbeat_timeout_s > 0.2:
        raise ValueError(f"--heartbeat-timeout must be > 0.2 s, got {heartbeat_timeout_s}")
    live_server(cores)
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(arrival_gap_s, num_jobs) if arrival_gap_s > 0 else np.zeros(num_jobs)
    gaps[0] = 0.0
    arrivals = np.cumsum(gaps)
    max_workers = max(1, min(cores, total_batch))
    out: list[LiveJobRequest] = []
    for j in range(num_jobs):
        model = models[int(rng.integers(len(models)))]
        total_steps = max(1, round(steps * float(rng.uniform(0.5, 1.5))))
        want = int(rng.integers(1, max_workers + 1))
        config = JobConfig(
            model=model,
            total_batch=total_batch,
            seed=seed * 1000 + j,
            total_steps=total_steps,
            snapshot_every=snapshot_every,
            heartbeat_timeout_s=heartbeat_timeout_s,
            step_sleep_s=step_sleep_s,
        )
        spec = JobSpec(
            job_id=j,
            submit_time_s=float(arrivals[j]),
            model=model,
            arch=Arch.PS,
            total_work=total_steps * epochs_per_step(config),
            worker_demand=WORKER_DEMAND,
            ps_demand=PS_DEMAND,
            num_workers=want,
            num_ps=1,
            min_workers=1,
            max_workers=max_workers,
            max_ps=max(1, min(MAX_PS, cores)),
        )
        out.append(LiveJobRequest(spec, config))
    return out
