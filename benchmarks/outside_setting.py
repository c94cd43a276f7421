"""Learned schedulers on every workload: each run ends fast or is refused at once (issue 34,
point 5).

Each pair runs as a whole process, ``python -m dlsched simulate -w WORKLOAD -s SCHEDULER
--json``, under a wall-time cap (``--timeout-s``, default 60 s). Printed per pair: ``ran`` (exit
0; wall s and jobs finished), ``refused`` (exit 2 with one line; wall s and that line) or
``TIMED OUT`` (still running at the cap: neither fast nor refused, the thing to fix)::

    PYTHONPATH=src python benchmarks/outside_setting.py
    PYTHONPATH=src python benchmarks/outside_setting.py --schedulers dl2 --workloads pollux
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

SCHEDULERS = "dl2,offline-rl,deeprm,example,sched2,kubeflow-dynamic,pollux,optimus"
WORKLOADS = "dl2,deeprm,sched2,philly:ee9e8c,pollux,kubeflow"


def run_pair(workload: str, scheduler: str, timeout_s: float) -> tuple[str, float, str]:
    """(outcome, wall s, detail) of one ``dlsched simulate`` process."""
    command = [sys.executable, "-m", "dlsched", "simulate", "-w", workload, "-s", scheduler]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [*command, "--json"], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return "TIMED OUT", time.perf_counter() - start, f"still running after {timeout_s:g} s"
    wall = time.perf_counter() - start
    if done.returncode == 0:
        summary = json.loads(done.stdout)
        return "ran", wall, f"{summary['finished']}/{summary['jobs']} jobs"
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    return f"refused (exit {done.returncode})", wall, errors[-1] if errors else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedulers", default=SCHEDULERS)
    parser.add_argument("--workloads", default=WORKLOADS)
    parser.add_argument("--timeout-s", type=float, default=60.0)
    args = parser.parse_args()
    print("scheduler | workload | outcome | wall (s) | detail")
    slow = []
    for scheduler in args.schedulers.split(","):
        for workload in args.workloads.split(","):
            outcome, wall, detail = run_pair(workload, scheduler, args.timeout_s)
            print(f"{scheduler} | {workload} | {outcome} | {wall:.1f} | {detail}", flush=True)
            if outcome == "TIMED OUT":
                slow.append(f"{scheduler} on {workload}")
    print(f"neither fast nor refused: {', '.join(slow) or 'none'}")
    print(f"load average (1, 5, 15 min) after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
