"""The compiled LAS core (`dlsched.sim.las_core`; it replays Tiresias too) behind a
`Simulator`: which runs it can replay, the job table it reads, and the `Result` it gives (the
same per-job records as `Simulator.run`, and the same timeline)."""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import numpy as np

from dlsched.core import Allocation, Arch, JobRun
from dlsched.models.base import no_wait_bound_s
from dlsched.models.fixed import FixedDuration
from dlsched.models.locality import Locality
from dlsched.models.typed import TypedSpeed
from dlsched.placement.pack import Pack
from dlsched.sim.las_core import DONE, compiled_replay, replay
from dlsched.sim.metrics import Timeline
from dlsched.sim.result import Result, RunTotals
from dlsched.sim.simulator import Simulator

log = logging.getLogger(__name__)

AUTO_MIN_JOBS = 2_000
"""``core="auto"`` replays LAS runs of at least this many jobs in the compiled core once it is
compiled (in this process or numba's cache): loading it costs ~0.7 s, the simulator's LAS takes
~1.1 s CPU on 2,000 Philly jobs, 0.68 s on 1,000 (benchmarks/RESULTS.md, issue 31)."""
AUTO_MIN_JOBS_COLD = 16_000
"""The same where the next run would compile it (no cache yet, or none writable: ~15 s): the
simulator's LAS takes ~7.5 s CPU on 8,000 Philly jobs and over 20 s on 16,000."""
TIRESIAS_AUTO_MIN_JOBS = 4_000
"""`AUTO_MIN_JOBS` for Tiresias, whose simulator run costs less than LAS's: 0.62 s CPU on
4,000 jobs of ``philly:6214e9``, 0.39 s on 2,000 (benchmarks/RESULTS.md, issue 31)."""
TIRESIAS_AUTO_MIN_JOBS_COLD = 45_000
"""`AUTO_MIN_JOBS_COLD` for Tiresias: all 41,226 jobs of ``philly:6214e9`` take ~8 s CPU in the
simulator (less than compiling), all of Philly's 82,247 over 70 s (the first 30,000 38 s)."""


def compiles(kernel: Any = None) -> bool:
    """Whether the next compiled run in this process compiles the kernel (LAS's, ~15 s, unless
    another core's `compiled_replay` is given): not loaded yet and numba's cache holds none for
    this source (or numba cannot cache here)."""
    kernel = compiled_replay() if kernel is None else kernel
    if kernel.signatures:
        return False
    try:  # numba's own index of cached versions (empty when the source changed since)
        return not kernel._cache._cache_file._load_index()
    except (AttributeError, OSError):  # no cache (NullCache) or an unreadable index
        return True


def worth_it(sim: Simulator) -> bool:
    """``simulate(core="auto")``'s choice: the core replays ``sim`` and is faster even counting
    its compilation or loading (`AUTO_MIN_JOBS`, `AUTO_MIN_JOBS_COLD`). The other cores:
    ``"compiled"`` takes it for every run it replays, ``"python"`` for none; the records,
    totals and timeline are the same, and ``params["core"]`` (the summary's ``core``) is
    ``"compiled LAS"`` or ``"compiled Tiresias"`` when it ran (``"python"`` where
    ``"compiled"`` was asked in vain)."""
    n = len(sim.specs)
    warm, cold = (
        (TIRESIAS_AUTO_MIN_JOBS, TIRESIAS_AUTO_MIN_JOBS_COLD)
        if _policy(sim) == "Tiresias"
        else (AUTO_MIN_JOBS, AUTO_MIN_JOBS_COLD)
    )
    if n < warm or unsupported(sim) is not None:
        return False
    return n >= cold or not compiles()


def unsupported(sim: Simulator) -> str | None:
    """Why the core cannot replay ``sim`` (None: it can; `dlsched.sim.las_core`'s list)."""
    if _policy(sim) is None:
        return "the scheduler is not las or tiresias"
    return unsupported_setting(sim)


