"""The Kubeflow workload: prioritised TFJobs with min/max worker replicas on CPU nodes (seed 003).

The seed (a write-up of a DRAGON/OASiS-inspired controller replacing Kubeflow's tf-operator)
gives the scheduler — a priority queue ordered by utility then by CPU + memory request, gang
scheduling of a job's pods, scale-down of lower-priority jobs to their minimum replicas to admit
a higher-priority job, scale-up into free resources up to maximum replicas — and says the pods
request CPU and memory on nodes with CPU and memory. Its three experiments' specifications
("Specifications for experiment 1/2/3") were images and are lost from the text, so the numbers
below are our choices, made to exercise each of those mechanisms; each is stated with its reason.

Cluster
    `DEFAULT_SERVERS` = 4 nodes of 16 CPU cores and 64 GB, no GPU (the seed's pods request only
    CPU and memory): ``Resources(gpu=0, cpu=16, mem=64)``. ``servers`` changes how many.

Jobs (every mix)
    * A TFJob of identical worker replicas (``arch = Arch.REPLICA``), each asking for CPU cores
      and memory (``worker_demand``). ``num_workers`` is the replica count in the job's spec,
      ``min_workers`` / ``max_workers`` its minimum and maximum replicas (the bounds of
      scale-down and scale-up). Speed from `ReplicaScaling` (Amdahl, ``serial_fraction``).
    * ``priority`` is the job's utility, 1 (low), 2 or 3 (high): larger is more important.
    * ``total_work``: duration in seconds at the requested replica count, log-normal with the
      mix's median and σ = 0.8 (the middle 90 % within a factor 3.7 of the median), rounded to
      whole seconds and clipped to [1 min, 2 h]: short TFJobs, as in a small demonstration
      cluster.
    * Replica counts are capped at what the whole cluster holds (replicas per node × nodes), so
      every job fits.

Mixes (``mix``)
    ``"uniform"``: one distribution for every job — the baseline for priority queueing and
        gang scheduling. Utility uniform in {1, 2, 3}; each replica 1 or 2 cores with 2 GB per
        core; 1–4 replicas requested, minimum uniform in 1..requested, maximum uniform in
        requested..2 × requested; median duration 10 min.
    ``"high-priority-burst"``: low-priority background jobs (utility 1, otherwise as
        ``"uniform"``) with a burst of high-priority jobs (utility 3, `BURST_FRAC` = 25 % of
        the jobs) in the middle: the burst starts when half the background jobs have arrived
        and its jobs come 10× faster than the background's. The burst finds the cluster full
        of low-priority jobs, which the scheduler must scale down to admit it (the seed's
        ScaleDown).
    ``"large-jobs"``: large jobs that span nodes and have wide replica ranges — the test for
        gang scheduling across nodes and for scale-up/scale-down. Utility uniform in {1, 2, 3};
        each replica 2 or 4 cores with 4 GB per core; 4–8 replicas requested (8–32 cores, up to
        two nodes), minimum uniform in ceil(requested / 2)..requested, maximum uniform in
        requested..2 × requested; median duration 20 min.

Arrivals and load
    Poisson arrivals (exponential gaps), first job at 0 s. ``load`` is the offered load: the
    sum over jobs of their dominant share of the cluster (requested replicas × per-replica
    demand, the larger of its CPU and memory fractions) times duration, divided by the arrival
    span. The mean gap is set from the drawn jobs so that this equals ``load``
    (default `DEFAULT_LOAD` = 0.9). For ``"high-priority-burst"`` ``load`` is the background's
    load; the burst comes on top of it.

Settings: ``model = ReplicaScaling(serial_fraction)``, ``interval_s = None``, ``on_events =
True`` (the controller reacts to job events), ``placement = "gang"``, no noise.

All randomness comes from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dlsched.core import Arch, JobSpec, Resources
from dlsched.models.replica import ReplicaScaling
from dlsched.workloads.base import Workload

log = logging.getLogger(__name__)

NODE = Resources(gpu=0.0, cpu=16.0, mem=64.0)
"""One node: 16 CPU cores, 64 GB, no GPU."""
DEFAULT_SERVERS = 4
DEFAULT_LOAD = 0.9
DEFAULT_NUM_JOBS = 100
DURATION_SIGMA = 0.8
DURATION_RANGE_S = (60.0, 7200.0)
PRIORITIES = (1.0, 2.0, 3.0)
BURST_FRAC = 0.25
BURST_START = 0.5
"""The burst starts when this share of the background jobs has arrived."""
BURST_RATE = 10.0
"""Burst arrivals are this many times faster than the background's."""


