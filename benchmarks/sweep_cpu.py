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
* ``fewer``: the pool with N - 1 workers (a core left to the parent);
* ``poolW`` (``pool8``, ``pool12``): the pool with W workers instead of N (its efficiency is
  the speed-up ÷ W): where the extra CPU a run begins;
* ``fresh``: every run in a process of its own, newly forked from the warm parent, at most N
  at once, the runs costliest first (by their CPU alone): a run in a young process, whenever
  in the timing it runs (a worker's age against the machine's state over the timing);
* ``recycleK`` (``recycle3``): the same, each process running K runs one after the other
  (the next costliest left, one at a time) before it ends and a new one is forked: workers
  replaced after K runs;
* ``trim``: the pool, each worker collecting its garbage and returning free heap to the
  system (`gc.collect`, glibc's ``malloc_trim(0)``) after each run, outside the run's CPU.

Printed per timing and per variant (range and median): wall (s), speed-up over alone and
efficiency (speed-up ÷ the variant's processes), CPU of all processes (s), CPU inside the runs
(s) and its ratio to the same runs alone, the per-run overhead ((all CPU − inside the runs) ÷
runs, ms, as `sweep_overhead.py`), the ratio split by scheduler, by a run's place in its worker
(first run or later) and by when it ran (its middle in the first or the second half of the
timing), and the processes' peak resident memory (``ru_maxrss``, median and largest); per
timing also the parent's CPU by part (forks, receiving, unpacking, warm-up, stopping; with its
minor faults), the machine's CPU split meanwhile (``/proc/stat``: user, system, idle, steal, …)
and, with ``--probe K``, the CPU of the first K runs rerun alone in the parent right after it ÷
the alone pass's (the machine's own state). ``--csv`` writes every run's figures. Every
variant's summaries but ``plain``'s are checked equal to the alone pass's (``fresh`` and
``recycleK`` send back each run's summary, computed in the child outside the run's CPU).

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
import re
import resource
import statistics
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from dlsched.cli_args import parse_seed_list
from dlsched.experiments import parallel
from dlsched.experiments.parallel import RunTask

_run_task = parallel.run_task
_serve = parallel.serve
_done = parallel.Dispatch.done
Row = tuple[int, float, int, float, float, int, int]
"""(task index, CPU s of the run, pid, start, end (`time.perf_counter`), minor faults after,
peak resident KiB after)"""


