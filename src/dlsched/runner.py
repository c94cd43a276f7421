"""Run a workload under a scheduler, by name or by object, in one call: `simulate`.

This is the layer that resolves names (``"dl2"``, ``"drf"``, ``"philly:6214e9"``) through the
plugin registries; the engine (`dlsched.sim`, `dlsched.core`) never does. It sits under the
public front door `dlsched.api` (which re-exports `simulate`): experiments, papers and
benchmarks inside the package import it from here, so that nothing but the CLI and
``dlsched/__init__`` imports `dlsched.api` (the layer order of ``tests/test_architecture.py``).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from dlsched.models.locality import SENSITIVITY, Locality
from dlsched.placement import make_placement
from dlsched.schedulers.base import Scheduler, cannot_run
from dlsched.schedulers.registry import made_for, make_scheduler, refusal
from dlsched.sim import RescaleCost, Result, SimConfig, SimulationStalled, Simulator
from dlsched.workloads.base import Workload
from dlsched.workloads.registry import make_workload

if TYPE_CHECKING:
    from dlsched.rl.decision_trace import DecisionTrace

log = logging.getLogger(__name__)

_UNSET: Any = object()

_KEPT: ContextVar[list[Result] | None] = ContextVar("dlsched_kept_runs", default=None)


@contextmanager
def keeping_runs() -> Iterator[list[Result]]:
    """Inside the block every `simulate` in this process records its event log and its result
    is appended to the list yielded (what ``dlsched reproduce --report`` draws); so do the runs
    `dlsched.experiments.compare.run_grid` sends to worker processes or Dask (they carry their
    event logs back). Other processes' simulations (training rollouts) are not kept."""
    kept: list[Result] = []
    token = _KEPT.set(kept)
    try:
        yield kept
    finally:
        _KEPT.reset(token)


def kept_runs() -> list[Result] | None:
    """The list `keeping_runs` appends to, inside its block; None outside."""
    return _KEPT.get()


class CannotRun(SimulationStalled):
    """The scheduler says before the run that it could never run this workload's jobs
    (`dlsched.schedulers.base.BaseScheduler.cannot_run`): raised at once instead of a run
    that would crawl or stall."""


_WARNED: set[tuple[str, str]] = set()
_WARNED_SETTING: set[tuple[str, ...]] = set()


def simulate(
    workload: str | Workload = "dl2",
    scheduler: str | Scheduler = "drf",
    seed: int = 0,
    *,
    servers: int | None = None,
    load: float | None = None,
    placement: str | None = None,
    noise: float | None = None,
    interval_s: float | None = _UNSET,
    on_events: bool | None = None,
    horizon_s: float | None = None,
    rescale: RescaleCost | None = None,
    restart_s: float | None = None,
    cross_server_slowdown: bool = True,
    repack: bool = False,
    max_idle_retries: int | None = None,
    on_job_finished: Callable[[int, int], None] | None = None,
    record_events: bool = False,
    core: str = "auto",
    **overrides: Any,
) -> Result:
    """Run one workload under one scheduler and return its `Result`.

    Args:
        workload: a registered name (``"dl2"``, ``"philly:6214e9"``, ``"trace:jobs.csv"``) or a
            `Workload`.
        scheduler: a registered name (``"drf"``, ``"dl2:PATH"``) or a `Scheduler`.
        seed: seeds the workload generator and the simulator's noise.
        servers: cluster size (servers) for generated workloads.
        load: arrival-rate multiplier (DeepRM: target load fraction).
        placement: placement policy name; default the workload's.
        noise: relative std of interference noise on speed; default the workload's.
        interval_s: periodic scheduling interval (s) or None; default the workload's.
        on_events: schedule at every arrival/completion; default the workload's.
        horizon_s: stop at this time (s); unfinished jobs are reported as such.
        rescale: rescale/restart cost model; default the workload's (`Workload.rescale`: Pollux
            restarts a job at every reallocation, 30 s), else `RescaleCost()`.
        restart_s: seconds of a checkpoint-restart (resize in restart mode, resume) in ``rescale``.
        cross_server_slowdown: False: a `Locality` workload's jobs spread over servers are not
            slowed down; the model in force is in ``params["speed_model"]`` (`speed_model`).
        repack: move a running job spread over servers onto one server once one has room, at a
            checkpoint-restart's cost (`SimConfig.repack`); ``params["repack"]`` says whether
            it was on and how many moves it made.
        max_idle_retries: fruitless retries in a row before `SimulationStalled`; default
            `SimConfig`'s.
        on_job_finished: called with (jobs finished, jobs in the workload) after each finish,
            e.g. to show progress.
        record_events: keep the run's events in ``result.event_log`` (same results).
        core: ``"auto"``: large LAS, Tiresias, FIFO, Gavel LP runs in a compiled core;
            ``"compiled"``: all one replays; ``"python"``: none. Same results; ``params["core"]``.
        **overrides: workload generator options (``num_jobs=50``, ``mix="large-jobs"``, …).

    Raises:
        SimulationStalled: jobs left that nothing would run; `CannotRun` before the run.
    """
    if isinstance(workload, str):
        workload = make_workload(workload, seed=seed, servers=servers, load=load, **overrides)
    elif servers is not None or load is not None or overrides:
        raise ValueError("servers, load and generator options apply to workload names only")
    if not cross_server_slowdown:
        workload = _without_cross_server_slowdown(workload)
    if isinstance(scheduler, str):
        warn_if_not_made_for(scheduler, workload.name)
        why = refusal(scheduler, workload.jobs, workload.servers)  # before any checkpoint loads
        _refuse(scheduler.partition(":")[0], workload, why)
        scheduler = make_scheduler(scheduler)
    _refuse_if_it_cannot_run(scheduler, workload)
    warn_if_out_of_setting(scheduler, workload)
    config = SimConfig(
        interval_s=workload.interval_s if interval_s is _UNSET else interval_s,
        on_events=workload.on_events if on_events is None else on_events,
        horizon_s=horizon_s,
        noise=workload.noise if noise is None else noise,
        rescale=_rescale_cost(rescale or workload.rescale or RescaleCost(), restart_s),
        seed=seed,
        repack=repack,
        **({} if max_idle_retries is None else {"max_idle_retries": max_idle_retries}),
    )
    return _run(workload, scheduler, config, placement, on_job_finished, record_events, core)


