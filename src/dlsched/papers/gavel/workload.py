"""The ``gavel`` workload: jobs drawn as Gavel's simulator draws them, on a heterogeneous cluster.

Gavel (Narayanan et al., OSDI 2020, §7) generates a continuous stream of jobs:

* **arrivals**: a Poisson process, ``jobs_per_hour`` on average (exponential gaps); the first
  job arrives at 0 s;
* **size** (with ``multi_gpu``): 1 GPU with probability 0.7, 2 with 0.1, 4 with 0.15 and 8 with
  0.05 (its Philly-derived distribution); a job on more than one GPU is drawn among the job types
  Gavel runs distributed; without ``multi_gpu`` every job has 1 GPU;
* **duration** on a V100: ``60 * 10**u`` seconds with ``u`` uniform in [3, 4] with probability
  0.2, else in [1.5, 3] (about 32 minutes to 17 hours, and 17 hours to a week);
* **type**: uniform over Gavel's 26 job types (`dlsched.models.gavel_table.JOB_TYPES`);
* **work**: the duration times the job's measured V100 throughput, in steps.

A job's speed is its measured steps/s on its GPU type (`TypedSpeed`: the slowest type among its
servers when it spans types), at its fixed size. With ``speed_spread`` > 0 each job's true rates
deviate from its type's profile by a log-normal factor per job and GPU type (relative std about
``speed_spread``), while schedulers still see the profile (`ClusterView.type_speeds`): estimates,
not truth. Gavel's own setting is 0 (the profile is exact).

The draws use NumPy's generator, not Gavel's Python ``random``: the distributions are Gavel's,
the job sequences are not the same for a seed (`benchmarks/gavel_side_by_side.py` feeds both
simulators one job list).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dlsched.core import Arch, JobSpec, Resources
from dlsched.core.gpu_types import ClusterSpec
from dlsched.models.fixed import FixedDuration
from dlsched.models.gavel_table import JOB_TYPES, rates_of
from dlsched.models.typed import TypedSpeed, spread_rates
from dlsched.sim.config import RescaleCost
from dlsched.workloads.base import Workload

DEFAULT_CLUSTER = "v100:9x4,p100:9x4,k80:9x4"
"""36 GPUs of each type, as Gavel's ``36:36:36`` evaluation cluster, in servers of 4 GPUs."""
ROUND_S = 360.0
"""Gavel's round length (``time_per_iteration``), seconds."""
CPU_PER_GPU = 4.0
MEM_GB_PER_GPU = 16.0
REFERENCE_TYPE = "v100"
"""The GPU type job durations are drawn for (Gavel's ``reference_worker_type``)."""


def draw_scale_factor(rng: np.random.Generator) -> int:
    """1, 2, 4 or 8 GPUs with probabilities 0.7, 0.1, 0.15, 0.05 (Gavel's Philly distribution)."""
    r = rng.uniform(0.0, 1.0)
    if r < 0.7:
        return 1
    if r <= 0.8:
        return 2
    if r <= 0.95:
        return 4
    return 8


def draw_duration_s(rng: np.random.Generator) -> float:
    """Seconds on a V100: ``60 * 10**U(3, 4)`` with probability 0.2, else ``60 * 10**U(1.5, 3)``."""
    if rng.random() >= 0.8:
        return 60.0 * 10 ** rng.uniform(3.0, 4.0)
    return 60.0 * 10 ** rng.uniform(1.5, 3.0)


def draw_jobs(
    rng: np.random.Generator, num_jobs: int, jobs_per_hour: float, multi_gpu: bool
) -> list[tuple[float, str, int, float]]:
    """``(arrival s, job type, scale factor, duration s on a V100)`` of ``num_jobs`` jobs."""
    drawn = []
    t = 0.0
    distributed = [j.name for j in JOB_TYPES if j.distributed]
    every = [j.name for j in JOB_TYPES]
    for _ in range(num_jobs):
        scale = draw_scale_factor(rng) if multi_gpu else 1
        duration = draw_duration_s(rng)
        pool = distributed if scale > 1 else every
        job_type = pool[int(rng.integers(len(pool)))]
        drawn.append((t, job_type, scale, duration))
        t += -math.log(1.0 - rng.random()) * 3600.0 / jobs_per_hour
    return drawn


