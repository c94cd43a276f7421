"""Learned schedulers on every workload: each run ends fast or is refused at once (issue 34,
point 5).

Each pair runs as a whole process, ``python -m dlsched simulate -w WORKLOAD -s SCHEDULER
--json``, under a wall-time cap (``--timeout-s``, default 60 s). Printed per pair: ``ran`` (exit
0; wall s and jobs finished), ``refused`` (exit 2 with one line; wall s and that line) or
``TIMED OUT`` (still running at the cap: neither fast nor refused, the thing to fix), and the
whole process's CPU seconds (user + sys: on a loaded box a steadier figure than wall time; issue
36's target for a refusal is 1 s)::

    PYTHONPATH=src python benchmarks/outside_setting.py
    PYTHONPATH=src python benchmarks/outside_setting.py --schedulers dl2 --workloads pollux
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

SCHEDULERS = "dl2,offline-rl,deeprm,example,sched2,kubeflow-dynamic,pollux,optimus"
WORKLOADS = "dl2,deeprm,sched2,philly:ee9e8c,pollux,kubeflow"


def _children_cpu_s() -> float:
    """CPU seconds (user + sys) of the finished child processes so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_pair(workload: str, scheduler: str, timeout_s: float) -> tuple[str, float, float, str]:
    """(outcome, wall s, CPU s, detail) of one ``dlsched simulate`` process (CPU: NaN when it
    timed out, a killed child's time not being collected)."""
    command = [sys.executable, "-m", "dlsched", "simulate", "-w", workload, "-s", scheduler]
    start, cpu0 = time.perf_counter(), _children_cpu_s()
    try:
        done = subprocess.run(
            [*command, "--json"], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        wall = time.perf_counter() - start
        return "TIMED OUT", wall, float("nan"), f"still running after {timeout_s:g} s"
    wall, cpu = time.perf_counter() - start, _children_cpu_s() - cpu0
    if done.returncode == 0:
        summary = json.loads(done.stdout)
        return "ran", wall, cpu, f"{summary['finished']}/{summary['jobs']} jobs"
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    return f"refused (exit {done.returncode})", wall, cpu, errors[-1] if errors else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedulers", default=SCHEDULERS)
    parser.add_argument("--workloads", default=WORKLOADS)
    parser.add_argument("--timeout-s", type=float, default=60.0)
    args = parser.parse_args()
    print("scheduler | workload | outcome | wall (s) | CPU (s) | detail")
    slow = []
    for scheduler in args.schedulers.split(","):
        for workload in args.workloads.split(","):
            outcome, wall, cpu, detail = run_pair(workload, scheduler, args.timeout_s)
            row = f"{scheduler} | {workload} | {outcome} | {wall:.1f} | {cpu:.2f} | {detail}"
            print(row, flush=True)
            if outcome == "TIMED OUT":
                slow.append(f"{scheduler} on {workload}")
    print(f"neither fast nor refused: {', '.join(slow) or 'none'}")
    print(f"load average (1, 5, 15 min) after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
