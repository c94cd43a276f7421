"""How much of a result comes from the locality model: each run twice, cross-server slowdown on
and off (issue 34, point 4).

Workloads whose speeds follow `dlsched.models.locality.Locality` (``sched2``, ``philly[:VC]``,
``trace:PATH``) slow a job spread over ``k`` servers by ``1 + 2 (S - 1) (k - 1) / k`` (``S`` the
model's slowdown at two servers, SCED² Fig. 1). ``simulate(..., cross_server_slowdown=False)``
(CLI: ``-o cross_server_slowdown=false``) runs the same jobs, cluster and scheduler with every
``S = 1``. Printed per workload and scheduler: average JCT and makespan (s) on and off, and the
share of the average JCT the slowdown accounts for, ``(on - off) / on``::

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
    print("workload | scheduler | seed | avg JCT on / off (s) | share | makespan on / off (s)")
    for workload in args.workloads.split(","):
        for scheduler in args.schedulers.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                on, off = (
                    simulate(
                        workload, scheduler, seed, cross_server_slowdown=flag, **options
                    ).summary()
                    for flag in (True, False)
                )
                share = (on["avg_jct_s"] - off["avg_jct_s"]) / on["avg_jct_s"]
                print(
                    f"{workload} | {scheduler} | {seed} | {on['avg_jct_s']:,.0f} / "
                    f"{off['avg_jct_s']:,.0f} | {share:.1%} | {on['makespan_s']:,.0f} / "
                    f"{off['makespan_s']:,.0f}",
                    flush=True,
                )
    print(f"load average (1, 5, 15 min) after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
