"""How often a DL2 policy stalls tiny clusters (the scheduler invariant test's kind of workload).

Run::

    nice .venv/bin/python benchmarks/dl2_stalls.py                       # shipped policy
    nice .venv/bin/python benchmarks/dl2_stalls.py --policy runs/x --servers 2,3,4

Runs the ``dl2`` workload with ``--jobs`` jobs on each cluster size, at loads 0.5, 1 and 2, on
trace seeds ``--seeds`` (default 0-39, as `tests/rl/test_dl2_policy.py`), and prints how many
runs end in `dlsched.sim.SimulationStalled` (a job left idle for good), with their seeds.
"""

from __future__ import annotations

import argparse
import time

import torch

from dlsched.api import simulate
from dlsched.experiments.compare import parse_seeds
from dlsched.papers.dl2.scheduler import SHIPPED, load_dl2
from dlsched.sim import SimulationStalled

LOADS = (0.5, 1.0, 2.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default=str(SHIPPED), help="checkpoint directory")
    parser.add_argument("--seeds", default="0-39", help="trace seeds")
    parser.add_argument("--servers", default="2", help="cluster sizes, comma-separated")
    parser.add_argument("--jobs", type=int, default=12, help="jobs per trace")
    args = parser.parse_args()
    torch.set_num_threads(1)
    scheduler = load_dl2(args.policy)  # greedy and stateless: one instance for every run
    t0 = time.perf_counter()
    runs, stalled = 0, []
    for servers in (int(s) for s in args.servers.split(",")):
        for load in LOADS:
            for seed in parse_seeds(args.seeds):
                runs += 1
                try:
                    simulate(
                        "dl2", scheduler, seed=seed, load=load, servers=servers, num_jobs=args.jobs
                    )
                except SimulationStalled:
                    stalled.append((servers, load, seed))
    print(f"policy {args.policy}: {len(stalled)} of {runs} runs stalled")
    for servers, load, seed in stalled:
        print(f"  servers={servers} load={load} seed={seed}")
    print(f"{time.perf_counter() - t0:.1f} s wall")


if __name__ == "__main__":
    main()
