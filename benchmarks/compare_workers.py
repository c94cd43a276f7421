"""Wall time of one ``compare`` sweep on 1 and on N local worker processes, and the speed-up.

The sweep is the same for every count (``run_grid`` with ``workers=1`` and ``workers=N``); the
script checks that they all give the same summary numbers, bit for bit, and prints the wall
time of each (s), the CPU time this process and its worker processes used (s), the load
average of the machine before and after (a busy machine cannot give the speed-up of an idle
one), the ratio wall(1) / wall(N) and the efficiency wall(1) / (N × wall(N)) (1.0 is ideal).
``--workers`` takes one count or several (``1,2,4,8,16``). With ``--repeat R`` the counts are
timed alternately R times each; the best and the worst wall time of each are printed, the
speed-up from the best.

``--ceiling`` adds, for each N (or the counts given), the most N processes can gain on this
machine whatever the pool does: N forked processes, each running its share of the runs (every
N-th) one after the other, returning nothing. Two CPU-bound processes may each run slower than
one alone (cores that share a physical core or a clock budget on the host, caches): that ratio
bounds ``--workers N``.

``--per-task`` adds, for each N (or the counts given), the pool as it was before issue 31 (one
`ProcessPoolExecutor` submission per run, the whole `Result` pickled back, nothing built before
the fork); ``--executor``, the chunked `ProcessPoolExecutor` pool of 2026-11-26, before the
workers got their own pipes (`executor_pool`).

The parent runs one run first (imports, caches), so every timing starts warm: a sweep's cost
beyond its runs, not a process's start-up (``dlsched compare``'s whole process adds that).

    PYTHONPATH=src python benchmarks/compare_workers.py -w dl2 \\
        --schedulers fifo,drf,srtf,optimus,efficient-srtf --seeds 1-20 --workers 2 --ceiling
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import resource
import time
from typing import Any


def _cpu_s() -> float:
    """CPU time (user + system, s) of this process and its finished children so far."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _numbers(results: list[Any]) -> list[tuple[Any, ...]]:
    """The runs' summaries without their wall time; NaN as a string so that it compares."""
    return [
        tuple(
            (k, "nan" if isinstance(v, float) and math.isnan(v) else v)
            for k, v in r.summary().items()
            if k != "wall_s"
        )
        for r in results
    ]


def _per_task(tasks: list[Any], workers: int) -> list[Any]:
    """The pool before issue 31: one submission per run, whole `Result`s back."""
    from concurrent.futures import ProcessPoolExecutor

    from dlsched.experiments.parallel import run_task

    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [pool.submit(run_task, task) for task in tasks]
        return [future.result() for future in futures]