def unsupported_setting(sim: Simulator, typed: bool = False) -> str | None:
    """Why a core cannot replay ``sim``'s placement, model, options, cluster or jobs (None: it
    can; the LAS and FIFO cores, `dlsched.sim.fifo_core`, replay the same settings; with
    ``typed``, Gavel's core, `dlsched.sim.gavel_core`, also `FixedDuration` speeds and either
    under `TypedSpeed`)."""
    config = sim.config
    model = sim.model
    if typed and type(model) is TypedSpeed:
        model = model.inner
    speeds = (Locality, FixedDuration) if typed else (Locality,)
    if type(sim.placement) is not Pack or type(model) not in speeds:
        return "placement or speed model other than pack / Locality"
    if config.noise > 0:
        return "noise"
    if config.repack or sim.event_log is not None:
        return "repack or event log"
    cap = sim.cluster.capacity_array
    if not np.all(cap == np.floor(cap)):
        return "capacities that are not whole numbers"
    for spec in sim.specs:
        d = spec.worker_demand.as_tuple()
        if spec.arch is Arch.PS or spec.elastic or spec.num_workers < 1 or spec.num_ps:
            return f"job {spec.job_id} has PS, is elastic or has no worker"
        if any(x != math.floor(x) for x in d) or d[0] <= 0:
            return f"job {spec.job_id}'s demands are not whole numbers of GPUs and more"
    return None


def _policy(sim: Simulator) -> str | None:
    """``"LAS"`` or ``"Tiresias"``: the policy the core replays ``sim``'s scheduler as (None:
    neither; by class name: the simulator is below the schedulers)."""
    kind = type(sim.scheduler)
    return _POLICIES.get((kind.__module__, kind.__qualname__))


_POLICIES = {
    ("dlsched.schedulers.las", "Las"): "LAS",
    ("dlsched.schedulers.tiresias", "Tiresias"): "Tiresias",
}


def label(sim: Simulator) -> str:
    """The summary's ``core`` where the core replayed ``sim``: ``compiled LAS`` or ``compiled
    Tiresias``."""
    return f"compiled {_policy(sim) or 'LAS'}"


def arrays(sim: Simulator) -> tuple[np.ndarray | float, ...]:
    """`las_core.replay`'s arguments for ``sim``: the job table (arrival order), the cluster's
    capacities, the timeline's spacing (s), each server's GPUs, the horizon (s), the tick
    interval (s; 0: none) and whether every arrival and completion is a scheduling point
    (`fifo_core_run` reads them too; the policy's are `policy_arrays`)."""
    specs = sim.specs
    n = len(specs)
    submit = np.array([s.submit_time_s for s in specs], dtype=np.float64)
    jid = np.array([s.job_id for s in specs], dtype=np.int64)
    nw = np.array([s.num_workers for s in specs], dtype=np.int64)
    dem = np.array([s.worker_demand.as_tuple() for s in specs], dtype=np.float64).reshape(n, 3)
    total = np.array([s.total_work for s in specs], dtype=np.float64)
    resume = np.array([sim.config.rescale.resume_s(s.model) for s in specs], dtype=np.float64)
    speed = speed_table(sim, sim.model)
    cap = np.array(sim.cluster.capacity_array, dtype=np.float64)
    keys = np.column_stack([dem, nw.astype(np.float64)]) if n else np.zeros((0, 4))
    shape = np.unique(keys, axis=0, return_inverse=True)[1].reshape(n).astype(np.int64)
    gpus = np.array([int(row[0]) for row in sim.cluster.capacity_rows], dtype=np.int64)
    step = float(sim._timeline_step_s)  # the simulator's own spacing
    horizon = math.inf if sim.config.horizon_s is None else float(sim.config.horizon_s)
    interval = 0.0 if sim.config.interval_s is None else float(sim.config.interval_s)
    return (
        *(submit, jid, nw, dem, total, resume, speed, cap, shape, step, gpus, horizon),
        *(interval, sim.config.on_events),
    )


def speed_table(sim: Simulator, model: Any) -> np.ndarray:
    """``(jobs, servers + 1)``: each job's speed under ``model`` by the servers it holds
    (`Locality.speed` reads only that count, `FixedDuration.speed` only the workers)."""
    specs, S = sim.specs, sim.cluster.num_servers
    speed = np.zeros((len(specs), S + 1))
    for i, spec in enumerate(specs):
        w = spec.num_workers
        for k in range(1, min(w, S) + 1):
            workers = (*((s, 1) for s in range(k - 1)), (k - 1, w - (k - 1)))
            speed[i, k] = model.speed(spec, Allocation(workers, ()))
    return speed


