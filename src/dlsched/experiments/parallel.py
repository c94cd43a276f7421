"""Independent runs of a sweep on local worker processes.

A run is a plain `RunTask` (workload name, scheduler name, seed, options): each worker builds
the workload and the scheduler from their names (`run_task`), so nothing but names, numbers
and the `Result` crosses a process boundary, and the runs give the same numbers in a worker as
in this process. `run_task` is a module-level function, so any start method works (``fork``,
``spawn``, ``forkserver``).

What keeps a sweep's cost in its runs (issue 31, point 3):

* **long-lived workers**: one process per worker for the whole sweep, each running many runs,
  each with its own pipe and one chunk at a time: a worker starts on its first chunk as soon as
  it is started, while the parent starts the next (`concurrent.futures.ProcessPoolExecutor`,
  with ``fork``, starts every worker before any gets work), and each next chunk is chosen
  with every cost known so far;
* **chunked tasks** (`Dispatch`): short runs go out in chunks, large first and single runs
  last ("guided" scheduling), so that the pool's per-submission cost is paid per chunk while
  the last runs still balance the workers; a chunk stops growing once its runs' expected CPU
  reaches `CHUNK_CPU_S` (a run of unknown cost goes alone), so that runs long enough to pay
  their own submission are never tied together (two costly runs in one late chunk were what
  kept 16 workers waiting at the end of a sweep); once a (workload, scheduler)'s first runs
  are back, its runs go out costliest first (longest processing time first, from the CPU
  seconds its runs took), so that the sweep does not end waiting on one long run;
* **compact results** (`dlsched.experiments.packing`): a run's `Result` comes back as typed
  arrays, about half the pickling and unpickling of the `Result` itself;
* **warm workers**: with ``fork`` (Linux's default) the parent first imports the policy and
  workload modules the runs need and builds the first run's workload once (`warm_up`), so that
  every worker inherits the imports and the caches that workload filled (DL2's interpolated
  speed tables, a trace's parsed columns) instead of making them again.
"""

from __future__ import annotations

import gc
import inspect
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlsched.experiments.packing import pack, unpack
from dlsched.runner import simulate
from dlsched.sim import Result

log = logging.getLogger(__name__)

GUIDED_SHARE = 2
"""A chunk is the runs not yet handed out ÷ (this × workers), at least 1: the first chunks give
every worker several runs at once, the last ones single runs (nothing left idle for long)."""

CHUNK_CPU_S = 0.02
"""CPU seconds of runs (as expected from their group's runs so far) at which a chunk is full:
a round trip to a worker costs well under a millisecond on one machine, so longer runs go out
one at a time (balance first) and only runs shorter than this share a chunk."""


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


def run_chunk(tasks: Sequence[RunTask]) -> list[tuple[tuple[Any, ...], float]]:
    """Run ``tasks`` one after the other (in a worker): each result packed (`pack`), with the
    CPU seconds its run took."""
    out = []
    for task in tasks:
        cpu = time.process_time()
        result = run_task(task)
        out.append((pack(result), time.process_time() - cpu))
    return out


def labelled(result: Result, spec: object) -> Result:
    """``result`` with ``scheduler`` set to the spec it ran as, when that spec carries an
    argument (``deeprm:1.3``, ``sched2:runs/x/policy.pt``): two specs of one policy are two
    rows, JSON labels, per-job labels and plot bars, never one averaged row (issue 29). A plain
    name keeps the scheduler's own name; a scheduler object, its ``name``."""
    if isinstance(spec, str) and ":" in spec:
        result.scheduler = spec.strip()
    return result


