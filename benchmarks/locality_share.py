"""How much of a result comes from the locality model: each run twice, cross-server slowdown on
and off (issue 34, point 4).

Workloads whose speeds follow `dlsched.models.locality.Locality` (``sched2``, ``philly[:VC]``,
``trace:PATH``) slow a job spread over ``k`` servers by ``1 + 2 (S - 1) (k - 1) / k`` (``S`` the
model's slowdown at two servers, SCED² Fig. 1). ``simulate(..., cross_server_slowdown=False)``
(CLI: ``-o cross_server_slowdown=false``) runs the same jobs, cluster and scheduler with every
``S = 1``. A third run keeps the slowdown on and re-packs (``repack=True``, CLI ``-o
repack=true``): a running job spread over servers moves onto one server once one has room,
pausing for the workload's checkpoint-restart (`dlsched.sim.SimConfig.repack`). Printed per
workload and scheduler: average JCT and makespan (s) on, off and on with re-packing, the share
of the average JCT the slowdown accounts for, ``(on - off) / on``, and the moves made::

    PYTHONPATH=src python benchmarks/locality_share.py --workloads philly:ee9e8c,sched2 \\
        --schedulers fifo,las --seeds 0
    PYTHONPATH=src python benchmarks/locality_share.py --workloads philly --max-jobs 2000 \\
        --start 2017-10-01 --servers 16 --schedulers fifo
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from dlsched.runner import simulate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="philly:ee9e8c,sched2")
    parser.add_argument("--schedulers", default="fifo,las")
    parser.add_argument("--seeds", default="0", help="comma-separated")
    parser.add_argument("--servers", type=int, default=None)
    parser.add_argument("--max-jobs", type=int, default=None, help="philly: first N jobs")
    parser.add_argument("--start", default=None, help="philly: from this ISO date")
    args = parser.parse_args()
    options: dict[str, Any] = {"servers": args.servers}
    if args.max_jobs is not None:
        options["max_jobs"] = args.max_jobs
    if args.start is not None:
        options["start"] = args.start
    print(
        "workload | scheduler | seed | avg JCT on / off / on+repack (s) | share | "
        "makespan on / off / on+repack (s) | moves"
    )
    runs = ({"cross_server_slowdown": False}, {}, {"repack": True})
    for workload in args.workloads.split(","):
        for scheduler in args.schedulers.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                off, on, repack = (
                    simulate(workload, scheduler, seed, **run, **options).summary() for run in runs
                )
                share = (on["avg_jct_s"] - off["avg_jct_s"]) / on["avg_jct_s"]
                jct = " / ".join(f"{r['avg_jct_s']:,.0f}" for r in (on, off, repack))
                span = " / ".join(f"{r['makespan_s']:,.0f}" for r in (on, off, repack))
                moves = repack["repack"].removeprefix("on (").removesuffix(" moves)")
                print(
                    f"{workload} | {scheduler} | {seed} | {jct} | {share:.1%} | {span} | {moves}",
                    flush=True,
                )
    print(f"load average (1, 5, 15 min) after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
