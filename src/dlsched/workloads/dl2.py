"""The DL2 workload (DL2 §6.2): PS jobs of 8 models arriving in 1,200 s slots on the testbed.

Every choice, with its source (§ = sections of the DL2 paper, arXiv 1909.06040; "code" = the
authors' simulator, GitHub ``pengyanghua/DL2``, files ``trace.py`` and ``parameters.py``):

Cluster
    13 servers (§6.2 "Testbed"), each with two GTX 1080Ti GPUs, one Intel E5-1660 v4 CPU
    (8 cores; the code's ``NUM_RESR_SLOTS = 8`` CPU slots a node) and 48 GB RAM:
    ``Resources(gpu=2, cpu=8, mem=48)``. ``servers`` changes how many. The paper's simulations
    used 500 (§6.2); there jobs never wait, and what separates policies is only how many tasks
    each job gets (the measured speeds peak well below 16 workers + 16 PS for most models). On
    8–14 servers jobs also compete for resources, which is the setting DL2 targets.

Jobs
    * Model chosen uniformly among the 8 of Table 1, in the code's order `JOB_TYPES` (§6.2 "we
      randomly select a model from Table 1"; code: ``np.random.randint(0, num_type)``).
    * Parameter-server architecture, synchronous (all measurements are ``dist_sync``); speed
      from `MeasuredPS`.
    * A worker takes 1 GPU (none for cnn-text-classification and dssm, whose workers run on CPU
      in the code), 2 CPU cores and 10 GB; a PS 2 CPU cores and 10 GB. CPU: the code's
      ``resr_workers``/``resr_ps`` (2 slots each; §6.2 allows 1–4 cores); GPU: the code's 4 of
      8 GPU slots = 1 of the server's 2 GPUs (§6.2 "at most 2 GPUs"); memory: §2.2 (10 GB per
      worker and per PS). A server thus holds 4 tasks, e.g. 2 workers and 2 PS.
    * At most 16 workers and 16 PS a job (code ``MAX_NUM_WORKERS = 16``); at least 1 worker.
    * User request: ``num_workers`` uniform in 1..4 and ``num_ps = num_workers``. DL2 lets the
      user choose (§2.1) and its code never draws a request (DRF fills jobs up to 16), so this
      is our choice: §2.2 calls equal PS and worker counts "a general rule of thumb", and small
      requests leave room for elastic policies to add tasks, which is DL2's point.
    * Length: the job's duration *at its requested allocation* is drawn log-normal with median
      `MEDIAN_DURATION_MIN` = 90 min, then all durations of the trace are scaled by one factor
      so that their mean is exactly `MEAN_DURATION_MIN` = 147 min. §6.2 (Fig. 8b): "over a half
      of jobs run for more than an hour and some for days; the average job duration is 147
      minutes" (here ≈ 66 % exceed 1 h and about 1 job in 350 exceeds a day). ``total_work`` is
      that duration times `MeasuredPS` speed at the requested counts, rounded to whole epochs
      (§6.2 varies "its required number of training epochs … following job running time
      distribution of the real-world trace").

Arrivals
    * Time is cut in 1,200 s slots (§6.2 "per time slot, i.e., 20 minutes"; code
      ``TS_DURATION``); a job arrives at the start of its slot (code ``job.arrv_time = ts``).
    * Arrivals per slot are Poisson with a diurnal mean (§6.2 Fig. 8a shows a daily cycle over
      a week; its values are not in the text): ``rate · (1 + 0.5·sin(2π·(slot + start)/72))``,
      72 slots a day, ``start`` a random slot of the day (like the code's random offset), and
      capped at 10 a slot on the 13-server testbed (code ``MAX_ARRVS_PER_TS = 10``). ``num_jobs``
      jobs a trace (code ``TOT_NUM_JOBS = 200`` on the testbed). Leading empty slots are
      dropped, so the first job arrives at 0 s.
    * ``rate = load × 1.415 × servers / 13`` jobs a slot: at ``load = 1`` the jobs' requested
      allocations would keep the cluster's dominant resource (CPU) fully busy on average
      (`arrivals_per_slot`), whatever its size. The load scales with the cluster: the rate, the
      cap (``10 × servers / 13``, at least 10) and the default ``num_jobs``
      (``200 × servers / 13``, so a trace spans as many slots as on the testbed) all grow in
      proportion to ``servers``; ``servers=500`` at ``load=1`` is as busy as the testbed.

Settings: ``interval_s = 1200`` (DL2 reschedules once a slot), ``on_events = False``,
``placement = "load_balance"`` (§3.1, the default load-balancing placement), noise default
`dlsched.models.noise.DL2_LEVEL` (interference, §2.2).

All randomness comes from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import numpy.typing as npt

from dlsched.core import Arch, JobSpec, Resources
from dlsched.models.measured_ps import MeasuredPS
from dlsched.models.noise import DL2_LEVEL
from dlsched.workloads.base import Workload

log = logging.getLogger(__name__)

JOB_TYPES: tuple[str, ...] = (
    "resnet-50",
    "vgg-16",
    "resnext-110",
    "inception-bn",
    "seq2seq",
    "cnn-text-classification",
    "dssm",
    "wlm",
)
CPU_ONLY_MODELS = frozenset({"cnn-text-classification", "dssm"})

TESTBED_SERVER = Resources(gpu=2.0, cpu=8.0, mem=48.0)
"""One testbed server (§6.2): 2 GPUs, 8 CPU cores, 48 GB."""
DEFAULT_SERVERS = 13

WORKER_GPU = 1.0
TASK_CPU = 2.0
TASK_MEM_GB = 10.0
MAX_TASKS = 16
REQUEST_WORKERS = (1, 4)
"""Smallest and largest requested worker count (uniform, inclusive); PS count equals it."""

SLOT_S = 1200.0
SLOTS_PER_DAY = 72
MAX_ARRIVALS_PER_SLOT = 10
"""Cap on arrivals a slot on the 13-server testbed (`max_arrivals_per_slot` scales it)."""
DEFAULT_NUM_JOBS = 200
"""Jobs a trace on the 13-server testbed (`default_num_jobs` scales it)."""
DIURNAL_AMPLITUDE = 0.5
MEAN_DURATION_MIN = 147.0
MEDIAN_DURATION_MIN = 90.0


def worker_demand(model: str) -> Resources:
    """Resources of one worker of ``model``."""
    gpu = 0.0 if model in CPU_ONLY_MODELS else WORKER_GPU
    return Resources(gpu=gpu, cpu=TASK_CPU, mem=TASK_MEM_GB)


PS_DEMAND = Resources(cpu=TASK_CPU, mem=TASK_MEM_GB)


def arrivals_per_slot(load: float = 1.0, servers: int = DEFAULT_SERVERS) -> float:
    """Mean arrivals a slot (before the diurnal swing and the cap) at ``load``.

    At ``load = 1`` the mean offered demand — requested tasks times duration, per resource —
    equals what ``servers`` testbed servers offer in a slot, for the most loaded resource.
    """
    lo, hi = REQUEST_WORKERS
    mean_workers = (lo + hi) / 2.0
    mean_ps = mean_workers
    gpu_share = 1.0 - len(CPU_ONLY_MODELS) / len(JOB_TYPES)
    per_job = (
        WORKER_GPU * mean_workers * gpu_share,
        TASK_CPU * (mean_workers + mean_ps),
        TASK_MEM_GB * (mean_workers + mean_ps),
    )
    duration_s = MEAN_DURATION_MIN * 60.0
    capacity = [c * servers * SLOT_S for c in TESTBED_SERVER.as_tuple()]
    busiest = max(d * duration_s / c for d, c in zip(per_job, capacity, strict=True))
    return load / busiest


def max_arrivals_per_slot(servers: int = DEFAULT_SERVERS) -> int:
    """The cap on arrivals a slot: 10 on the testbed, in proportion to ``servers`` above it."""
    return max(MAX_ARRIVALS_PER_SLOT, math.ceil(MAX_ARRIVALS_PER_SLOT * servers / DEFAULT_SERVERS))


def default_num_jobs(servers: int = DEFAULT_SERVERS) -> int:
    """Jobs a trace by default: 200 on the testbed, in proportion to ``servers``."""
    return max(1, round(DEFAULT_NUM_JOBS * servers / DEFAULT_SERVERS))


def _slot_counts(
    rng: np.random.Generator, num_jobs: int, rate: float, start: int, cap: int
) -> npt.NDArray[np.int64]:
    """Arrivals in each slot until ``num_jobs`` have arrived (the last slot trimmed)."""
    counts: list[int] = []
    total = 0
    slot = 0
    chunk = 256
    while total < num_jobs:
        phase = 2.0 * np.pi * (np.arange(slot, slot + chunk) + start) / SLOTS_PER_DAY
        mean = rate * (1.0 + DIURNAL_AMPLITUDE * np.sin(phase))
        drawn = np.minimum(rng.poisson(mean), cap)
        for n in drawn:
            if total == 0 and n == 0:
                continue  # the trace starts with its first arrival
            n = min(int(n), num_jobs - total)
            counts.append(n)
            total += n
            if total == num_jobs:
                break
        slot += chunk
    return np.asarray(counts, dtype=np.int64)


def _durations_s(rng: np.random.Generator, n: int) -> npt.NDArray[np.float64]:
    """Durations at the requested allocation: log-normal, scaled to the target mean."""
    sigma = math.sqrt(2.0 * math.log(MEAN_DURATION_MIN / MEDIAN_DURATION_MIN))
    minutes = rng.lognormal(math.log(MEDIAN_DURATION_MIN), sigma, n)
    minutes *= MEAN_DURATION_MIN / minutes.mean()
    return minutes * 60.0


def _check_arguments(load: float, num_jobs: int, noise: float) -> None:
    """`make_dl2`'s ValueErrors, before anything is drawn."""
    if not (load > 0 and math.isfinite(load)):
        raise ValueError(f"load must be a finite number > 0, got {load}")
    if num_jobs < 1:
        raise ValueError(f"num_jobs must be >= 1, got {num_jobs}")
    if not (noise >= 0 and math.isfinite(noise)):
        raise ValueError(f"noise must be a finite number >= 0, got {noise}")


