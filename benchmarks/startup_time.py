"""Whole-process time of ``dlsched simulate`` (start-up included), for one or more source trees.

Each tree (``--src LABEL=PATH``, PATH a ``src`` folder put first on ``PYTHONPATH``) runs
``python -m dlsched simulate --workload trace:TRACE --scheduler fifo --servers 16 --json`` and
the same through the ``dlsched`` console script next to this Python; the runs are interleaved
``--repeat`` times. Printed per tree and way: median and range of the wall time (s) and of the
child's CPU time (user + system, s), and the median simulation time the run reports (s).

    python benchmarks/startup_time.py --trace trace_1000.csv \\
        --src before=/tmp/before/src --src after=src --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _child_cpu_s() -> float:
    """User + system CPU time (s) of the finished children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, required=True, help="a trace CSV")
    parser.add_argument("--src", action="append", required=True, help="LABEL=PATH of a src tree")
    parser.add_argument("--scheduler", default="fifo")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    trees = dict(item.split("=", 1) for item in args.src)
    script = str(Path(sys.executable).parent / "dlsched")
    sim = ["simulate", "--workload", f"trace:{args.trace}", "--scheduler", args.scheduler]
    sim += ["--servers", "16", "--json"]
    rows: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for _ in range(args.repeat):
        for label, src in trees.items():
            for way, command in (("-m", [sys.executable, "-m", "dlsched"]), ("script", [script])):
                env = {**os.environ, "PYTHONPATH": str(Path(src).resolve())}
                cpu, wall = _child_cpu_s(), time.perf_counter()
                proc = subprocess.run(
                    [*command, *sim], env=env, capture_output=True, text=True, check=True
                )
                wall, cpu = time.perf_counter() - wall, _child_cpu_s() - cpu
                rows.setdefault((label, way), []).append(
                    (wall, cpu, json.loads(proc.stdout)["wall_s"])
                )
    print(f"load average (1, 5, 15 min) after: {os.getloadavg()}")
    for (label, way), values in rows.items():
        walls, cpus, sims = zip(*values, strict=True)
        print(
            f"{label} {way}: wall median {statistics.median(walls):.2f} s "
            f"[{min(walls):.2f}-{max(walls):.2f}], CPU median {statistics.median(cpus):.2f} s "
            f"[{min(cpus):.2f}-{max(cpus):.2f}], simulation {statistics.median(sims):.2f} s"
        )


if __name__ == "__main__":
    main()