def _measured(task: RunTask) -> Any:
    cpu, start = time.process_time(), time.perf_counter()
    result = _run_task(task)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result.params["_bench"] = (
        time.process_time() - cpu,
        os.getpid(),
        start,
        time.perf_counter(),
        usage.ru_minflt,
        usage.ru_maxrss,
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


Check = Callable[[], list[Any]] | None
"""The runs' summaries in the order of the tasks, computed after the timing; None: no check."""


def _pool(tasks: list[RunTask], workers: int) -> tuple[list[Row], Check]:
    out = parallel.run_in_processes(tasks, workers, start_method="fork")
    index = {(t.scheduler, t.seed): i for i, t in enumerate(tasks)}
    rows = [(index[(r.scheduler, r.seed)], *r.params.pop("_bench")) for r in out]
    return rows, lambda: [_summary(r) for r in out]


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
        rows.append((i, *_measured(tasks[i]).params["_bench"]))
    pipe.send(rows)


def _plain(tasks: list[RunTask], workers: int) -> tuple[list[Row], Check]:
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


def _trim_serve(pipe: Any) -> None:
    import ctypes

    libc = ctypes.CDLL("libc.so.6")

    def trimmed(task: RunTask) -> Any:
        result = _measured(task)
        gc.collect()
        libc.malloc_trim(0)
        return result

    parallel.run_task = trimmed
    _serve(pipe)


def _child(tasks: list[RunTask], runs: int, pipe: Any) -> None:
    """A ``fresh``/``recycleK`` process: up to ``runs`` runs, each index received on ``pipe``,
    each answered with (its row, its summary); ends early at None."""
    for _ in range(runs):
        i = pipe.recv()
        if i is None:
            break
        result = _measured(tasks[i])
        pipe.send(((i, *result.params.pop("_bench")), _summary(result)))


def _recycled(tasks: list[RunTask], workers: int, runs: int) -> tuple[list[Row], Check]:
    """``tasks`` on at most ``workers`` processes at once, each forked from this one for
    ``runs`` runs (`_child`), one run at a time, the costliest (alone) first."""
    from multiprocessing.connection import wait

    context = multiprocessing.get_context("fork")
    left = deque(sorted(range(len(tasks)), key=lambda i: -_ALONE[i]))
    done: dict[Any, int] = {}  # a process's pipe -> its runs so far
    processes: dict[Any, Any] = {}
    rows: list[Row] = []
    summaries: list[Any] = [None] * len(tasks)
    while left or processes:
        while left and len(processes) < workers:
            pipe, theirs = context.Pipe()
            gc.freeze()  # as the pool: the child's collector leaves what it inherits alone
            process = context.Process(target=_child, args=(tasks, runs, theirs), daemon=True)
            process.start()
            gc.unfreeze()
            theirs.close()
            pipe.send(left.popleft())
            processes[pipe], done[pipe] = process, 0
        ready: list[Any] = wait(list(processes))
        for pipe in ready:
            row, summary = pipe.recv()
            rows.append(row)
            summaries[row[0]] = summary
            done[pipe] += 1
            if done[pipe] < runs and left:
                pipe.send(left.popleft())
                continue
            if done[pipe] < runs:
                pipe.send(None)
            processes.pop(pipe).join()
            pipe.close()
    return rows, lambda: summaries


_ALONE: list[float] = []
"""Each task's CPU s alone (the alone pass): the order of ``fresh`` and ``recycleK``."""


def _workers_of(name: str, workers: int) -> int:
    """The processes variant ``name`` runs at once when N is ``workers``."""
    if name == "fewer":
        return workers - 1
    match = re.fullmatch(r"pool(\d+)", name)
    return int(match.group(1)) if match else workers


def _variant(name: str, tasks: list[RunTask], workers: int) -> tuple[list[Row], Check]:
    """Run ``tasks`` the way ``name`` says; (rows, the summaries' check)."""
    global _SLOT
    if name == "plain":
        return _plain(tasks, workers)
    if name == "fewer" or re.fullmatch(r"pool\d+", name):
        return _pool(tasks, _workers_of(name, workers))
    if name == "fresh" or re.fullmatch(r"recycle\d+", name):
        return _recycled(tasks, workers, 1 if name == "fresh" else int(name[len("recycle") :]))
    patches: dict[str, Callable[..., Any]] = {}
    if name == "trim":
        patches["serve"] = _trim_serve
    elif name == "pinned":
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
    rows, check = _variant(name, tasks, workers)
    wall = time.perf_counter() - wall
    parent = _cpu(resource.RUSAGE_SELF) - parent
    cpu_all = _cpu(resource.RUSAGE_SELF) + _cpu(resource.RUSAGE_CHILDREN) - cpu_all
    for field, before, after in zip(_STAT_FIELDS, machine, _machine(), strict=False):
        _PARENT[f"machine {field}"] = [after - before, 0.0, 0.0]
    if check is not None and check() != reference:  # not timed
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
    peak: dict[int, int] = {}  # a process -> its peak resident KiB
    for row in rows:
        peak[row[2]] = max(peak.get(row[2], 0), row[6])
    figures["rss_mb"] = statistics.median(peak.values()) / 1024
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
        f"{len(peak)} processes, peak RSS median {figures['rss_mb']:.0f} MB, largest "
        f"{max(peak.values()) / 1024:.0f} MB; ratio by part: {', '.join(parts)}",
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
    parser.add_argument(
        "--probe",
        type=int,
        default=0,
        help="after each timing, rerun the first PROBE runs alone in the parent and print their "
        "CPU ÷ the alone pass's (has the machine itself slowed down?)",
    )
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
    _ALONE[:] = alone
    reference = [_summary(r) for r in alone_results]
    del alone_results  # the parent forks lighter
    print(f"alone: {len(tasks)} runs, wall {alone_wall:.2f} s, CPU in runs {sum(alone):.2f} s")
    variants = args.variants.split(",")
    figures: dict[str, list[dict[str, float]]] = {}
    sink = open(args.csv, "w", newline="", buffering=1) if args.csv else io.StringIO()  # noqa: SIM115
    out = csv.writer(sink)  # line-buffered: a timeout keeps the rows written
    out.writerow(["variant", "rep", "task", "cpu_s", "pid", "start", "end", "minflt", "maxrss_kib"])
    out.writerows(("alone", 0, i, cpu, 0, 0.0, 0.0, 0, 0) for i, cpu in enumerate(alone))
    for rep in range(args.repeat):
        for name in variants[rep % len(variants) :] + variants[: rep % len(variants)]:
            rows, timing = _timing(name, tasks, args.workers, reference)
            figures.setdefault(name, []).append(
                _report(
                    f"{name} #{rep + 1}",
                    rows,
                    alone,
                    tasks,
                    alone_wall,
                    _workers_of(name, args.workers),
                    *timing,
                )
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
            if args.probe:
                probe = [(i, *_measured(tasks[i]).params["_bench"]) for i in range(args.probe)]
                out.writerows((f"probe after {name}", rep + 1, *row) for row in probe)
                ratio = sum(r[1] for r in probe) / sum(alone[r[0]] for r in probe)
                figures[name][-1]["probe"] = ratio
                print(f"  probe: {len(probe)} runs alone after it, {ratio:.3f} x alone", flush=True)
    print(f"load average {os.getloadavg()}; summaries equal to alone: yes (all but plain)")
    for name, timings in figures.items():
        line = ", ".join(
            f"{key} {min(t[key] for t in timings):.3f}-{max(t[key] for t in timings):.3f} "
            f"(median {statistics.median(t[key] for t in timings):.3f})"
            for key in ("wall", "efficiency", "ratio", "overhead_ms", "rss_mb", "probe")
            if key in timings[0]
        )
        print(f"{name}, {len(timings)} timings: {line}")
    sink.close()


if __name__ == "__main__":
    main()
