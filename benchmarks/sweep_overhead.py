"""Where the CPU of a ``--workers N`` sweep goes: inside the runs, around them, in the parent.

Runs the sweep on a ``ProcessPoolExecutor`` of N workers through a wrapper of
`dlsched.experiments.parallel.run_task` that measures, in the worker, the CPU time (s) of the
run itself and of pickling its `Result`, and the worker's own user/system CPU and minor page
faults at the end of each run. Printed: wall (s), the parent's CPU (s), the workers' CPU (s),
the sum of the CPU inside the runs (s), the pickling CPU (s), the pickled size of a `Result`,
and runs per worker. ``--freeze`` calls ``gc.freeze()`` before the fork (fewer copy-on-write
page faults in the workers).

    PYTHONPATH=src python benchmarks/sweep_overhead.py -w dl2 \\
        --schedulers fifo,drf,srtf,tetris,optimus --seeds 1-20 --workers 2
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import pickle
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from dlsched.cli_args import parse_seed_list
from dlsched.experiments.compare import run_grid
from dlsched.experiments.parallel import RunTask, import_for, run_task


def _measured(task: RunTask) -> tuple[Any, float, float, int, int, tuple[float, float, int]]:
    """(result, run CPU s, pickling CPU s, pickled bytes, pid, (user s, sys s, minor faults))."""
    cpu = time.process_time()
    result = run_task(task)
    run_cpu = time.process_time() - cpu
    cpu = time.process_time()
    size = len(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    pickle_cpu = time.process_time() - cpu
    me = resource.getrusage(resource.RUSAGE_SELF)
    return result, run_cpu, pickle_cpu, size, os.getpid(), (me.ru_utime, me.ru_stime, me.ru_minflt)


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-w", "--workload", default="dl2")
    parser.add_argument("--schedulers", default="fifo,drf,srtf,tetris,optimus")
    parser.add_argument("--seeds", default="1-20")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--freeze", action="store_true", help="gc.freeze() before the fork")
    args = parser.parse_args()
    names = args.schedulers.split(",")
    seeds = parse_seed_list(args.seeds)
    run_grid(args.workload, names[:1], seeds[:1])  # first-use imports and caches, as a sweep's
    tasks = [RunTask(args.workload, name, seed) for seed in seeds for name in names]
    import_for(tasks)
    if args.freeze:
        gc.freeze()
    parent, kids, wall = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN), time.time()
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(args.workers, mp_context=context) as pool:
        out = list(pool.map(_measured, tasks))
    wall = time.time() - wall
    parent = _cpu(resource.RUSAGE_SELF) - parent
    kids = _cpu(resource.RUSAGE_CHILDREN) - kids
    last: dict[int, tuple[float, float, int]] = {}
    for _, _, _, _, pid, usage in out:
        last[pid] = max(last.get(pid, usage), usage)
    print(f"load average (1, 5, 15 min): {os.getloadavg()}")
    print(
        f"{len(tasks)} runs on {args.workers} workers: wall {wall:.2f} s, parent CPU "
        f"{parent:.2f} s, workers CPU {kids:.2f} s, inside the runs "
        f"{sum(o[1] for o in out):.2f} s, pickling the results {sum(o[2] for o in out):.2f} s, "
        f"a pickled Result {sum(o[3] for o in out) / len(out) / 1000:.1f} kB"
    )
    for pid, (user, system, faults) in last.items():
        runs = sum(1 for o in out if o[4] == pid)
        print(f"worker {pid}: {runs} runs, user {user:.2f} s, sys {system:.2f} s, {faults} faults")


if __name__ == "__main__":
    main()
