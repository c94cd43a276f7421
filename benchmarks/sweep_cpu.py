"""Where a ``--workers N`` sweep's extra CPU goes: each run's CPU alone and in N workers.

One warm process first runs the sweep alone (one run after the other, as ``--workers 1``),
recording each run's CPU seconds; then, alternately ``--repeat`` times, the same runs on N
processes in several ways (``--variants``), each run's CPU seconds measured inside the process
that ran it (`time.process_time` around `run_task`):

* ``pool``: ``compare --workers N`` as it is (`parallel.run_in_processes`);
* ``given``: the same pool, the runs handed out in the order given (guided chunks, no
  costliest-first order: `Dispatch.done` ignored), so the workers run a mix of schedulers at
  any moment instead of all the costliest at once;
* ``pinned``: the same pool, each worker held to one core of its own (`os.sched_setaffinity`;
  the parent is not pinned);
* ``nogc``: the same pool, the cyclic garbage collector off in the workers;
* ``plain``: N forked processes, each running every N-th run one after the other and sending
  back only its CPU times (no pool, no results): what the same runs cost with N at once;
* ``fewer``: the pool with N - 1 workers (a core left to the parent).

Printed per timing and per variant (range and median): wall (s), speed-up over alone and
efficiency (speed-up ÷ N), CPU of all processes (s), CPU inside the runs (s) and its ratio to the
same runs alone, the per-run overhead ((all CPU − inside the runs) ÷ runs, ms, as
`sweep_overhead.py`), and the ratio split by scheduler and by a run's place in its worker
(first run or later) and by when it ran (its middle in the first or the second half of the
timing); per timing also the parent's CPU by part (forks, receiving, unpacking, warm-up,
stopping; with its minor faults) and the machine's CPU split meanwhile (``/proc/stat``: user,
system, idle, steal, …). ``--csv`` writes every run's figures. Every pool variant's summaries are
checked equal to the alone pass's.

    PYTHONPATH=src python benchmarks/sweep_cpu.py -w dl2 \\
        --schedulers fifo,drf,srtf,optimus,efficient-srtf --seeds 1-20 --workers 16 --repeat 3
"""

from __future__ import annotations

import argparse
import csv
import gc
import io
import math
import multiprocessing
import os
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

from dlsched.cli_args import parse_seed_list
from dlsched.experiments import parallel
from dlsched.experiments.parallel import RunTask

_run_task = parallel.run_task
_serve = parallel.serve
_done = parallel.Dispatch.done
Row = tuple[int, float, int, float, float, int]
"""(task index, CPU s of the run, pid, start, end (`time.perf_counter`), minor faults after)"""


def _measured(task: RunTask) -> Any:
    cpu, start = time.process_time(), time.perf_counter()
    result = _run_task(task)
    result.params["_bench"] = (
        time.process_time() - cpu,
        os.getpid(),
        start,
        time.perf_counter(),
        resource.getrusage(resource.RUSAGE_SELF).ru_minflt,
    )
    return result


_PARENT: dict[str, list[float]] = {}
"""The parent's CPU s and minor faults in each part of a pool's sweep: [CPU, faults, calls]."""


