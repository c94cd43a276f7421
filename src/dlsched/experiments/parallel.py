"""Independent runs of a sweep on local worker processes.

A run is a plain `RunTask` (workload name, scheduler name, seed, options): each worker builds
the workload and the scheduler from their names (`run_task`), so nothing but names, numbers
and the `Result` crosses a process boundary, and the runs give the same numbers in a worker as
in this process. `run_task` is a module-level function, so any start method works (``fork``,
``spawn``, ``forkserver``).

What keeps a sweep's cost in its runs (issue 31, point 3):

* **long-lived workers**: one pool of processes for the whole sweep, each running many runs;
* **chunked tasks** (`chunks`): the runs go out in chunks, large first and single runs last
  ("guided" scheduling), so that the pool's per-submission cost is paid per chunk while the
  last runs still balance the workers;
* **compact results** (`dlsched.experiments.packing`): a run's `Result` comes back as typed
  arrays, about half the pickling and unpickling of the `Result` itself;
* **warm workers**: with ``fork`` (Linux's default) the parent first imports the policy and
  workload modules the runs need and builds the first run's workload once (`warm_up`), so that
  every worker inherits the imports and the caches that workload filled (DL2's interpolated
  speed tables, a trace's parsed columns) instead of making them again.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlsched.experiments.packing import pack, unpack
from dlsched.runner import simulate
from dlsched.sim import Result

log = logging.getLogger(__name__)

GUIDED_SHARE = 2
"""A chunk is the runs not yet handed out ÷ (this × workers), at least 1: the first chunks give
every worker several runs at once, the last ones single runs (nothing left idle for long)."""


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


def run_chunk(tasks: Sequence[RunTask]) -> list[tuple[Any, ...]]:
    """Run ``tasks`` one after the other (in a worker); their results packed (`pack`)."""
    return [pack(run_task(task)) for task in tasks]


def labelled(result: Result, spec: object) -> Result:
    """``result`` with ``scheduler`` set to the spec it ran as, when that spec carries an
    argument (``deeprm:1.3``, ``sched2:runs/x/policy.pt``): two specs of one policy are two
    rows, JSON labels, per-job labels and plot bars, never one averaged row (issue 29). A plain
    name keeps the scheduler's own name; a scheduler object, its ``name``."""
    if isinstance(spec, str) and ":" in spec:
        result.scheduler = spec.strip()
    return result


def chunks(count: int, workers: int) -> Iterator[range]:
    """Consecutive index ranges covering ``range(count)``: each the runs left ÷
    (`GUIDED_SHARE` × ``workers``), rounded up (so at least 1)."""
    start = 0
    while start < count:
        size = math.ceil((count - start) / (GUIDED_SHARE * max(1, workers)))
        yield range(start, start + size)
        start += size


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


def warm_up(tasks: Sequence[RunTask]) -> None:
    """Import what ``tasks`` need (`import_for`) and build the first task's workload once, in
    this process: what that fills (imports, module caches) is then inherited by forked workers.
    Nothing is kept; a failure is left for the run itself to report."""
    from dlsched.workloads.registry import make_workload

    import_for(tasks)
    if not tasks:
        return
    task = tasks[0]
    run_only = set(inspect.signature(simulate).parameters) - {"servers", "load"}
    options = {k: v for k, v in task.options.items() if k not in run_only}
    try:
        make_workload(task.workload, seed=task.seed, **options)
    except Exception as exc:  # the run raises it again, where it belongs
        log.debug("warm-up of %s skipped: %s", task.workload, exc)


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
        on_run: called in this process with each result as it arrives (completion order; the
            runs of one chunk arrive together).

    Raises:
        the first failed run's exception; the chunks not started yet are cancelled.
    """
    import multiprocessing  # here: a single run (`labelled`) needs no process pool
    from concurrent.futures import Future, ProcessPoolExecutor, as_completed

    context = multiprocessing.get_context(start_method)
    workers = max(1, min(workers, len(tasks)))
    if context.get_start_method() == "fork":
        warm_up(tasks)
    log.info("%d runs on %d %s worker processes", len(tasks), workers, context.get_start_method())
    results: list[Result | None] = [None] * len(tasks)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures: dict[Future[list[tuple[Any, ...]]], range] = {
            pool.submit(run_chunk, [tasks[i] for i in part]): part
            for part in chunks(len(tasks), workers)
        }
        try:
            for future in as_completed(futures):
                for i, packed in zip(futures[future], future.result(), strict=True):
                    results[i] = result = unpack(packed)
                    if on_run is not None:
                        on_run(result)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    done = [r for r in results if r is not None]
    if len(done) != len(tasks):  # pragma: no cover - every chunk answered or raised above
        raise RuntimeError(f"{len(tasks) - len(done)} runs came back without a result")
    return done