def gavel_workload(
    drawn: list[tuple[float, str, int, float]],
    *,
    cluster: str,
    name: str,
    speed_spread: float = 0.0,
    seed: int = 0,
    round_s: float = ROUND_S,
    params: dict[str, Any] | None = None,
) -> Workload:
    """The workload of the jobs ``drawn`` (see `draw_jobs`) on ``cluster`` (a spec string)."""
    spec = ClusterSpec.parse(cluster, "gavel: cluster")
    types = spec.types
    largest = max((g.gpus_per_server * g.servers for g in spec.groups), default=0)
    rng = np.random.default_rng([seed, 1])
    jobs: list[JobSpec] = []
    profile: dict[int, dict[str, float]] = {}
    truth: dict[int, dict[str, float]] = {}
    gpu = Resources(1.0)
    for job_id, (t, job_type, scale, duration) in enumerate(drawn):
        if scale > largest:
            raise ValueError(f"gavel: a {scale}-GPU job does not fit any type of {cluster}")
        rates = rates_of(job_type, scale, tuple(dict.fromkeys((*types, REFERENCE_TYPE))))
        steps = duration * rates[REFERENCE_TYPE]
        profile[job_id] = {k: rates[k] for k in types}
        truth[job_id] = spread_rates(profile[job_id], speed_spread, rng)
        jobs.append(
            JobSpec(
                job_id, t, job_type, Arch.ALLREDUCE, steps, gpu, Resources(), scale, 0, scale, scale
            )
        )
    model = TypedSpeed(FixedDuration(), spec.server_types(), truth, estimated=profile)
    return Workload(
        name=name,
        jobs=tuple(jobs),
        servers=spec.servers(CPU_PER_GPU, MEM_GB_PER_GPU),
        server_types=spec.server_types(),
        model=model,
        interval_s=round_s,
        on_events=False,
        placement="pack",
        rescale=RescaleCost(mode="restart", hot_s=0.0, restart_s=0.0),
        params={
            "cluster": str(spec),
            "speed_spread": speed_spread,
            "round_s": round_s,
            **(params or {}),
        },
    )


def make_gavel(
    *,
    seed: int = 0,
    servers: int | None = None,
    load: float | None = None,
    num_jobs: int = 100,
    jobs_per_hour: float = 4.0,
    cluster: str = DEFAULT_CLUSTER,
    multi_gpu: bool = False,
    speed_spread: float = 0.0,
    round_s: float = ROUND_S,
) -> Workload:
    """Gavel's generated jobs (see the module doc) on ``cluster``.

    Args:
        seed: draws the jobs.
        servers: servers of each GPU type (keeping each group's GPUs per server); None: as
            ``cluster`` says.
        load: multiplies ``jobs_per_hour``.
        num_jobs: how many jobs.
        jobs_per_hour: average arrival rate (Gavel's input job rate ``lam``), jobs per hour.
        cluster: the cluster spec (`dlsched.core.gpu_types`), types among k80, p100, v100.
        multi_gpu: draw sizes of 1-8 GPUs (Gavel's ``--generate-multi-gpu-jobs``).
        speed_spread: relative std of each job's true per-type rate around its profile.
        round_s: the round length, seconds (the scheduling interval).
    """
    if not (math.isfinite(jobs_per_hour) and jobs_per_hour > 0):
        raise ValueError(f"gavel: jobs_per_hour must be a positive number, got {jobs_per_hour}")
    if not (math.isfinite(speed_spread) and 0.0 <= speed_spread <= 10.0):
        raise ValueError(f"gavel: speed_spread must be in [0, 10], got {speed_spread}")
    if not (math.isfinite(round_s) and round_s > 0):
        raise ValueError(f"gavel: round_s must be a positive number of seconds, got {round_s}")
    if num_jobs < 1:
        raise ValueError(f"gavel: num_jobs must be >= 1, got {num_jobs}")
    spec = ClusterSpec.parse(cluster, "gavel: cluster")
    if servers is not None:
        if servers < 1:
            raise ValueError(f"gavel: servers must be >= 1, got {servers}")
        cluster = ",".join(f"{g.gpu_type}:{servers}x{g.gpus_per_server}" for g in spec.groups)
    rate = jobs_per_hour * (load if load is not None else 1.0)
    drawn = draw_jobs(np.random.default_rng(seed), num_jobs, rate, multi_gpu)
    return gavel_workload(
        drawn,
        cluster=cluster,
        name="gavel",
        speed_spread=speed_spread,
        seed=seed,
        round_s=round_s,
        params={"seed": seed, "load": load, "jobs_per_hour": rate, "multi_gpu": multi_gpu},
    )
