"""Wall time of one ``compare`` sweep on 1 and on N local worker processes, and the speed-up.

The sweep is the same for both (``run_grid`` with ``workers=1`` and ``workers=N``); the script
checks that the two give the same summary numbers, bit for bit, and prints the wall time of
each (s), the CPU time this process and its worker processes used (s), the load average of the
machine before and after (a busy machine cannot give the speed-up of an idle one) and the
ratio wall(1) / wall(N). With ``--repeat R`` the two are timed alternately R times each and the
best wall time of each is kept.

    PYTHONPATH=src python benchmarks/compare_workers.py -w dl2 \\
        --schedulers fifo,drf,srtf,tetris,optimus --seeds 1-20 --workers 2
"""

from __future__ import annotations

import argparse
import math
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-w", "--workload", default="dl2")
    parser.add_argument("--schedulers", default="fifo,drf,srtf,tetris,optimus")
    parser.add_argument("--seeds", default="1-20")
    parser.add_argument("--workers", type=int, default=2, help="processes of the parallel run")
    parser.add_argument("--repeat", type=int, default=1, help="timings of each, best kept")
    args = parser.parse_args()

    from dlsched.cli_args import parse_seed_list
    from dlsched.experiments.compare import run_grid

    seeds = parse_seed_list(args.seeds)
    runs = len(seeds) * len(args.schedulers.split(","))
    run_grid(args.workload, args.schedulers.split(",")[:1], seeds[:1])  # first-use imports
    load_before = os.getloadavg()
    best: dict[int, tuple[float, float]] = {}
    reference: list[tuple[Any, ...]] | None = None
    for _ in range(args.repeat):
        for workers in (1, args.workers):
            wall, cpu, results = _timed(workers, args, seeds)
            print(f"{runs} runs, {workers} worker(s): wall {wall:.2f} s, CPU {cpu:.2f} s")
            numbers = _numbers(results)
            if reference is None:
                reference = numbers
            elif numbers != reference:
                raise SystemExit(f"{workers} workers gave other numbers than 1 worker")
            if workers not in best or wall < best[workers][0]:
                best[workers] = (wall, cpu)
    load_after = os.getloadavg()
    (wall_1, cpu_1), (wall_n, cpu_n) = best[1], best[args.workers]
    print(f"load average (1, 5, 15 min) before: {load_before}, after: {load_after}")
    print(f"cores: {os.cpu_count()}; summaries equal for 1 and {args.workers} workers: yes")
    print(
        f"best wall: 1 worker {wall_1:.2f} s (CPU {cpu_1:.2f} s), {args.workers} workers "
        f"{wall_n:.2f} s (CPU {cpu_n:.2f} s); speed-up {wall_1 / wall_n:.2f}x"
    )


if __name__ == "__main__":
    main()
