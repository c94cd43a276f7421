"""Independent runs of a sweep on local worker processes.

A run is a plain `RunTask` (workload name, scheduler name, seed, options): each worker builds
the workload and the scheduler from their names (`run_task`), so nothing but names, numbers
and the `Result` crosses a process boundary, and the runs give the same numbers in a worker as
in this process. `run_task` is a module-level function, so any start method works (``fork``,
``spawn``, ``forkserver``). With ``fork`` (Linux's default) the policy and workload modules the
runs need are imported here first, so that every worker inherits them instead of importing them
again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlsched.runner import simulate
from dlsched.sim import Result

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunTask:
    """One run of a sweep, by names: what a worker process needs to redo it exactly."""

    workload: str
    scheduler: str
    seed: int
    options: dict[str, Any] = field(default_factory=dict)


def run_task(task: RunTask) -> Result:
    """Simulate one task (in whichever process calls it), labelled by its spec (`labelled`)."""
    return labelled(
        simulate(task.workload, task.scheduler, task.seed, **task.options), task.scheduler
    )


def labelled(result: Result, spec: object) -> Result:
    """``result`` with ``scheduler`` set to the spec it ran as, when that spec carries an
    argument (``deeprm:1.3``, ``sched2:runs/x/policy.pt``): two specs of one policy are two
    rows, JSON labels, per-job labels and plot bars, never one averaged row (issue 29). A plain
    name keeps the scheduler's own name; a scheduler object, its ``name``."""
    if isinstance(spec, str) and ":" in spec:
        result.scheduler = spec.strip()
    return result


def import_for(tasks: Sequence[RunTask]) -> None:
    """Import the scheduler and workload modules ``tasks`` need (nothing is built or read; an
    unknown name is left for its run to report)."""
    from dlsched.schedulers.registry import import_policy
    from dlsched.workloads.registry import workloads

    known = workloads()
    for name in dict.fromkeys(task.scheduler for task in tasks):
        import_policy(name)
    for name in dict.fromkeys(task.workload.partition(":")[0] for task in tasks):
        if name in known:
            known[name].function()


def run_in_processes(
    tasks: Sequence[RunTask],
    workers: int,
    *,
    start_method: str | None = None,
    on_run: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Run ``tasks`` on ``workers`` local processes; the results in the order of ``tasks``.

    Args:
        tasks: the runs.
        workers: processes (at least 2 is the point; more than ``len(tasks)`` are not started).
        start_method: ``"fork"``, ``"spawn"`` or ``"forkserver"``; default the platform's.
        on_run: called in this process with each result as it arrives (completion order).

    Raises:
        the first failed run's exception; the runs not started yet are cancelled.
    """
    import multiprocessing  # here: a single run (`labelled`) needs no process pool
    from concurrent.futures import Future, ProcessPoolExecutor, as_completed

    context = multiprocessing.get_context(start_method)
    workers = max(1, min(workers, len(tasks)))
    if context.get_start_method() == "fork":
        import_for(tasks)
    log.info("%d runs on %d %s worker processes", len(tasks), workers, context.get_start_method())
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures: list[Future[Result]] = [pool.submit(run_task, task) for task in tasks]
        try:
            for future in as_completed(futures):
                result = future.result()
                if on_run is not None:
                    on_run(result)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        return [future.result() for future in futures]
