"""Every fixed-GPU scheduler on a Philly virtual cluster and on the whole Philly trace.

Issue 18's targets: each replays ``philly:6214e9`` (41,226 jobs) in ≤ 15 s and all of Philly
(82,247 jobs) in ≤ 60 s. Each run is a fresh process with one BLAS thread and a CPU-time limit
(``--limit``, seconds; a run that reaches it is reported as stopped). Times are CPU seconds of
the simulation alone (loading the trace and importing the schedulers are not counted), which
other load on a shared machine changes less than wall time; the wall time is printed next to
it. Run from the repository root::

    PYTHONPATH=src python benchmarks/trace_scale.py --workloads philly:6214e9,philly \\
        --schedulers fifo,sif --limit 70

``--before DIR`` runs each case first on another copy of the package (``DIR`` holds its
``dlsched``, e.g. ``git archive BASE src | tar -x -C /tmp/base`` then ``/tmp/base/src``), then
on this one, and prints the ratio: before and after side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import signal
import sys
import time
from typing import Any

FIXED_GPU = "fifo,sjf,sif,dsif,saf,spf,lrf,srtf,las,tiresias,kubeflow-static,kubeflow-dynamic"
"""The default list: the fixed-GPU heuristics (and SJF and Kubeflow's two, made for other
workloads, which run on Philly too). ``--schedulers philly`` runs instead every registered
scheduler made for Philly (`philly_schedulers`), learned and Gavel policies included."""
TARGET_S = {"philly:6214e9": 15.0, "philly": 60.0}


def _case(
    workload_name: str, scheduler: str, limit_s: int, queue: Any, src: str | None, core: str | None
) -> None:
    if src is not None:
        sys.path.insert(0, src)
    import dlsched
    from dlsched.schedulers.registry import make_scheduler
    from dlsched.workloads.registry import make_workload

    workload = make_workload(workload_name, seed=0)
    make_scheduler("fifo")  # first use imports every scheduler module
    used = time.process_time()
    resource.setrlimit(resource.RLIMIT_CPU, (int(used) + limit_s, int(used) + limit_s + 5))
    chosen: dict[str, Any] = {} if core is None else {"core": core}  # None: the default
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = dlsched.simulate(workload=workload, scheduler=scheduler, seed=0, **chosen)
    cpu_s = time.process_time() - cpu0
    summary = result.summary()
    queue.put(
        {
            "workload": workload_name,
            "scheduler": scheduler,
            "jobs": summary["jobs"],
            "finished": summary["finished"],
            "cpu_s": cpu_s,
            "wall_s": time.perf_counter() - wall0,
            "avg_jct_s": summary["avg_jct_s"],
            "events": summary["events"],
            "decisions": summary["decisions"],
            "core": summary.get("core", "python"),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "code": os.path.dirname(os.path.dirname(dlsched.__file__)),
        }
    )


def philly_schedulers() -> str:
    """Every registered scheduler whose setting names the philly workload or says "any"
    (`dlsched.schedulers.registry.made_for`), comma-separated."""
    from dlsched.schedulers.registry import made_for, schedulers

    names = [n for n in schedulers() if made_for(n) is None or "philly" in (made_for(n) or ())]
    return ",".join(names)


def run_case(
    workload: str,
    scheduler: str,
    limit_s: int,
    src: str | None = None,
    core: str | None = None,
) -> dict[str, Any]:
    """One run in a fresh process (of the package in ``src`` if given, else the one on the
    path; ``core``: `simulate`'s, None its default); ``{"stopped": True}`` if it hit the CPU
    limit or failed (``exitcode`` says which: `_report`)."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_case, args=(workload, scheduler, limit_s, queue, src, core))
    wall0 = time.perf_counter()
    proc.start()
    proc.join()
    if proc.exitcode == 0:
        return dict(queue.get())
    return {
        "workload": workload,
        "scheduler": scheduler,
        "code": src,
        "stopped": True,
        "exitcode": proc.exitcode,
        "wall_s": time.perf_counter() - wall0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="philly:6214e9,philly")
    parser.add_argument(
        "--schedulers",
        default=FIXED_GPU,
        help="comma-separated names; 'philly': every scheduler made for Philly",
    )
    parser.add_argument("--limit", type=int, default=70, help="CPU seconds per run")
    parser.add_argument("--json", action="store_true", help="one JSON object per run")
    parser.add_argument(
        "--core",
        choices=("auto", "python", "compiled"),
        default=None,
        help="simulate's core for the (after) runs (default: simulate's, auto): compiled "
        "replays every LAS run it supports, python none",
    )
    parser.add_argument(
        "--before", metavar="DIR", help="also run each case on the package in DIR, first"
    )
    args = parser.parse_args()
    names = philly_schedulers() if args.schedulers == "philly" else args.schedulers
    for workload in args.workloads.split(","):
        for scheduler in names.split(","):
            before = None
            if args.before:
                before = run_case(workload, scheduler, args.limit, os.path.abspath(args.before))
                _report(before, args.limit, args.json, "before: ")
            row = run_case(workload, scheduler, args.limit, core=args.core)
            _report(row, args.limit, args.json, "after: " if args.before else "")
            if before and not args.json and not (before.get("stopped") or row.get("stopped")):
                same = "same" if row["avg_jct_s"] == before["avg_jct_s"] else "DIFFERENT"
                print(f"  {before['cpu_s'] / row['cpu_s']:.2f}x CPU ({same} avg JCT)", flush=True)


def _report(row: dict[str, Any], limit_s: int, as_json: bool, label: str) -> None:
    """Print one run's row (one JSON object with ``as_json``)."""
    if as_json:
        print(json.dumps(row), flush=True)
        return
    workload, scheduler = row["workload"], row["scheduler"]
    target = TARGET_S.get(workload)
    if row.get("stopped"):
        why = (  # the CPU limit's signal, else the run failed (its error above)
            f"stopped at the {limit_s} s CPU limit"
            if row["exitcode"] == -signal.SIGXCPU
            else "failed"
        )
        print(
            f"{label}{workload} {scheduler}: {why} "
            f"(exit {row['exitcode']}, {row['wall_s']:.0f} s wall)",
            flush=True,
        )
        return
    met = "" if target is None else f" (target ≤ {target:g} s: "
    met += "" if target is None else ("met)" if row["cpu_s"] <= target else "not met)")
    print(
        f"{label}{workload} {scheduler}: {row['finished']}/{row['jobs']} jobs, CPU "
        f"{row['cpu_s']:.2f} s{met}, wall {row['wall_s']:.2f} s, "
        f"{row['jobs'] / row['cpu_s']:,.0f} jobs/s, avg JCT {row['avg_jct_s']:.1f} s, "
        f"peak {row['peak_mb']:.0f} MB",
        flush=True,
    )


if __name__ == "__main__":
    main()