class Dispatch:
    """Which runs go out next: chunks of at most the runs left ÷ (`GUIDED_SHARE` × ``workers``),
    rounded up, and of at most `CHUNK_CPU_S` expected CPU (plus the run that reaches it), the
    costliest runs first once their cost is known.

    The runs are grouped by (workload, scheduler); a group's cost is the mean CPU seconds of its
    runs that came back (`done`). The next run is taken from the group of highest cost; a group
    with none back counts as the costliest (ties: the run given first) and its run as long
    (a chunk of its own), so the first runs go out one by one in the order given and every
    group is sampled early.
    """

    def __init__(self, tasks: Sequence[RunTask], workers: int) -> None:
        self.workers = max(1, workers)
        self.left = len(tasks)
        self.groups: dict[tuple[str, str], deque[int]] = {}
        self.key_of = [(task.workload, task.scheduler) for task in tasks]
        for index, key in enumerate(self.key_of):
            self.groups.setdefault(key, deque()).append(index)
        self.cost: dict[tuple[str, str], tuple[float, int]] = {}  # (CPU s summed, runs)

    def done(self, index: int, cpu_s: float) -> None:
        """Run ``index`` came back after ``cpu_s`` CPU seconds."""
        total, runs = self.cost.get(self.key_of[index], (0.0, 0))
        self.cost[self.key_of[index]] = (total + cpu_s, runs + 1)

    def _costliest(self) -> tuple[str, str]:
        def rank(key: tuple[str, str]) -> tuple[float, int]:
            total, runs = self.cost.get(key, (0.0, 0))
            return (total / runs if runs else math.inf, -self.groups[key][0])

        return max((key for key, group in self.groups.items() if group), key=rank)

    def next_chunk(self) -> list[int]:
        """The next runs to send (empty when none are left)."""
        size = math.ceil(self.left / (GUIDED_SHARE * self.workers))
        chunk: list[int] = []
        expected_s = 0.0
        while len(chunk) < size and expected_s < CHUNK_CPU_S:
            key = self._costliest()
            total, runs = self.cost.get(key, (math.inf, 1))
            chunk.append(self.groups[key].popleft())
            expected_s += total / runs
        self.left -= len(chunk)
        return chunk


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

    Each worker has its own pipe and one chunk at a time (`serve`): it gets its first chunk as
    soon as it is started, so the first workers run while the parent starts the others, and
    each next chunk is chosen (`Dispatch`) with every cost known so far. With ``fork`` the
    parent's objects are frozen (`gc.freeze`) while it forks, so that the workers' garbage
    collector leaves the objects they inherit alone (fewer pages copied after the fork).

    Args:
        tasks: the runs.
        workers: processes (at least 2 is the point; more than ``len(tasks)`` are not started).
        start_method: ``"fork"``, ``"spawn"`` or ``"forkserver"``; default the platform's.
        on_run: called in this process with each result as it arrives (completion order; the
            runs of one chunk arrive together).

    Raises:
        the first failed run's exception (the other workers are stopped); RuntimeError when a
        worker process dies without answering.
    """
    import multiprocessing  # here: a single run (`labelled`) needs no process pool
    from multiprocessing.connection import wait

    context: Any = multiprocessing.get_context(start_method)
    workers = max(1, min(workers, len(tasks)))
    forking = context.get_start_method() == "fork"
    if forking:
        warm_up(tasks)
    log.info("%d runs on %d %s worker processes", len(tasks), workers, context.get_start_method())
    results: list[Result | None] = [None] * len(tasks)
    dispatch = Dispatch(tasks, workers)
    busy: dict[Any, list[int]] = {}  # a worker's pipe -> the runs it has
    processes: list[Any] = []
    finished = False
    if forking:
        gc.freeze()
    try:
        while dispatch.left and len(processes) < workers:
            chunk = dispatch.next_chunk()
            pipe, their_end = context.Pipe()
            process = context.Process(target=serve, args=(their_end,), daemon=True)
            process.start()
            their_end.close()
            processes.append(process)
            pipe.send([tasks[i] for i in chunk])
            busy[pipe] = chunk
        if forking:
            gc.unfreeze()
            forking = False
        while busy:
            ready: list[Any] = wait(list(busy))
            for pipe in ready:
                chunk = busy.pop(pipe)
                answer = _answer(pipe, processes)
                for i, (_, cpu_s) in zip(chunk, answer, strict=True):
                    dispatch.done(i, cpu_s)
                if dispatch.left:  # the worker's next chunk before this one's unpacking
                    busy[pipe] = dispatch.next_chunk()
                    pipe.send([tasks[i] for i in busy[pipe]])
                else:
                    pipe.send(None)  # not EOF: the workers forked later hold this pipe too
                for i, (packed, _) in zip(chunk, answer, strict=True):
                    results[i] = result = unpack(packed)
                    if on_run is not None:
                        on_run(result)
        finished = True
    finally:
        if forking:
            gc.unfreeze()
        _stop(processes, finished)
    done = [r for r in results if r is not None]
    if len(done) != len(tasks):  # pragma: no cover - every chunk answered or raised above
        raise RuntimeError(f"{len(tasks) - len(done)} runs came back without a result")
    return done


def serve(pipe: Any) -> None:
    """A worker process: run each chunk of `RunTask`s received on ``pipe`` (`run_chunk`) and
    send back ``(True, its answer)`` or ``(False, the exception)``; stop at ``None``."""
    while (chunk := pipe.recv()) is not None:
        try:
            answer: tuple[bool, Any] = (True, run_chunk(chunk))
        except Exception as exc:
            answer = (False, exc)
        try:
            pipe.send(answer)
        except Exception as exc:  # an exception that does not pickle: its text instead
            pipe.send((False, RuntimeError(f"{type(answer[1]).__name__}: {exc}")))


def _answer(pipe: Any, processes: Sequence[Any]) -> list[tuple[tuple[Any, ...], float]]:
    """A worker's answer to its chunk: `run_chunk`'s list; raises what the chunk raised."""
    try:
        ok, answer = pipe.recv()
    except EOFError:
        for process in processes:
            process.join(timeout=0.1)  # whichever died is reaped by now
        codes = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
        raise RuntimeError(
            f"a worker process died without answering (exit codes {codes})"
        ) from None
    if not ok:
        raise answer
    return list(answer)


def _stop(processes: Sequence[Any], finished: bool) -> None:
    """Wait for the workers to end (each was sent ``None``) or, after a failure, end them."""
    for process in processes:
        if not finished and process.is_alive():
            process.terminate()
    for process in processes:
        process.join()


def run_dispatched(
    tasks: Sequence[RunTask],
    workers: int,
    submit: Callable[[list[RunTask]], Any],
    first_done: Callable[[list[Any]], Iterable[Any]],
    on_run: Callable[[Result], None] | None,
) -> list[Result]:
    """Run ``tasks`` in chunks (`Dispatch`) through ``submit`` (a chunk → a future of
    `run_chunk`'s answer), ``first_done`` giving the futures done among those it is given
    (waiting for one at least); the results in the order of ``tasks``.

    Raises:
        the first failed run's exception; the chunks in flight are cancelled.
    """
    results: list[Result | None] = [None] * len(tasks)
    dispatch = Dispatch(tasks, workers)
    in_flight: dict[Any, list[int]] = {}
    try:
        while dispatch.left or in_flight:
            while dispatch.left and len(in_flight) < workers + max(1, workers // 2):
                chunk = dispatch.next_chunk()  # every worker busy, a few chunks queued
                in_flight[submit([tasks[i] for i in chunk])] = chunk
            for future in first_done(list(in_flight)):
                chunk = in_flight.pop(future)
                for i, (packed, cpu_s) in zip(chunk, future.result(), strict=True):
                    dispatch.done(i, cpu_s)
                    results[i] = result = unpack(packed)
                    if on_run is not None:
                        on_run(result)
    except BaseException:
        for future in in_flight:
            future.cancel()
        raise
    done = [r for r in results if r is not None]
    if len(done) != len(tasks):  # pragma: no cover - every chunk answered or raised above
        raise RuntimeError(f"{len(tasks) - len(done)} runs came back without a result")
    return done