def _run(
    workload: Workload,
    scheduler: Scheduler,
    config: SimConfig,
    placement: str | None,
    on_job_finished: Callable[[int, int], None] | None,
    record_events: bool,
    core: str = "auto",
) -> Result:
    """`simulate` once its workload, scheduler and configuration are settled: the run and the
    parameters its result records."""
    kept = _KEPT.get()
    record_events = record_events or kept is not None
    sim = Simulator(
        workload.jobs,
        workload.make_cluster(),
        workload.model,
        scheduler,
        make_placement(placement or workload.placement),
        config,
        workload_name=workload.name,
        on_job_finished=on_job_finished,
        record_events=record_events,
    )
    if core not in ("auto", "python", "compiled"):
        raise ValueError(f"core must be 'auto', 'python' or 'compiled', got {core!r}")
    result, name = _compiled(sim, core)
    ran = "python" if result is None else name
    if result is None:
        with _tracing(scheduler, record_events) as trace:
            result = sim.run()
    else:
        trace = None
    result.decision_trace = None if trace is None else trace.as_dict()
    moves = f"on ({sim.repacked} moves)" if config.repack else "off"
    result.params = {**workload.params, "speed_model": speed_model(workload), "repack": moves}
    if core == "compiled" or ran != "python":
        result.params["core"] = ran
    if kept is not None:
        kept.append(result)
    return result


def _compiled(sim: Simulator, core: str) -> tuple[Result | None, str]:
    """``sim``'s result by a compiled core (LAS's, which replays Tiresias too, or FIFO's), or
    None where ``core`` (`simulate`) runs the simulator (logged when the core was asked for and
    does not apply); and the core's name for ``params["core"]``."""
    if core != "compiled" and _no_core(sim):
        return None, "python"  # not worth importing the cores (~20 ms CPU)
    from dlsched.sim import fifo_core_run, gavel_core_run, las_core_run

    fifo = sim.scheduler.name == "fifo"
    chosen: Any = fifo_core_run if fifo else las_core_run
    name = "compiled FIFO" if fifo else las_core_run.label(sim)
    if gavel_core_run.policy(sim) is not None:  # one of Gavel's LP policies
        chosen, name = gavel_core_run, gavel_core_run.label(sim)
    if core == "python" or (core == "auto" and not chosen.worth_it(sim)):
        return None, name
    why = None if core == "auto" else chosen.unsupported(sim)  # (`worth_it` checked it)
    if why is None:
        result = chosen.run(sim)
        if result is not None:
            return result, name
        why = "the run stalled"
    log.info("%s core not used: %s", name, why)
    return None, name


def _no_core(sim: Simulator) -> bool:
    """True where no compiled core can replay ``sim``, seen without importing them: its
    scheduler is none of the classes they replay nor one of Gavel's LP policies
    (``round_core``, `gavel_core_run`)."""
    kind = type(sim.scheduler)
    if kind.__module__ in _CORE_MODULES:
        return False
    return getattr(kind, "round_core", None) is None


_CORE_MODULES = frozenset(
    {"dlsched.schedulers.las", "dlsched.schedulers.tiresias", "dlsched.schedulers.fifo"}
)
"""The modules of the only schedulers a compiled core replays (`las_core_run._POLICIES`,
`fifo_core_run.unsupported`: by exact class, all in these modules)."""


@contextmanager
def _tracing(scheduler: Scheduler, on: bool) -> Iterator[DecisionTrace | None]:
    """With ``on``, a `DecisionTrace` set on ``scheduler`` for the block when it is a learned
    policy's loop with none set (`SlotLoopScheduler.trace`); None otherwise."""
    if not on or getattr(scheduler, "trace", False) is not None:
        yield None
        return
    from dlsched.rl.decision_trace import DecisionTrace

    trace = DecisionTrace()
    setattr(scheduler, "trace", trace)  # noqa: B010 - an attribute of some schedulers only
    try:
        yield trace
    finally:
        setattr(scheduler, "trace", None)  # noqa: B010