def _job_specs(
    model: MeasuredPS,
    slots: npt.NDArray[np.int64],
    types: npt.NDArray[np.int64],
    workers: npt.NDArray[np.int64],
    durations: npt.NDArray[np.float64],
) -> tuple[JobSpec, ...]:
    """The jobs from their drawn arrival slots, types, worker counts and durations (s): each
    asks for as many PS as workers, and its work is the epochs it would run in its duration at
    the requested size."""
    jobs = []
    for job_id in range(len(types)):
        name = JOB_TYPES[int(types[job_id])]
        w = int(workers[job_id])
        epochs = max(1.0, float(round(durations[job_id] * model.epochs_per_s(name, w, w))))
        jobs.append(
            JobSpec(
                job_id=job_id,
                submit_time_s=float(slots[job_id]) * SLOT_S,
                model=name,
                arch=Arch.PS,
                total_work=epochs,
                worker_demand=worker_demand(name),
                ps_demand=PS_DEMAND,
                num_workers=w,
                num_ps=w,
                min_workers=1,
                max_workers=MAX_TASKS,
                max_ps=MAX_TASKS,
            )
        )
    return tuple(jobs)


def make_dl2(
    seed: int,
    *,
    servers: int | None = None,
    load: float | None = None,
    num_jobs: int | None = None,
    noise: float | None = None,
) -> Workload:
    """Generate one DL2 trace (see the module docstring for every choice and its source).

    Args:
        seed: seeds ``numpy.random.default_rng``, the only randomness.
        servers: testbed servers (2 GPUs, 8 cores, 48 GB each); None → 13.
        load: offered load relative to the cluster's capacity: 1.0 (None) offers the
            ``servers`` servers their CPU capacity at requested allocations.
        num_jobs: jobs in the trace; None → `default_num_jobs` (200 on 13 servers).
        noise: relative std of interference noise on speed; None → `DL2_LEVEL` (0.273).

    Returns:
        The workload: jobs with ``total_work`` in epochs, the cluster, `MeasuredPS`, settings.

    Raises:
        ValueError: non-positive ``servers``, ``load`` or ``num_jobs``, or negative ``noise``.
    """
    servers = DEFAULT_SERVERS if servers is None else servers
    load = 1.0 if load is None else load
    noise = DL2_LEVEL if noise is None else noise
    if servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    num_jobs = default_num_jobs(servers) if num_jobs is None else num_jobs
    _check_arguments(load, num_jobs, noise)

    rng = np.random.default_rng(seed)
    model = MeasuredPS()
    rate = arrivals_per_slot(load, servers)
    cap = max_arrivals_per_slot(servers)
    start = int(rng.integers(SLOTS_PER_DAY))
    counts = _slot_counts(rng, num_jobs, rate, start, cap)
    slots = np.repeat(np.arange(len(counts)), counts)
    types = rng.integers(0, len(JOB_TYPES), num_jobs)
    workers = rng.integers(REQUEST_WORKERS[0], REQUEST_WORKERS[1] + 1, num_jobs)
    durations = _durations_s(rng, num_jobs)

    jobs = _job_specs(model, slots, types, workers, durations)
    log.debug("dl2 seed=%d: %d jobs over %d slots", seed, num_jobs, len(counts))
    params = {
        "seed": seed,
        "servers": servers,
        "load": load,
        "num_jobs": num_jobs,
        "noise": noise,
        "server_capacity": TESTBED_SERVER.as_tuple(),
        "slot_s": SLOT_S,
        "arrivals_per_slot_mean": rate,
        "diurnal_amplitude": DIURNAL_AMPLITUDE,
        "slots_per_day": SLOTS_PER_DAY,
        "start_slot_of_day": start,
        "max_arrivals_per_slot": cap,
        "num_slots": len(counts),
        "duration_mean_min": MEAN_DURATION_MIN,
        "duration_median_min": MEDIAN_DURATION_MIN,
        "requested_workers": REQUEST_WORKERS,
        "task_cpu": TASK_CPU,
        "task_mem_gb": TASK_MEM_GB,
        "max_tasks": MAX_TASKS,
        "job_types": JOB_TYPES,
        "model": model.name,
    }
    return Workload(
        name="dl2",
        jobs=jobs,
        servers=(TESTBED_SERVER,) * servers,
        model=model,
        interval_s=SLOT_S,
        on_events=False,
        placement="load_balance",
        noise=noise,
        params=params,
    )
