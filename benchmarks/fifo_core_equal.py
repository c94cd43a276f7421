"""A FIFO run by the compiled FIFO core and by the simulator, timed and compared (issue 31).

Runs ``simulate(workload, "fifo")`` with ``core="compiled"`` twice in one process (the first
loads, or with ``--fresh-cache`` compiles, the core), then with ``core="python"``, printing the
CPU seconds of each, and whether the per-job records, ``queued_s``, totals and the whole
timeline are equal (exit 1 if not). Run from the repository root::

    PYTHONPATH=src python benchmarks/fifo_core_equal.py --workload philly --fresh-cache
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import astuple
from typing import Any


def _summary(result: Any) -> tuple[object, ...]:
    return (
        [astuple(r) for r in result.records],
        result.queued_s,
        result.events,
        result.decisions,
        result.end_s,
        result.gpu_util,
        result.cpu_util,
        result.jct_bound_s,
        astuple(result.timeline),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="philly")
    parser.add_argument("--max-jobs", type=int, help="the first N jobs of the workload only")
    parser.add_argument(
        "--fresh-cache",
        action="store_true",
        help="an empty numba cache directory: the first run compiles the core, as on a new machine",
    )
    args = parser.parse_args()
    if args.fresh_cache:
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="dlsched-numba-")
    import dlsched
    from dlsched.schedulers.registry import make_scheduler
    from dlsched.workloads.registry import make_workload

    sizes = {} if args.max_jobs is None else {"max_jobs": args.max_jobs}
    workload = make_workload(args.workload, seed=0, **sizes)
    make_scheduler("fifo")  # first use imports every scheduler module
    summaries = []
    for label, core in (
        ("compiled", "compiled"),
        ("compiled again", "compiled"),
        ("python", "python"),
    ):
        cpu0 = time.process_time()
        result = dlsched.simulate(workload=workload, scheduler="fifo", seed=0, core=core)
        cpu_s = time.process_time() - cpu0
        ran = result.params.get("core", "python")
        print(f"{label}: {cpu_s:.2f} s CPU ({ran}), {len(result.records):,} records", flush=True)
        summaries.append(_summary(result))
    equal = summaries[0] == summaries[2] and summaries[1] == summaries[2]
    print(f"records, totals and timeline ({len(summaries[2][-1][0]):,} samples) equal: {equal}")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