def _without_cross_server_slowdown(workload: Workload) -> Workload:
    """``workload`` with every sensitivity of its `Locality` model 1 (no slowdown for jobs
    spread over servers), also under a heterogeneous cluster's `TypedSpeed`; any other workload
    as it is."""
    from dlsched.models.typed import TypedSpeed

    model = workload.model
    inner = model.inner if isinstance(model, TypedSpeed) else model
    if not isinstance(inner, Locality):
        return workload
    flat = Locality(inner.gpus_per_server, sensitivity={m: 1.0 for m in inner.sensitivity})
    typed = model.with_inner(flat) if isinstance(model, TypedSpeed) else flat
    return dataclasses.replace(workload, model=typed)


def _refuse_if_it_cannot_run(scheduler: Scheduler, workload: Workload) -> None:
    """Raise `CannotRun` with the scheduler's reason when it says it could never run
    ``workload``'s jobs (`dlsched.schedulers.base.BaseScheduler.cannot_run`)."""
    why = cannot_run(scheduler, workload.jobs, workload.servers)
    _refuse(getattr(scheduler, "name", type(scheduler).__name__), workload, why)


def _refuse(name: str, workload: Workload, why: str | None) -> None:
    """Raise `CannotRun` saying ``why`` scheduler ``name`` cannot run ``workload`` (if it can't)."""
    if why is not None:
        raise CannotRun(f"{name} cannot run the {workload.name} workload: {why}")


def speed_model(workload: Workload) -> str:
    """What decides the jobs' speeds in ``workload``'s runs, in words: the model's name, and for
    `Locality` whether jobs spread over servers are slowed down (under a heterogeneous
    cluster's `TypedSpeed`, its GPU types first)."""
    from dlsched.models.typed import TypedSpeed

    model = workload.model
    if isinstance(model, TypedSpeed):
        inner = speed_model(dataclasses.replace(workload, model=model.inner))
        return f"per GPU type ({', '.join(dict.fromkeys(model.server_types))}) x {inner}"
    if not isinstance(model, Locality):
        return str(getattr(model, "name", type(model).__name__))
    if all(s == 1.0 for s in model.sensitivity.values()):
        return "locality: cross-server slowdown off"
    source = "SCED² Fig. 1" if dict(model.sensitivity) == SENSITIVITY else "custom sensitivities"
    return f"locality: cross-server slowdown on ({source})"


def _rescale_cost(base: RescaleCost, restart_s: float | None) -> RescaleCost:
    """``base`` with its checkpoint-restart cost set to ``restart_s`` seconds (in restart mode,
    the resize cost too); ``base`` itself when ``restart_s`` is None."""
    if restart_s is None:
        return base
    if not math.isfinite(restart_s) or restart_s < 0:
        raise ValueError(f"restart_s must be a finite number of seconds >= 0, got {restart_s}")
    hot_s = restart_s if base.mode == "restart" else base.hot_s
    return dataclasses.replace(base, hot_s=hot_s, restart_s=restart_s)


def in_family(workload: str, made: frozenset[str]) -> bool:
    """Whether ``workload`` (a `Workload.name`: ``"pollux-6-tuned"``, ``"philly:6214e9"``) is
    one of the workload families ``made`` names (``{"pollux"}``, ``{"philly", "trace"}``)."""
    base = workload.partition(":")[0]
    return any(base == name or base.startswith(f"{name}-") for name in made)


def warn_if_not_made_for(scheduler: str, workload: str) -> None:
    """Log a warning, once per process and pair, when the registered ``scheduler`` is not meant
    for ``workload`` (by the workloads named in its registry ``setting``; ``dlsched list``)."""
    name, base = scheduler.partition(":")[0], workload.partition(":")[0]
    made = made_for(name)
    if made is None or in_family(workload, made) or (name, base) in _WARNED:
        return
    _WARNED.add((name, base))
    log.warning(
        "scheduler %r was made for the %s workload%s, not %r: its decisions may mean little here",
        name,
        ", ".join(sorted(made)),
        "s" if len(made) > 1 else "",
        base,
    )


def warn_if_out_of_setting(scheduler: Scheduler, workload: Workload) -> None:
    """Log a warning, once per process, scheduler, workload and set of differing parameters,
    when a trained policy runs outside the setting its card's ``trained_setting`` names (the
    rule: `dlsched.rl.setting`). Schedulers without a ``trained_setting`` attribute are silent."""
    from dlsched.rl.setting import describe, differences

    trained = getattr(scheduler, "trained_setting", None)
    found = differences(trained, workload.name, workload.params)
    if not trained or not found:
        return
    name = getattr(scheduler, "name", type(scheduler).__name__)
    key = (str(name), workload.name, *(f.partition(" ")[0] for f in found))
    if key in _WARNED_SETTING:
        return
    _WARNED_SETTING.add(key)
    log.warning(
        "scheduler %r was trained for %s; this run has %s: it runs outside the setting it was "
        "trained for",
        name,
        describe(trained),
        ", ".join(found),
    )
