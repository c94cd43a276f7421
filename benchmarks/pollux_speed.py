"""Time of one ``pollux`` run (issue 31: ≤ 10 s, same average JCT), for one or more source trees.

Each tree (``--src LABEL=PATH``, PATH a ``src`` folder put first on ``PYTHONPATH``) runs
``python -m dlsched simulate -w pollux -o number=N -s pollux --json`` (Pollux's workload N, 160
jobs; ``--num-jobs`` keeps the first ones) as a whole process; the trees are interleaved
``--repeat`` times, so a load that changes over the run falls on all of them alike. Printed per
tree: the median and range of the simulation's wall time (``wall_s`` of the JSON, s), of the
process's wall time and of its CPU time (user + system of the child, s), the average JCT (s,
which must be the same for every tree), and each median's ratio to the first tree's.

    python benchmarks/pollux_speed.py --src before=/tmp/before/src --src after=src --repeat 3

A tree from a commit: ``git archive COMMIT src | tar -x -C /tmp/before``.
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


def _child_cpu_s() -> float:
    """User + system CPU time (s) of the finished children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(src: str, number: int, num_jobs: int | None) -> dict[str, float]:
    """One ``simulate`` process on tree ``src``: simulation wall, process wall, CPU (s), JCT."""
    command = [sys.executable, "-m", "dlsched", "simulate", "-w", "pollux", "-s", "pollux"]
    command += ["-o", f"number={number}", "--json"]
    if num_jobs is not None:
        command += ["-o", f"num_jobs={num_jobs}"]
    env = {**os.environ, "PYTHONPATH": src}
    cpu, wall = _child_cpu_s(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - wall, _child_cpu_s() - cpu
    if done.returncode != 0:
        sys.exit(f"{src}: simulate exited {done.returncode}: {done.stderr.strip()[-500:]}")
    out = json.loads(done.stdout)
    return {"sim": out["wall_s"], "wall": wall, "cpu": cpu, "jct": out["avg_jct_s"]}


def _label_path(text: str) -> tuple[str, str]:
    label, sep, path = text.partition("=")
    if not sep or not os.path.isdir(path):
        raise argparse.ArgumentTypeError(f"--src wants LABEL=PATH to a src folder, got {text!r}")
    return label, path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=_label_path, action="append", required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--number", type=int, default=6, help="Pollux workload (1..8)")
    parser.add_argument("--num-jobs", type=int, help="only the first this many jobs")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {label: [] for label, _ in args.src}
    for _ in range(args.repeat):
        for label, path in args.src:
            runs[label].append(run_once(path, args.number, args.num_jobs))
    first = args.src[0][0]
    medians = {
        label: {k: statistics.median(r[k] for r in rs) for k in ("sim", "wall", "cpu")}
        for label, rs in runs.items()
    }
    print(
        f"pollux workload {args.number}, {args.repeat} runs per tree, interleaved; load "
        f"average now {os.getloadavg()[0]:.1f}"
    )
    print(
        "| tree | simulation wall_s | process wall | process CPU | avg JCT (s) | "
        f"speed-up over {first}: its median ÷ this one (sim / wall / CPU) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, rs in runs.items():
        cells = []
        for k in ("sim", "wall", "cpu"):
            values = [r[k] for r in rs]
            cells.append(f"{medians[label][k]:.2f} [{min(values):.2f}–{max(values):.2f}]")
        ratio = " / ".join(f"{medians[first][k] / medians[label][k]:.2f}x" for k in medians[label])
        jcts = sorted({r["jct"] for r in rs})
        print(f"| {label} | {' | '.join(cells)} | {', '.join(map(repr, jcts))} | {ratio} |")
    same = len({r["jct"] for rs in runs.values() for r in rs}) == 1
    print(f"average JCT {'the same in every run' if same else 'DIFFERS between runs'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
