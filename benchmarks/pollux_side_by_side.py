"""dlsched vs Pollux's own simulator on the same workload, timed side by side in one run.

Usage::

    python benchmarks/pollux_side_by_side.py PEER_PATH [--peer-python PY] [--workload 6]
        [--policies tiresias optimus]

``PEER_PATH`` is a checkout of the artifact's ``simulator/`` (``../shared/peers/pollux-sim``);
``--peer-python`` the interpreter of a venv with its requirements (numpy==1.23.5 pandas==1.5.3
scipy==1.10.1 autograd pymoo==0.4.2.1; default ``/tmp/pollux-venv/bin/python``). For each policy
it runs the peer's ``simulator.py --policy P workloads/workload-N.csv`` and dlsched's equivalent
(``tiresias`` → ``tiresias:57600`` on tuned jobs, ``optimus`` → ``optimus-oracle-allreduce`` on
tuned-batch jobs, ``pollux`` → ``pollux``) as ``python -m dlsched simulate -w pollux -o number=N
-o jobs=J -s S --json``, each a whole process (start-up, imports and workload build included),
and prints both wall times and CPU times (user + system of the child, s), their ratios and both
average JCTs. The peer's Pollux policy takes over 40 minutes: it is only run when asked for.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

DLSCHED = {
    "tiresias": ("tiresias:57600", "tuned"),
    "optimus": ("optimus-oracle-allreduce", "tuned-batch"),
    "pollux": ("pollux", "adaptive"),
}


def _timed(command: list[str], cwd: Path | None = None) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, its stdout) of one whole process."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu, wall = usage.ru_utime + usage.ru_stime, time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - wall
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, usage.ru_utime + usage.ru_stime - cpu, proc.stdout


def run_peer(peer: Path, python: str, policy: str, workload: int) -> tuple[float, float, float]:
    """(wall s, CPU s, average JCT s) of the peer simulator's process."""
    command = [python, "simulator.py", "--policy", policy, f"workloads/workload-{workload}.csv"]
    wall, cpu, stdout = _timed(command, cwd=peer)
    found = re.findall(r"Average JCT:\s*([0-9.]+)", stdout)
    return wall, cpu, float(found[-1]) if found else float("nan")


def run_dlsched(policy: str, workload: int) -> tuple[float, float, float]:
    """(wall s, CPU s, average JCT s) of a ``dlsched simulate`` process on the same jobs."""
    scheduler, jobs = DLSCHED[policy]
    command = [sys.executable, "-m", "dlsched", "simulate", "-w", "pollux", "-s", scheduler]
    command += ["-o", f"number={workload}", "-o", f"jobs={jobs}", "--json"]
    wall, cpu, stdout = _timed(command)
    return wall, cpu, float(json.loads(stdout)["avg_jct_s"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("peer", type=Path, help="the artifact's simulator/ folder")
    parser.add_argument("--peer-python", default="/tmp/pollux-venv/bin/python")
    parser.add_argument("--workload", type=int, default=6)
    parser.add_argument("--policies", nargs="+", default=["tiresias", "optimus"])
    args = parser.parse_args(argv)
    if not (args.peer / "simulator.py").is_file():
        print(f"error: no simulator.py in {args.peer}", file=sys.stderr)
        return 2
    unknown = sorted(set(args.policies) - set(DLSCHED))
    if unknown:
        print(f"error: unknown policies {unknown}; choose from {list(DLSCHED)}", file=sys.stderr)
        return 2
    print(f"load average (1, 5, 15 min) before: {os.getloadavg()}")
    print(
        "policy | peer wall / CPU s | dlsched wall / CPU s | speed-up wall / CPU | "
        "peer avg JCT s | dlsched avg JCT s"
    )
    for policy in args.policies:
        peer_wall, peer_cpu, peer_jct = run_peer(args.peer, args.peer_python, policy, args.workload)
        wall, cpu, jct = run_dlsched(policy, args.workload)
        print(
            f"{policy} | {peer_wall:.1f} / {peer_cpu:.1f} | {wall:.1f} / {cpu:.1f} | "
            f"{peer_wall / wall:.1f}x / {peer_cpu / cpu:.1f}x | {peer_jct:.0f} | {jct:.0f}",
            flush=True,
        )
    print(f"load average (1, 5, 15 min) after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
