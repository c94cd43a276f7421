"""Where the CPU of a ``--workers N`` sweep goes: inside the runs, around them, in the parent.

Runs the sweep through `dlsched.experiments.parallel.run_in_processes` (the path of
``compare --workers N``) with its `run_task` wrapped, in the workers, to measure the CPU time
(s) of each run itself and the worker's own user/system CPU and minor page faults after it
(carried back in the result's ``params``, which this script only reads). The parent has run
one run first (imports and caches warm, as in a sweep after the first).

Printed: wall (s), the parent's CPU (s), the workers' CPU (s), the CPU inside the runs (s),
the timeline (how long the workers waited for their first run, how long they were idle at the
end, the last runs to end and the costliest runs), and the **per-run overhead**: (parent's
CPU + workers' CPU − CPU inside the runs) ÷ runs, in ms: everything a run costs beyond itself
(starting and stopping the pool, sending the tasks, packing and pickling the results,
unpacking them in the parent, the parent's bookkeeping). ``--executor`` measures the
`ProcessPoolExecutor` pool of 2026-11-26 instead (`compare_workers.executor_pool`).

    PYTHONPATH=src python benchmarks/sweep_overhead.py -w dl2 \\
        --schedulers fifo,drf,srtf,optimus,efficient-srtf --seeds 1-20 --workers 2
"""

from __future__ import annotations

import argparse
import os
import resource
import time

from dlsched.cli_args import parse_seed_list
from dlsched.experiments import parallel
from dlsched.experiments.compare import run_grid
from dlsched.experiments.parallel import RunTask, run_in_processes
from dlsched.sim import Result

_run_task = parallel.run_task


def _measured(task: RunTask) -> Result:
    """`run_task`, with its CPU time, its start and end (`time.perf_counter`, one clock for
    every process of the machine) and this process's usage after it in ``params``."""
    cpu, start = time.process_time(), time.perf_counter()
    result = _run_task(task)
    me = resource.getrusage(resource.RUSAGE_SELF)
    result.params["_bench"] = (
        time.process_time() - cpu,
        os.getpid(),
        (me.ru_utime, me.ru_stime, me.ru_minflt),
        (start, time.perf_counter()),
    )
    return result


def _timeline(out: list[Result], begin: float, end: float, workers: int) -> None:
    """Where the workers' wall time went: waiting to start, running, idle at the end."""
    spans: dict[int, list[tuple[float, float]]] = {}
    for r in out:
        _, pid, _, span = r.params["_bench"]
        spans.setdefault(pid, []).append(span)
    first = sorted(min(s for s, _ in v) - begin for v in spans.values())
    last = sorted(end - max(e for _, e in v) for v in spans.values())
    running = sum(e - s for v in spans.values() for s, e in v)
    wall = end - begin
    print(
        f"timeline: {len(spans)} workers; first run started after {first[0]:.3f} s (first "
        f"worker) to {first[-1]:.3f} s (last); idle at the end {last[0]:.3f} to {last[-1]:.3f} "
        f"s; running {running:.2f} of {workers} x {wall:.2f} s = "
        f"{running / (workers * wall):.2f} of the workers' wall"
    )
    ends = sorted(out, key=lambda r: r.params["_bench"][3][1])[-4:]
    print(
        "the last runs to end: "
        + ", ".join(
            f"{r.scheduler} seed {r.seed} ({r.params['_bench'][0]:.2f} s CPU, ends at "
            f"{r.params['_bench'][3][1] - begin:.2f} s)"
            for r in ends
        )
    )
    costly = sorted(out, key=lambda r: -r.params["_bench"][0])[:3]
    print(
        "the costliest runs: "
        + ", ".join(
            f"{r.scheduler} seed {r.seed} {r.params['_bench'][0]:.2f} s CPU, from "
            f"{r.params['_bench'][3][0] - begin:.2f} s"
            for r in costly
        )
    )


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-w", "--workload", default="dl2")
    parser.add_argument("--schedulers", default="fifo,drf,srtf,optimus,efficient-srtf")
    parser.add_argument("--seeds", default="1-20")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--executor", action="store_true", help="the ProcessPoolExecutor pool of 2026-11-26"
    )
    parser.add_argument("-o", "--option", action="append", default=[], help="KEY=INT option")
    args = parser.parse_args()
    names = args.schedulers.split(",")
    seeds = parse_seed_list(args.seeds)
    options = {k: int(v) for k, v in (o.split("=", 1) for o in args.option)}
    run_grid(args.workload, names[:1], seeds[:1], **options)  # first-use imports and caches
    tasks = [RunTask(args.workload, name, seed, options) for seed in seeds for name in names]
    parallel.run_task = _measured  # the forked workers inherit it
    parent, kids = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    begin = time.perf_counter()
    if args.executor:
        from compare_workers import executor_pool  # this script's folder

        out = executor_pool(tasks, args.workers)
    else:
        out = run_in_processes(tasks, args.workers, start_method="fork")
    end = time.perf_counter()
    wall = end - begin
    parent = _cpu(resource.RUSAGE_SELF) - parent
    kids = _cpu(resource.RUSAGE_CHILDREN) - kids
    inside = sum(r.params["_bench"][0] for r in out)
    last: dict[int, tuple[float, float, int]] = {}
    for r in out:
        _, pid, usage, _ = r.params["_bench"]
        last[pid] = max(last.get(pid, usage), usage)
    print(f"load average (1, 5, 15 min): {os.getloadavg()}; cores: {os.cpu_count()}")
    print(
        f"{len(tasks)} runs on {args.workers} workers: wall {wall:.2f} s, parent CPU "
        f"{parent:.2f} s, workers CPU {kids:.2f} s, inside the runs {inside:.2f} s"
    )
    print(f"per-run overhead: {(parent + kids - inside) / len(tasks) * 1000:.2f} ms")
    _timeline(out, begin, end, args.workers)
    for pid, (user, system, faults) in last.items():
        runs = sum(1 for r in out if r.params["_bench"][1] == pid)
        print(f"worker {pid}: {runs} runs, user {user:.2f} s, sys {system:.2f} s, {faults} faults")


if __name__ == "__main__":
    main()
