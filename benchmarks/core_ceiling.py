"""How much N CPU-bound processes gain on this machine when each does the same work.

A sweep on N workers cannot beat this: N forked processes start together and each runs the
same work, returning nothing; the throughput ratio is N × wall(1) ÷ wall(N) (N is ideal) and
the slowdown is the mean CPU seconds a process took at N ÷ at 1 (1.0: no process ran slower
for having company). Two kinds of work tell the machine's limits apart:

* ``loop``: a pure-Python integer loop in a few KiB (the clock and how many physical cores
  the vCPUs are: two vCPUs on one physical core slow each other down here too);
* ``sim``: the sweep's own runs, one of each scheduler at seed 1 (also caches and memory);
* ``gather-l2`` / ``gather-mem``: NumPy random gathers over 1 MiB (fits each core's L2) and
  over 256 MiB (far past a core's share of the last-level cache): the same instructions, so a
  slowdown in ``gather-mem`` only is the shared cache and memory, not the cores.

    PYTHONPATH=src python benchmarks/core_ceiling.py -w dl2 \\
        --schedulers fifo,drf,srtf,optimus,efficient-srtf --processes 1,8,16
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
from collections.abc import Callable
from typing import Any


def _loop(steps: int = 8_000_000) -> None:
    """CPU-bound Python work that stays in the first-level caches."""
    total = 0
    for i in range(steps):
        total = (total + i * i) % 1_000_003


def _runs(workload: str, names: list[str]) -> Callable[[], None]:
    from dlsched.api import simulate

    def work() -> None:
        for name in names:
            simulate(workload, name, 1)

    return work


def _gather(size_bytes: int, touches: int = 40_000_000) -> Callable[[], None]:
    """Random 8-byte reads over ``size_bytes`` of memory, ``touches`` in all (chunks of 1M)."""

    def work() -> None:
        import numpy as np

        rng = np.random.default_rng(0)
        data = rng.random(size_bytes // 8)
        index = rng.integers(0, data.size, 1_000_000)
        total = 0.0
        for _ in range(touches // index.size):
            total += float(data[index].sum())
            index = (index * 7 + 13) % data.size

    return work


def _one(work: Callable[[], None], queue: Any) -> None:
    cpu = time.process_time()
    work()
    queue.put(time.process_time() - cpu)


def _together(work: Callable[[], None], processes: int) -> tuple[float, float]:
    """(wall s, mean CPU s a process) of ``processes`` forked processes each doing ``work``."""
    context = multiprocessing.get_context("fork")
    queue = context.SimpleQueue()
    procs = [context.Process(target=_one, args=(work, queue)) for _ in range(processes)]
    wall = time.perf_counter()
    for proc in procs:
        proc.start()
    cpu = [queue.get() for _ in procs]
    wall = time.perf_counter() - wall
    for proc in procs:
        proc.join()
    return wall, sum(cpu) / len(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-w", "--workload", default="dl2")
    parser.add_argument("--schedulers", default="fifo,drf,srtf,optimus,efficient-srtf")
    parser.add_argument("--processes", default="1,8,16", help="counts of processes")
    parser.add_argument("--kinds", default="loop,sim", help="loop, sim, gather-l2, gather-mem")
    parser.add_argument("--repeat", type=int, default=1, help="timings of each, best kept")
    args = parser.parse_args()
    counts = [int(n) for n in args.processes.split(",")]
    work = {
        "loop": _loop,
        "sim": _runs(args.workload, args.schedulers.split(",")),
        "gather-l2": _gather(1 << 20),
        "gather-mem": _gather(256 << 20),
    }
    work["sim"]()  # the parent first: imports and caches, inherited by the forks
    print(f"cores: {os.cpu_count()}; load average {os.getloadavg()}", flush=True)
    for kind in args.kinds.split(","):
        best: dict[int, tuple[float, float]] = {}
        for _ in range(args.repeat):
            for n in counts:
                best[n] = min(best.get(n, (float("inf"), 0.0)), _together(work[kind], n))
        one_wall, one_cpu = best.get(1, best[counts[0]])
        for n in counts:
            wall, cpu = best[n]
            ratio = n * one_wall / wall
            print(
                f"{kind}: {n} processes, wall {wall:.3f} s, CPU a process {cpu:.3f} s; "
                f"throughput {ratio:.2f}x of 1 ({ratio / n:.2f} of ideal), CPU slowdown "
                f"{cpu / one_cpu:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
