"""Whole-process time of ``dlsched simulate`` (start-up included), for one or more source trees.

Each tree (``--src LABEL=PATH``, PATH a ``src`` folder put first on ``PYTHONPATH``) runs
``python -m dlsched simulate --workload W --scheduler fifo --json`` (``W``: ``trace:TRACE`` on 16
servers with ``--trace``, else ``--workload``, default ``philly:ee9e8c``) and the same through
the ``dlsched`` console script next to this Python; the runs are interleaved ``--repeat`` times.
Printed per tree and way: median and range of the wall time (s) and of the child's CPU time
(user + system, s), the median simulation time the run reports (``wall_s``, s) and the
start-up beyond the simulation: median of (process wall − simulation wall) (s).

    python benchmarks/startup_time.py --src before=/tmp/before/src --src after=src --repeat 5
    python benchmarks/startup_time.py --trace trace_1000.csv --src now=src

``--breakdown`` adds, per tree and repetition (interleaved), the CPU seconds of each phase of
one fresh process running the same command in-process: interpreter, NumPy, Typer, ``dlsched.cli``
(other commands are built only when used), option parsing and building the workload (Typer's
pydantic adapters included), the simulation, and the output; then the start-up CPU beyond the
simulation (the steadier figure on a loaded machine, where the wall times above mostly wait for
a core) and whether pandas was imported. With ``--table`` the breakdown runs the command without
``--json``: the metrics table Rich prints, as ``dlsched simulate`` does by default (the timed
runs above keep ``--json``, whose ``wall_s`` they read).

The packaged Philly trace is read once and its columns cached in the user's cache folder
(``DLSCHED_CACHE_DIR``; `dlsched.workloads.traces.philly_columns`): the runs use the cache
as a user's second and later runs do (the first run writes it); ``--cold`` gives every run an
empty cache folder instead (a user's first run after install).

The runs use compiled bytecode as an installed package does (``pip install`` writes it; an
editable install writes it on the first run): each tree runs once untimed first, with the
bytecode written under a temporary ``PYTHONPYCACHEPREFIX`` (the trees stay clean), also where
``PYTHONDONTWRITEBYTECODE`` is set. ``--no-bytecode`` keeps that variable as it is instead: on
a box that sets it (the shared development box does), every run compiles dlsched's sources,
about 0.1 s of CPU more.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _child_cpu_s() -> float:
    """User + system CPU time (s) of the finished children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


BREAKDOWN = """
import os, sys, time
c = [time.process_time()]
import numpy
c.append(time.process_time())
import typer
c.append(time.process_time())
import dlsched.cli
c.append(time.process_time())
from dlsched.sim.simulator import Simulator
run = Simulator.run
def timed(self):
    c.append(time.process_time())
    result = run(self)
    c.append(time.process_time())
    return result
Simulator.run = timed
sys.argv = ["dlsched", *ARGS]
out, sys.stdout = sys.stdout, open(os.devnull, "w")
try:
    dlsched.cli.main()
except SystemExit:
    pass
c.append(time.process_time())
sys.stdout = out
names = ("interpreter", "numpy", "typer", "dlsched.cli", "options+workload", "simulation",
         "output")
print(", ".join(f"{n} {b - a:.3f}" for n, a, b in zip(names, [0.0, *c], c)), end="; ")
print(f"start-up CPU beyond the simulation {c[-1] - (c[5] - c[4]):.3f}; "
      f"pandas imported: {'pandas' in sys.modules}")
"""
"""One fresh process running the CLI in-process: CPU seconds (s) of each phase, and the
start-up: all of the process's CPU but the simulation's (interpreter start-up before
``process_time`` counts is left out: about 0.01 s)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, help="a trace CSV (16 servers)")
    parser.add_argument("--workload", default="philly:ee9e8c", help="without --trace")
    parser.add_argument("--src", action="append", required=True, help="LABEL=PATH of a src tree")
    parser.add_argument("--scheduler", default="fifo")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--breakdown", action="store_true", help="CPU per start-up phase")
    parser.add_argument("--cold", action="store_true", help="an empty cache folder every run")
    parser.add_argument("--table", action="store_true", help="breakdown: the table, not --json")
    parser.add_argument(
        "--no-bytecode", action="store_true", help="keep PYTHONDONTWRITEBYTECODE as it is"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as pycache:
        base_env = dict(os.environ)
        if not args.no_bytecode:
            base_env.pop("PYTHONDONTWRITEBYTECODE", None)
            base_env["PYTHONPYCACHEPREFIX"] = pycache
        _measure(args, base_env)


def _measure(args: argparse.Namespace, base_env: dict[str, str]) -> None:
    """The timed runs and the breakdown, each child with ``base_env`` and its tree first on
    ``PYTHONPATH``; one untimed run per tree first (it writes the bytecode)."""
    trees = dict(item.split("=", 1) for item in args.src)
    script = str(Path(sys.executable).parent / "dlsched")
    workload = f"trace:{args.trace}" if args.trace else args.workload
    sim = ["simulate", "--workload", workload, "--scheduler", args.scheduler, "--json"]
    sim += ["--servers", "16"] if args.trace else []
    rows: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for src in trees.values():
        env = {**base_env, "PYTHONPATH": str(Path(src).resolve())}
        subprocess.run([sys.executable, "-m", "dlsched", *sim], env=env, capture_output=True)
    for _ in range(args.repeat):
        for label, src in trees.items():
            for way, command in (("-m", [sys.executable, "-m", "dlsched"]), ("script", [script])):
                env = {**base_env, "PYTHONPATH": str(Path(src).resolve())}
                with tempfile.TemporaryDirectory() as empty:
                    if args.cold:
                        env["DLSCHED_CACHE_DIR"] = empty
                    cpu, wall = _child_cpu_s(), time.perf_counter()
                    proc = subprocess.run(
                        [*command, *sim], env=env, capture_output=True, text=True, check=True
                    )
                    wall, cpu = time.perf_counter() - wall, _child_cpu_s() - cpu
                rows.setdefault((label, way), []).append(
                    (wall, cpu, json.loads(proc.stdout)["wall_s"])
                )
    print(f"load average (1, 5, 15 min) after: {os.getloadavg()}")
    shown = [a for a in sim if a != "--json"] if args.table else sim
    code = BREAKDOWN.replace("ARGS", repr(shown))
    phases: dict[str, list[str]] = {label: [] for label in trees}
    for _ in range(args.repeat if args.breakdown else 0):  # interleaved, as the runs above
        for label, src in trees.items():
            env = {**base_env, "PYTHONPATH": str(Path(src).resolve())}
            run = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            )
            phases[label].append(run.stdout.strip())
    for label, lines in phases.items():
        for line in lines:
            print(f"{label} CPU s: {line}")
        beyond = [float(line.split("simulation ")[-1].split(";")[0]) for line in lines]
        if beyond:
            print(
                f"{label} start-up CPU beyond the simulation: median "
                f"{statistics.median(beyond):.3f} s [{min(beyond):.3f}-{max(beyond):.3f}]"
            )
    for (label, way), values in rows.items():
        walls, cpus, sims = zip(*values, strict=True)
        startup = statistics.median(w - s for w, s in zip(walls, sims, strict=True))
        print(
            f"{label} {way}: wall median {statistics.median(walls):.2f} s "
            f"[{min(walls):.2f}-{max(walls):.2f}], CPU median {statistics.median(cpus):.2f} s "
            f"[{min(cpus):.2f}-{max(cpus):.2f}], simulation {statistics.median(sims):.2f} s, "
            f"start-up beyond it {startup:.2f} s"
        )


if __name__ == "__main__":
    main()