def policy_arrays(sim: Simulator) -> tuple[bool, np.ndarray, float]:
    """`las_core.replay`'s last arguments: whether ``sim``'s scheduler is Tiresias, its queue
    thresholds (GPU-s; none for LAS) and its promotion knob (0 for LAS)."""
    tiresias = _policy(sim) == "Tiresias"
    scheduler: Any = sim.scheduler
    thresholds = np.array(scheduler.thresholds_gpu_s if tiresias else (), dtype=np.float64)
    return tiresias, thresholds, float(scheduler.promote_knob) if tiresias else 0.0


def run(sim: Simulator, compiled: bool = True) -> Result | None:
    """``sim.run()``'s result by the core (compiled, or its plain-Python reference), or None
    where the run leaves what the core replays (the stall rule fired: run ``sim`` itself)."""
    wall0 = time.perf_counter()
    if compiled and compiles():
        cached = getattr(compiled_replay()._cache, "_cache_file", None) is not None
        log.info(
            "compiling the LAS core with numba (~15 s; %s)",
            "once: later runs load it from numba's cache"
            if cached
            else "numba has no writable cache directory here, so every process compiles it",
        )
    kernel: Any = compiled_replay() if compiled else replay
    return result_of(sim, kernel(*arrays(sim), *policy_arrays(sim)), wall0)


def result_of(
    sim: Simulator, out: tuple[Any, ...], wall0: float, rescales: np.ndarray | None = None
) -> Result | None:
    """``sim``'s `Result` from a core's ``replay`` output (`las_core.replay`'s tuple), None
    where it did not finish (``wall0``: `time.perf_counter` when the run began; ``rescales``:
    each job's, where a core counts them; else none)."""
    status, first, finish, held, order, decisions, end_s, busy_gpu, busy_cpu, pops = out[:10]
    samples = out[10][: out[11]]  # the timeline's rows
    if status != DONE:
        return None
    specs = sim.specs
    finished = []
    for i in order[: np.count_nonzero(~np.isnan(finish))]:  # (not those past a horizon)
        spec = specs[i]
        r = JobRun(spec, progress_time_s=float(finish[i]))
        r.ideal_duration_s = spec.total_work / max(sim.model.ideal_speed(spec), 1e-12)
        r.first_start_s, r.finish_s, r.held_s = float(first[i]), float(finish[i]), float(held[i])
        if rescales is not None:
            r.rescales = int(rescales[i])
        finished.append(r)
    if sim.on_job_finished is not None:  # the core runs whole: its progress is told at its end
        for done in range(1, len(finished) + 1):
            sim.on_job_finished(done, len(specs))
    total = sim.cluster.total
    start = specs[0].submit_time_s if specs else 0.0
    span = max(end_s - start, 1e-9)
    bound = (
        float(np.mean([no_wait_bound_s(r.spec, sim.model) for r in finished]))
        if finished
        else math.nan
    )
    totals = RunTotals(
        workload=sim.workload_name,
        scheduler=sim.scheduler.name,
        seed=sim.config.seed,
        num_jobs=len(specs),
        events=pops + len(specs),
        decisions=decisions,
        wall_s=time.perf_counter() - wall0,
        end_s=end_s,
        gpu_util=busy_gpu / (total.gpu * span) if total.gpu else 0.0,
        cpu_util=busy_cpu / (total.cpu * span) if total.cpu else 0.0,
        jct_bound_s=bound,
        cluster_gpus=float(total.gpu),
    )
    return Result.from_runs(finished, totals, timeline(sim, samples))


def timeline(sim: Simulator, samples: np.ndarray) -> Timeline:
    """The `Timeline` of the kernel's ``samples`` (`las_core.replay`'s rows), with
    `Timeline.sample`'s operations: utilisation = used / total, fragmentation = NumPy's mean
    of the servers' values (`metrics.fragmentation`; 0 without a server with GPUs)."""
    total = sim.cluster.total
    out = Timeline()
    out.times = samples[:, 0].tolist()
    out.gpu_util = (samples[:, 1] / total.gpu).tolist() if total.gpu else [0.0] * len(samples)
    out.cpu_util = (samples[:, 2] / total.cpu).tolist() if total.cpu else [0.0] * len(samples)
    has_gpus = samples.shape[1] > 5
    out.fragmentation = [float(np.mean(row[5:])) if has_gpus else 0.0 for row in samples]
    out.running = samples[:, 3].astype(np.int64).tolist()
    out.pending = samples[:, 4].astype(np.int64).tolist()
    return out