def executor_pool(tasks: list[Any], workers: int) -> list[Any]:
    """The pool of 2026-11-26 (before its own pipes): `ProcessPoolExecutor`, which forks every
    worker before any starts work, chunks as today (`run_dispatched`), several queued."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    from dlsched.experiments.parallel import run_chunk, run_dispatched, warm_up

    warm_up(tasks)
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return run_dispatched(
            tasks,
            workers,
            lambda chunk: pool.submit(run_chunk, chunk),
            lambda futures: wait(futures, return_when=FIRST_COMPLETED)[0],
            None,
        )


def _timed(kind: str, args: argparse.Namespace, seeds: list[int]) -> tuple[float, float, Any]:
    """(wall s, CPU s, results or None) of one sweep of ``kind``: ``"N"``, ``"N per-task"``,
    ``"N executor"``, ``"N plain"``."""
    from dlsched.experiments.compare import run_grid
    from dlsched.experiments.parallel import RunTask

    names = args.schedulers.split(",")
    workers = int(kind.split()[0])
    cpu, wall = _cpu_s(), time.perf_counter()
    if kind.endswith("plain"):
        _plain_processes(names, args.workload, seeds, workers)
        results = None
    elif kind.endswith("per-task") or kind.endswith("executor"):
        tasks = [RunTask(args.workload, name, seed) for seed in seeds for name in names]
        pool = _per_task if kind.endswith("per-task") else executor_pool
        results = pool(tasks, workers)
    else:
        results = run_grid(args.workload, names, seeds, workers=workers)
    return time.perf_counter() - wall, _cpu_s() - cpu, results


def _run_share(names: list[str], workload: str, seeds: list[int], part: int, parts: int) -> None:
    """Run every ``parts``-th (scheduler, seed) pair from ``part`` on, one after the other."""
    from dlsched.api import simulate

    pairs = [(seed, name) for seed in seeds for name in names]
    for seed, name in pairs[part::parts]:
        simulate(workload, name, seed)


def _plain_processes(names: list[str], workload: str, seeds: list[int], workers: int) -> None:
    """``workers`` forked processes each running its share, no pool, nothing sent back."""
    context = multiprocessing.get_context("fork")
    procs = [
        context.Process(target=_run_share, args=(names, workload, seeds, part, workers))
        for part in range(workers)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            raise SystemExit(f"a share process failed (exit code {proc.exitcode})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-w", "--workload", default="dl2")
    parser.add_argument("--schedulers", default="fifo,drf,srtf,optimus,efficient-srtf")
    parser.add_argument("--seeds", default="1-20")
    parser.add_argument("--workers", default="2", help="processes: one count or 1,2,4,8,16")
    parser.add_argument("--repeat", type=int, default=1, help="timings of each, best kept")
    parser.add_argument(
        "--ceiling",
        nargs="?",
        const="all",
        help="also time N plain processes sharing the runs (at every N, or at these: 4,16)",
    )
    parser.add_argument(
        "--per-task",
        nargs="?",
        const="all",
        help="also time the pool before issue 31 (at every N, or at these: 4,16)",
    )
    parser.add_argument(
        "--executor",
        nargs="?",
        const="all",
        help="also time the ProcessPoolExecutor pool of 2026-11-26 (at every N, or at these)",
    )
    parser.add_argument(
        "--no-baseline", action="store_true", help="no 1-worker timing (nor speed-ups)"
    )
    args = parser.parse_args()

    from dlsched.cli_args import parse_seed_list
    from dlsched.experiments.compare import run_grid

    seeds = parse_seed_list(args.seeds)
    runs = len(seeds) * len(args.schedulers.split(","))
    run_grid(args.workload, args.schedulers.split(",")[:1], seeds[:1])  # first-use imports
    load_before = os.getloadavg()
    counts = [int(n) for n in args.workers.split(",") if int(n) > 1]
    kinds = ([] if args.no_baseline else ["1"]) + [str(n) for n in counts]
    extras = (("per-task", args.per_task), ("executor", args.executor), ("plain", args.ceiling))
    for extra, option in extras:
        at = counts if option == "all" else [int(n) for n in (option or "").split(",") if n]
        kinds += [f"{n} {extra}" for n in at]
    timings: dict[str, list[tuple[float, float]]] = {}
    reference: list[tuple[Any, ...]] | None = None
    for _ in range(args.repeat):
        for kind in kinds:
            wall, cpu, results = _timed(kind, args, seeds)
            if results is not None:
                numbers = _numbers(results)
                if reference is None:
                    reference = numbers
                elif numbers != reference:
                    raise SystemExit(f"{kind} workers gave other numbers than 1 worker")
            print(
                f"{runs} runs, {kind} worker(s): wall {wall:.2f} s, CPU {cpu:.2f} s, "
                f"load average {os.getloadavg()[0]:.2f}",
                flush=True,
            )
            timings.setdefault(kind, []).append((wall, cpu))
    load_after = os.getloadavg()
    print(f"load average (1, 5, 15 min) before: {load_before}, after: {load_after}")
    print(f"cores: {os.cpu_count()}; summaries equal for every count of workers: yes")
    best = {kind: min(timings[kind]) for kind in kinds}
    for kind in kinds:
        walls = [wall for wall, _ in timings[kind]]
        line = f"{kind} worker(s): best wall {best[kind][0]:.2f} s (CPU {best[kind][1]:.2f} s), "
        line += f"worst {max(walls):.2f} s"
        if "1" in best:
            speedup = best["1"][0] / best[kind][0]
            line += f"; speed-up {speedup:.2f}x, efficiency {speedup / int(kind.split()[0]):.2f}"
        print(line)


if __name__ == "__main__":
    main()
