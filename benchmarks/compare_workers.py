"""Wall time of one ``compare`` sweep on 1 and on N local worker processes, and the speed-up.

The sweep is the same for both (``run_grid`` with ``workers=1`` and ``workers=N``); the script
checks that the two give the same summary numbers, bit for bit, and prints the wall time of
each (s), the CPU time this process and its worker processes used (s), the load average of the
machine before and after (a busy machine cannot give the speed-up of an idle one) and the
ratio wall(1) / wall(N). With ``--repeat R`` the two are timed alternately R times each; the
best and the worst wall time of each are printed, the speed-up from the best.

``--ceiling`` adds a third timing, the most two processes can gain on this machine whatever the
pool does: N forked processes, each running its share of the runs (every N-th) one after the
other, returning nothing. Two CPU-bound processes may each run slower than one alone (cores that
share a physical core or a clock budget on the host, caches): that ratio bounds ``--workers N``.

    PYTHONPATH=src python benchmarks/compare_workers.py -w dl2 \\
        --schedulers fifo,drf,srtf,tetris,optimus --seeds 1-20 --workers 2
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


def _timed(workers: int, args: argparse.Namespace, seeds: list[int]) -> tuple[float, float, Any]:
    """(wall s, CPU s, results) of one sweep on ``workers`` processes."""
    from dlsched.experiments.compare import run_grid

    names = args.schedulers.split(",")
    cpu, wall = _cpu_s(), time.perf_counter()
    results = run_grid(args.workload, names, seeds, workers=workers)
    return time.perf_counter() - wall, _cpu_s() - cpu, results


def _run_share(names: list[str], workload: str, seeds: list[int], part: int, parts: int) -> None:
    """Run every ``parts``-th (scheduler, seed) pair from ``part`` on, one after the other."""
    from dlsched.api import simulate

    pairs = [(seed, name) for seed in seeds for name in names]
    for seed, name in pairs[part::parts]:
        simulate(workload, name, seed)


def _timed_ceiling(workers: int, args: argparse.Namespace, seeds: list[int]) -> tuple[float, float]:
    """(wall s, CPU s) of ``workers`` forked processes each running its share, no pool."""
    names = args.schedulers.split(",")
    context = multiprocessing.get_context("fork")
    cpu, wall = _cpu_s(), time.perf_counter()
    procs = [
        context.Process(target=_run_share, args=(names, args.workload, seeds, part, workers))
        for part in range(workers)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            raise SystemExit(f"a share process failed (exit code {proc.exitcode})")
    return time.perf_counter() - wall, _cpu_s() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-w", "--workload", default="dl2")
    parser.add_argument("--schedulers", default="fifo,drf,srtf,tetris,optimus")
    parser.add_argument("--seeds", default="1-20")
    parser.add_argument("--workers", type=int, default=2, help="processes of the parallel run")
    parser.add_argument("--repeat", type=int, default=1, help="timings of each, best kept")
    parser.add_argument(
        "--ceiling", action="store_true", help="also time N plain processes sharing the runs"
    )
    args = parser.parse_args()

    from dlsched.cli_args import parse_seed_list
    from dlsched.experiments.compare import run_grid

    seeds = parse_seed_list(args.seeds)
    runs = len(seeds) * len(args.schedulers.split(","))
    run_grid(args.workload, args.schedulers.split(",")[:1], seeds[:1])  # first-use imports
    load_before = os.getloadavg()
    timings: dict[str, list[tuple[float, float]]] = {}
    reference: list[tuple[Any, ...]] | None = None
    kinds = ["1", str(args.workers)] + ([f"{args.workers} plain"] if args.ceiling else [])
    for _ in range(args.repeat):
        for kind in kinds:
            if kind.endswith("plain"):
                wall, cpu = _timed_ceiling(args.workers, args, seeds)
            else:
                wall, cpu, results = _timed(int(kind), args, seeds)
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
    print(f"cores: {os.cpu_count()}; summaries equal for 1 and {args.workers} workers: yes")
    best = {kind: min(timings[kind]) for kind in kinds}
    for kind in kinds:
        walls = [wall for wall, _ in timings[kind]]
        print(
            f"{kind} worker(s): best wall {best[kind][0]:.2f} s (CPU {best[kind][1]:.2f} s), "
            f"worst {max(walls):.2f} s; speed-up from the best {best['1'][0] / best[kind][0]:.2f}x"
        )


if __name__ == "__main__":
    main()