def _timed_part(part: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        me = resource.getrusage(resource.RUSAGE_SELF)
        try:
            return function(*args, **kwargs)
        finally:
            after = resource.getrusage(resource.RUSAGE_SELF)
            figures = _PARENT.setdefault(part, [0.0, 0.0, 0.0])
            figures[0] += after.ru_utime + after.ru_stime - me.ru_utime - me.ru_stime
            figures[1] += after.ru_minflt - me.ru_minflt
            figures[2] += 1

    return timed


def _time_parent_parts() -> None:
    """Wrap the parent's parts of `run_in_processes` to add their CPU and faults to `_PARENT`."""
    from multiprocessing.process import BaseProcess

    parallel.warm_up = _timed_part("warm-up", parallel.warm_up)
    parallel.unpack = _timed_part("unpack", parallel.unpack)
    parallel._stop = _timed_part("stop", parallel._stop)
    parallel._answer = _timed_part("receive", parallel._answer)
    BaseProcess.start = _timed_part("fork", BaseProcess.start)  # type: ignore[method-assign]


_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _machine() -> list[float]:
    """The machine's CPU seconds so far, by `_STAT_FIELDS` (``/proc/stat``; empty elsewhere)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1 : 1 + len(_STAT_FIELDS)]
    except OSError:
        return []
    ticks = os.sysconf("SC_CLK_TCK")
    return [int(v) / ticks for v in fields]


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _summary(result: Any) -> tuple[Any, ...]:
    return tuple(
        (k, "nan" if isinstance(v, float) and math.isnan(v) else v)
        for k, v in result.summary().items()
        if k != "wall_s"
    )


def _pool(tasks: list[RunTask], workers: int) -> tuple[list[Row], list[Any]]:
    out = parallel.run_in_processes(tasks, workers, start_method="fork")
    index = {(t.scheduler, t.seed): i for i, t in enumerate(tasks)}
    rows = []
    for r in out:
        cpu, pid, start, end, faults = r.params.pop("_bench")
        rows.append((index[(r.scheduler, r.seed)], cpu, pid, start, end, faults))
    return rows, out


_SLOT: Any = None


def _pinned_serve(pipe: Any) -> None:
    with _SLOT.get_lock():
        slot = _SLOT.value
        _SLOT.value += 1
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[slot % len(cpus)]})
    _serve(pipe)


def _nogc_serve(pipe: Any) -> None:
    gc.disable()
    _serve(pipe)


def _share(tasks: list[RunTask], part: int, parts: int, pipe: Any) -> None:
    rows = []
    for i in range(part, len(tasks), parts):
        r = _measured(tasks[i])
        cpu, pid, start, end, faults = r.params["_bench"]
        rows.append((i, cpu, pid, start, end, faults))
    pipe.send(rows)


def _plain(tasks: list[RunTask], workers: int) -> tuple[list[Row], None]:
    context = multiprocessing.get_context("fork")
    pipes, procs = [], []
    for part in range(workers):
        mine, theirs = context.Pipe()
        proc = context.Process(target=_share, args=(tasks, part, workers, theirs))
        proc.start()
        pipes.append(mine)
        procs.append(proc)
    rows = [row for pipe in pipes for row in pipe.recv()]
    for proc in procs:
        proc.join()
    return rows, None


def _variant(name: str, tasks: list[RunTask], workers: int) -> tuple[list[Row], Any]:
    """Run ``tasks`` the way ``name`` says; (rows, the results or None)."""
    global _SLOT
    if name == "plain":
        return _plain(tasks, workers)
    if name == "fewer":
        return _pool(tasks, workers - 1)
    patches: dict[str, Callable[..., Any]] = {}
    if name == "pinned":
        _SLOT = multiprocessing.get_context("fork").Value("i", 0)
        patches["serve"] = _pinned_serve
    elif name == "nogc":
        patches["serve"] = _nogc_serve
    elif name == "given":
        parallel.Dispatch.done = lambda self, index, cpu_s: None  # type: ignore[method-assign]
    elif name != "pool":
        raise SystemExit(f"--variants: unknown variant {name!r}")
    for attr, value in patches.items():
        setattr(parallel, attr, value)
    try:
        return _pool(tasks, workers)
    finally:
        parallel.serve = _serve
        parallel.Dispatch.done = _done  # type: ignore[method-assign]


def _timing(
    name: str, tasks: list[RunTask], workers: int, reference: list[Any]
) -> tuple[list[Row], tuple[float, float, float]]:
    """One timing of variant ``name``: its rows and (wall s, CPU s of all, CPU s of the parent);
    the parent's parts in `_PARENT`."""
    _PARENT.clear()
    machine = _machine()
    parent = _cpu(resource.RUSAGE_SELF)
    cpu_all, wall = parent + _cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
    rows, results = _variant(name, tasks, workers)
    wall = time.perf_counter() - wall
    parent = _cpu(resource.RUSAGE_SELF) - parent
    cpu_all = _cpu(resource.RUSAGE_SELF) + _cpu(resource.RUSAGE_CHILDREN) - cpu_all
    for field, before, after in zip(_STAT_FIELDS, machine, _machine(), strict=False):
        _PARENT[f"machine {field}"] = [after - before, 0.0, 0.0]
    if results is not None and [_summary(r) for r in results] != reference:  # not timed
        raise SystemExit(f"{name}: the runs' summaries differ from the runs alone")
    return rows, (wall, cpu_all, parent)


def _report(
    label: str,
    rows: list[Row],
    alone: list[float],
    tasks: list[RunTask],
    alone_wall: float,
    workers: int,
    wall: float,
    cpu_all: float,
    parent: float,
) -> dict[str, float]:
    inside = sum(row[1] for row in rows)
    alone_sum = sum(alone[row[0]] for row in rows)
    speedup = alone_wall / wall
    figures = {
        "wall": wall,
        "speedup": speedup,
        "efficiency": speedup / workers,
        "cpu_all": cpu_all,
        "inside": inside,
        "ratio": inside / alone_sum,
        "overhead_ms": (cpu_all - inside) / len(tasks) * 1000,
        "parent": parent,
    }
    first: dict[int, int] = {}  # a worker (pid) -> its first run
    for row in sorted(rows, key=lambda row: row[3]):
        first.setdefault(row[2], row[0])
    split = {"first": [r for r in rows if first[r[2]] == r[0]]}
    split["later"] = [r for r in rows if first[r[2]] != r[0]]
    begin, end = min(r[3] for r in rows), max(r[4] for r in rows)
    split["early half"] = [r for r in rows if r[3] + r[4] < begin + end]  # by the run's middle
    split["late half"] = [r for r in rows if r[3] + r[4] >= begin + end]
    for name in dict.fromkeys(t.scheduler for t in tasks):
        split[name] = [r for r in rows if tasks[r[0]].scheduler == name]
    parts = [
        f"{key} {sum(r[1] for r in part) / sum(alone[r[0]] for r in part):.2f}"
        for key, part in split.items()
        if part
    ]
    print(
        f"{label}: wall {wall:.3f} s, speed-up {speedup:.2f}x, efficiency "
        f"{figures['efficiency']:.2f}; CPU all {cpu_all:.2f} s, inside the runs {inside:.2f} s "
        f"= {figures['ratio']:.3f} x alone; overhead {figures['overhead_ms']:.2f} ms a run; "
        f"ratio by part: {', '.join(parts)}",
        flush=True,
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-w", "--workload", default="dl2")
    parser.add_argument("--schedulers", default="fifo,drf,srtf,optimus,efficient-srtf")
    parser.add_argument("--seeds", default="1-20")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--variants", default="pool,given,pinned,nogc,plain,fewer")
    parser.add_argument("--repeat", type=int, default=2, help="timings of each variant")
    parser.add_argument("--csv", help="write every run's figures here")
    args = parser.parse_args()
    names = args.schedulers.split(",")
    tasks = [RunTask(args.workload, n, s) for s in parse_seed_list(args.seeds) for n in names]
    _run_task(tasks[0])  # imports and caches, as in a sweep after its first run
    parallel.run_task = _measured  # the forked processes inherit it
    _time_parent_parts()
    print(f"cores: {os.cpu_count()}; load average {os.getloadavg()}", flush=True)
    wall = time.perf_counter()
    alone_results = [_measured(task) for task in tasks]
    alone_wall = time.perf_counter() - wall
    alone = [r.params.pop("_bench")[0] for r in alone_results]
    reference = [_summary(r) for r in alone_results]
    del alone_results  # the parent forks lighter
    print(f"alone: {len(tasks)} runs, wall {alone_wall:.2f} s, CPU in runs {sum(alone):.2f} s")
    variants = args.variants.split(",")
    figures: dict[str, list[dict[str, float]]] = {}
    sink = open(args.csv, "w", newline="", buffering=1) if args.csv else io.StringIO()  # noqa: SIM115
    out = csv.writer(sink)  # line-buffered: a timeout keeps the rows written
    out.writerow(["variant", "rep", "task", "cpu_s", "pid", "start", "end", "minflt"])
    out.writerows(("alone", 0, i, cpu, 0, 0.0, 0.0, 0) for i, cpu in enumerate(alone))
    for rep in range(args.repeat):
        for name in variants[rep % len(variants) :] + variants[: rep % len(variants)]:
            rows, timing = _timing(name, tasks, args.workers, reference)
            figures.setdefault(name, []).append(
                _report(f"{name} #{rep + 1}", rows, alone, tasks, alone_wall, args.workers, *timing)
            )
            out.writerows((name, rep + 1, *row) for row in rows)
            parts = ", ".join(
                f"{part} {cpu * 1000:.0f} ms ({faults:.0f} faults, {calls:.0f} calls)"
                for part, (cpu, faults, calls) in _PARENT.items()
                if not part.startswith("machine")
            )
            print(f"  parent CPU {timing[2] * 1000:.0f} ms: {parts}", flush=True)
            machine = ", ".join(
                f"{part.split()[1]} {cpu:.2f}"
                for part, (cpu, _, _) in _PARENT.items()
                if part.startswith("machine")
            )
            print(f"  the machine's CPU s meanwhile (/proc/stat): {machine}", flush=True)
    print(f"load average {os.getloadavg()}; summaries equal to alone: yes (pool variants)")
    for name, timings in figures.items():
        line = ", ".join(
            f"{key} {min(t[key] for t in timings):.3f}-{max(t[key] for t in timings):.3f} "
            f"(median {statistics.median(t[key] for t in timings):.3f})"
            for key in ("wall", "efficiency", "ratio", "overhead_ms")
        )
        print(f"{name}, {len(timings)} timings: {line}")
    sink.close()


if __name__ == "__main__":
    main()
