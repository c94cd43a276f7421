"""dlsched vs Pollux's own simulator on the same workload, timed side by side in one run.

Usage::

    python benchmarks/pollux_side_by_side.py PEER_PATH [--peer-python PY] [--workload 6]
        [--policies tiresias optimus]

``PEER_PATH`` is a checkout of the artifact's ``simulator/`` (``../shared/peers/pollux-sim``);
``--peer-python`` the interpreter of a venv with its requirements (numpy==1.23.5 pandas==1.5.3
scipy==1.10.1 autograd pymoo==0.4.2.1; default ``/tmp/pollux-venv/bin/python``). For each policy
it runs the peer's ``simulator.py --policy P workloads/workload-N.csv`` as a subprocess and
dlsched's equivalent (``tiresias`` → ``tiresias:57600`` on tuned jobs, ``optimus`` →
``optimus-oracle-allreduce`` on tuned-batch jobs, ``pollux`` → ``pollux``) in this process,
and prints wall times (whole peer process; dlsched's ``simulate`` call including workload
build), their ratio and both average JCTs. The peer's Pollux policy takes over 40 minutes: it is
only run when asked for.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from dlsched.api import simulate
from dlsched.workloads.pollux import RESCALE, make_pollux

DLSCHED = {
    "tiresias": ("tiresias:57600", "tuned"),
    "optimus": ("optimus-oracle-allreduce", "tuned-batch"),
    "pollux": ("pollux", "adaptive"),
}


def run_peer(peer: Path, python: str, policy: str, workload: int) -> tuple[float, float]:
    """(wall seconds, average JCT seconds) of the peer simulator."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [python, "simulator.py", "--policy", policy, f"workloads/workload-{workload}.csv"],
        cwd=peer,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - t0
    found = re.findall(r"Average JCT:\s*([0-9.]+)", proc.stdout)
    return wall, float(found[-1]) if found else float("nan")


def run_dlsched(policy: str, workload: int) -> tuple[float, float]:
    """(wall seconds, average JCT seconds) of dlsched on the same jobs."""
    scheduler, jobs = DLSCHED[policy]
    t0 = time.perf_counter()
    result = simulate(make_pollux(workload=workload, jobs=jobs), scheduler, rescale=RESCALE)
    return time.perf_counter() - t0, float(np.mean(result.column("jct_s")))


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
    print("policy | peer wall s | dlsched wall s | speed-up | peer avg JCT s | dlsched avg JCT s")
    for policy in args.policies:
        peer_wall, peer_jct = run_peer(args.peer, args.peer_python, policy, args.workload)
        ours_wall, ours_jct = run_dlsched(policy, args.workload)
        print(
            f"{policy} | {peer_wall:.1f} | {ours_wall:.1f} | {peer_wall / ours_wall:.1f}x | "
            f"{peer_jct:.0f} | {ours_jct:.0f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