@dataclass(frozen=True)
class Mix:
    """How one mix draws its jobs.

    Attributes:
        name: the ``mix`` value.
        replica_cpu: CPU cores of one replica, drawn uniformly from these.
        mem_per_cpu_gb: memory of one replica per core, GB.
        requested: fewest and most replicas requested (inclusive, uniform).
        min_half: minimum replicas from ceil(requested / 2) (True) or 1 (False) up to requested.
        median_duration_s: median duration at the requested count, seconds.
        burst: whether a high-priority burst comes on low-priority background jobs.
    """

    name: str
    replica_cpu: tuple[float, ...]
    mem_per_cpu_gb: float
    requested: tuple[int, int]
    min_half: bool
    median_duration_s: float
    burst: bool = False


MIXES: dict[str, Mix] = {
    m.name: m
    for m in (
        Mix("uniform", (1.0, 2.0), 2.0, (1, 4), False, 600.0),
        Mix("high-priority-burst", (1.0, 2.0), 2.0, (1, 4), False, 600.0, burst=True),
        Mix("large-jobs", (2.0, 4.0), 4.0, (4, 8), True, 1200.0),
    )
}


def _positive(name: str, value: float) -> None:
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")


def _gaps(rng: np.random.Generator, n: int, mean_s: float) -> npt.NDArray[np.float64]:
    gaps = rng.exponential(mean_s, n)
    if n:
        gaps[0] = 0.0
    return gaps


def _check_arguments(servers: int, num_jobs: int, load: float, serial_fraction: float) -> None:
    """`make_kubeflow`'s ValueErrors, before anything is drawn."""
    if servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    if num_jobs < 1:
        raise ValueError(f"num_jobs must be >= 1, got {num_jobs}")
    _positive("load", load)
    if not (0.0 <= serial_fraction <= 1.0):
        raise ValueError(f"serial_fraction must be in [0, 1], got {serial_fraction}")


def _job_specs(*drawn: npt.NDArray[Any]) -> tuple[JobSpec, ...]:
    """The jobs in submit order (ids by arrival) from their drawn submit times (s), durations
    (s), CPU and memory per replica, requested, min and max replicas, and priorities."""
    submit, duration, cpu, mem, requested, minimum, maximum, priority = drawn
    order = np.argsort(submit, kind="stable")
    return tuple(
        JobSpec(
            job_id=job_id,
            submit_time_s=float(submit[i]),
            model="tfjob",
            arch=Arch.REPLICA,
            total_work=float(duration[i]),
            worker_demand=Resources(gpu=0.0, cpu=float(cpu[i]), mem=float(mem[i])),
            num_workers=int(requested[i]),
            min_workers=int(minimum[i]),
            max_workers=int(maximum[i]),
            priority=float(priority[i]),
        )
        for job_id, i in enumerate(order.tolist())
    )


def make_kubeflow(
    seed: int,
    *,
    servers: int | None = None,
    load: float | None = None,
    num_jobs: int = DEFAULT_NUM_JOBS,
    mix: str = "uniform",
    serial_fraction: float = 0.1,
) -> Workload:
    """Generate one Kubeflow workload (see the module docstring for every choice and mix).

    Args:
        seed: seeds ``numpy.random.default_rng``, the only randomness.
        servers: nodes of 16 cores and 64 GB; None → 4.
        load: offered load, a fraction of the cluster's capacity (dominant resource); None →
            0.9. For ``"high-priority-burst"`` the background's load.
        num_jobs: jobs in the workload.
        mix: ``"uniform"``, ``"high-priority-burst"`` or ``"large-jobs"``.
        serial_fraction: Amdahl serial fraction of `ReplicaScaling`, in [0, 1].

    Returns:
        The workload: replica jobs with priorities and min/max replicas, ``total_work`` in
        seconds at the requested count, the nodes, `ReplicaScaling`, gang placement.

    Raises:
        ValueError: unknown ``mix``, ``servers`` or ``num_jobs`` below 1, ``load`` not a finite
            number > 0, or ``serial_fraction`` outside [0, 1].
    """
    servers = DEFAULT_SERVERS if servers is None else servers
    load = DEFAULT_LOAD if load is None else load
    spec = MIXES.get(mix)
    if spec is None:
        raise ValueError(f"mix must be one of {', '.join(MIXES)}; got {mix!r}")
    _check_arguments(servers, num_jobs, load, serial_fraction)
    model = ReplicaScaling(serial_fraction)

    rng = np.random.default_rng(seed)
    n = num_jobs
    cpu = rng.choice(np.asarray(spec.replica_cpu), size=n)
    mem = cpu * spec.mem_per_cpu_gb
    per_node = np.floor(np.minimum(NODE.cpu / cpu, NODE.mem / mem)).astype(np.int64)
    fit = per_node * servers
    lo, hi = spec.requested
    requested = np.minimum(rng.integers(lo, hi + 1, n), fit)
    low = np.ceil(requested / 2).astype(np.int64) if spec.min_half else np.ones(n, np.int64)
    minimum = rng.integers(low, requested + 1)
    maximum = np.minimum(rng.integers(requested, 2 * requested + 1), fit)
    raw = rng.lognormal(math.log(spec.median_duration_s), DURATION_SIGMA, n)
    duration = np.clip(np.round(raw), *DURATION_RANGE_S)

    total = NODE * servers
    share = requested * np.maximum(cpu / total.cpu, mem / total.mem)
    submit, priority, mean_gap = _arrivals(rng, spec.burst, share * duration, load)

    jobs = _job_specs(submit, duration, cpu, mem, requested, minimum, maximum, priority)
    log.debug("kubeflow seed=%d mix=%s: %d jobs, mean gap %.1f s", seed, mix, n, mean_gap)
    params = {
        "seed": seed,
        "servers": servers,
        "load": load,
        "num_jobs": n,
        "mix": mix,
        "serial_fraction": serial_fraction,
        "mean_interarrival_s": mean_gap,
        **_mix_params(spec),
    }
    return Workload(
        name="kubeflow",
        jobs=jobs,
        servers=(NODE,) * servers,
        model=model,
        interval_s=None,
        on_events=True,
        placement="gang",
        params=params,
    )


def _arrivals(
    rng: np.random.Generator, burst: bool, work: npt.NDArray[np.float64], load: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], float]:
    """Submit times (s), priorities and the mean gap (s) of jobs whose ``work`` (share of the
    cluster × duration) arrives at ``load``; with ``burst`` a `BURST_FRAC` of them arrive as a
    high-priority burst on top of the background's load."""
    n = len(work)
    if not burst:
        mean_gap = float(np.sum(work)) / (n * load)
        submit = np.cumsum(_gaps(rng, n, mean_gap))
        return submit, rng.choice(np.asarray(PRIORITIES), size=n), mean_gap
    num_burst = round(BURST_FRAC * n) if n > 1 else 0
    is_burst = np.zeros(n, dtype=bool)
    is_burst[rng.choice(n, size=num_burst, replace=False)] = True
    background = ~is_burst
    mean_gap = float(np.sum(work[background])) / (int(background.sum()) * load)
    times_bg = np.cumsum(_gaps(rng, int(background.sum()), mean_gap))
    start = float(times_bg[int(BURST_START * (len(times_bg) - 1))])
    times_burst = start + np.cumsum(rng.exponential(mean_gap / BURST_RATE, num_burst))
    submit = np.empty(n)
    submit[background] = times_bg
    submit[is_burst] = times_burst
    return submit, np.where(is_burst, PRIORITIES[-1], PRIORITIES[0]), mean_gap


def _mix_params(spec: Mix) -> dict[str, object]:
    """The generator parameters a mix fixes, for the workload's ``params``."""
    return {
        "node_capacity": NODE.as_tuple(),
        "replica_cpu": spec.replica_cpu,
        "mem_per_cpu_gb": spec.mem_per_cpu_gb,
        "requested_replicas": spec.requested,
        "median_duration_s": spec.median_duration_s,
        "duration_sigma": DURATION_SIGMA,
        "duration_range_s": DURATION_RANGE_S,
        "burst_frac": BURST_FRAC if spec.burst else 0.0,
    }
