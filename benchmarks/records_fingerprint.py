"""Per-job records of a fixed comparison set of runs, to prove a refactor changed no result.

Every registered scheduler runs on every generated workload and one Philly virtual cluster
(seeds 1 and 2, plus DL2's 60-server setting and the shipped learned policies on held-out seeds);
each run's per-job records (every float written with ``repr``, so bit-for-bit) and its event and
decision counts go into one JSON file. A run that raises records its error message instead.

    python benchmarks/records_fingerprint.py --out /tmp/before.json      # on the old code
    python benchmarks/records_fingerprint.py --out /tmp/after.json       # on the new code
    python benchmarks/records_fingerprint.py --diff /tmp/before.json /tmp/after.json

``--large`` runs instead the priority policies on a large Philly virtual cluster (b436b2 up to
the first day of its burst of arrivals: thousands of jobs waiting), where incremental queues
matter (issue 18). ``--pollux`` runs instead Pollux's own workloads (its 8 traces, a load
variant, a smaller cluster) under Pollux and the policies it is compared with, which the default
set does not cover (issue 31). ``--hetero`` runs instead every registered scheduler on Gavel's
heterogeneous workload (K80/P100/V100 servers, seeds 1 and 2) and Gavel's six LP policies on 600
multi-GPU jobs, where ``core="auto"`` takes the compiled round core of several GPU types (issue 33).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import astuple
from typing import Any

WORKLOADS = ("dl2", "deeprm", "sched2", "kubeflow", "philly:7f04ca")
SEEDS = (1, 2)
EXTRA: tuple[tuple[str, str, int, dict[str, Any]], ...] = (
    ("dl2", "dl2", 101, {}),
    ("dl2", "dl2", 102, {"servers": 60}),
    ("dl2", "offline-rl", 101, {}),
    ("dl2", "drf", 3, {"servers": 200}),
    ("deeprm", "deeprm", 9001, {"horizon_steps": 50}),
    ("sched2", "sched2", 9001, {"load": 1.8}),
)


LARGE = tuple(
    ("philly:b436b2", scheduler, 1, {"horizon_s": 2.75e6})
    for scheduler in (
        "fifo",
        "sjf",
        "sif",
        "dsif",
        "spf",
        "lrf",
        "srtf",
        "las",
        "tiresias",
        "saf",
        "kubeflow-dynamic",
    )
)
"""b436b2 up to the first day of its burst of arrivals (the old code needs minutes a policy for
the whole VC)."""

POLLUX = (
    *(("pollux", "pollux", 0, {"number": n}) for n in range(1, 9)),
    ("pollux", "pollux", 1, {"number": 6, "load": 1.5}),
    ("pollux", "pollux", 0, {"number": 2, "servers": 8}),
    ("pollux", "tiresias:57600", 0, {"number": 6, "jobs": "tuned"}),
    ("pollux", "optimus-oracle-allreduce", 0, {"number": 6, "jobs": "tuned-batch"}),
)
"""Pollux's workloads: every trace under Pollux, and its comparison points on workload 6."""


GAVEL_LP = ("las", "ftf", "makespan")
"""Gavel's LP policies (each also ``-het``), run at a size the compiled core takes (`--hetero`)."""


def _runs(hetero: bool = False) -> list[tuple[str, str, int, dict[str, Any]]]:
    from dlsched.schedulers.registry import schedulers

    names = sorted(schedulers())
    if hetero:
        big = {"num_jobs": 600, "multi_gpu": True}
        lp = [f"gavel-{p}{h}" for p in GAVEL_LP for h in ("", "-het")]
        return [("gavel", s, seed, {}) for s in names for seed in SEEDS] + [
            ("gavel", s, 3, big) for s in lp
        ]
    runs = [(w, s, seed, {}) for w in WORKLOADS for s in names for seed in SEEDS]
    return runs + list(EXTRA)


def _key(run: tuple[str, str, int, dict[str, Any]]) -> str:
    workload, scheduler, seed, options = run
    return f"{workload}|{scheduler}|{seed}|{json.dumps(options, sort_keys=True)}"


CORE: dict[str, str] = {}
"""``simulate``'s ``core`` for every run (``--core``; empty: its default), e.g. ``compiled`` to
check a compiled core against fingerprints of the simulator (the key stays the same)."""


def _one(run: tuple[str, str, int, dict[str, Any]]) -> tuple[str, Any]:
    import dlsched

    workload, scheduler, seed, options = run
    key = _key(run)
    try:
        result = dlsched.simulate(
            workload=workload, scheduler=scheduler, seed=seed, **options, **CORE
        )
    except Exception as exc:  # the error is part of the behaviour being compared
        return key, {"error": f"{type(exc).__name__}: {exc}"}
    rows = [repr(astuple(r)) for r in result.records]
    digest = hashlib.sha256("\n".join(rows).encode()).hexdigest()
    return key, {
        "sha256": digest,
        "finished": len(rows),
        "jobs": result.num_jobs,
        "events": result.events,
        "decisions": result.decisions,
        "end_s": repr(result.end_s),
        "gpu_util": repr(result.gpu_util),
        "rows": rows,
    }


def _run_with_progress(
    runs: list[tuple[str, str, int, dict[str, Any]]], partial: str, workers: int, timeout_s: float
) -> dict[str, Any]:
    """Run ``runs``, appending each result to ``partial`` (JSON lines) as it ends, so a run of
    hours that is stopped keeps what it did: started again, it skips the keys already there."""
    results: dict[str, Any] = {}
    if os.path.exists(partial):
        with open(partial) as fh:
            for line in fh:
                if line.strip():
                    key, value = json.loads(line)
                    results[key] = value
    todo = [r for r in runs if _key(r) not in results]
    print(f"{len(runs)} runs, {len(runs) - len(todo)} already in {partial}", file=sys.stderr)
    with ThreadPoolExecutor(workers) as pool, open(partial, "a") as out:
        futures = [pool.submit(_bounded, run, timeout_s) for run in todo]
        for future in as_completed(futures):
            key, value = future.result()
            results[key] = value
            out.write(json.dumps([key, value]) + "\n")
            out.flush()
    return {key: results[key] for key in map(_key, runs)}


def _bounded(run: tuple[str, str, int, dict[str, Any]], timeout_s: float) -> tuple[str, Any]:
    """`_one` in a child process, stopped after ``timeout_s`` of wall time (recorded as a
    timeout, which `_diff` reports as not compared): a few schedulers far outside their
    setting (dl2 on the deeprm workload) run for hours, in the old code and the new alike."""
    start = time.perf_counter()
    receive, send = multiprocessing.get_context("fork").Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_send_one, args=(run, send))
    child.start()
    send.close()
    if receive.poll(timeout_s):
        key, value = receive.recv()
    else:
        key, value = _key(run), {"timeout_s": timeout_s}
    child.kill()
    child.join()
    print(f"{time.perf_counter() - start:8.1f} s  {key}", file=sys.stderr, flush=True)
    return key, value


def _send_one(run: tuple[str, str, int, dict[str, Any]], send: Any) -> None:
    send.send(_one(run))


def _diff(before_path: str, after_path: str, only: str | None, subset: bool = False) -> int:
    with open(before_path) as fh:
        before = json.load(fh)
    with open(after_path) as fh:
        after = json.load(fh)
    bad = timed_out = 0
    keys = set(after) if subset else set(before) | set(after)  # subset: only what after ran
    for key in sorted(keys):
        if only is not None and only not in key:
            continue
        a, b = before.get(key), after.get(key)
        if a is not None and b is not None and ("timeout_s" in a or "timeout_s" in b):
            print(f"not compared (timed out {'before' if 'timeout_s' in a else 'after'}): {key}")
            timed_out += 1
            continue
        if a is None or b is None:
            print(f"only in {'after' if a is None else 'before'}: {key}")
            bad += 1
            continue
        a = {k: v for k, v in a.items() if k != "rows"}
        b = {k: v for k, v in b.items() if k != "rows"}
        if a != b:
            print(f"DIFFERS {key}: {a} != {b}")
            bad += 1
    print(
        f"{len(before)} runs before, {len(after)} after, {bad} differ, "
        f"{timed_out} not compared (timed out)"
    )
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the fingerprints here (JSON)")
    parser.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--timeout-s", type=float, default=600.0, help="wall-time cap of one run (s)"
    )
    parser.add_argument("--match", help="only runs whose key contains this text (e.g. philly)")
    parser.add_argument("--large", action="store_true", help="the large Philly VC set instead")
    parser.add_argument("--pollux", action="store_true", help="the Pollux workloads set instead")
    parser.add_argument("--hetero", action="store_true", help="the heterogeneous set instead")
    parser.add_argument("--schedulers", help="only these schedulers (comma-separated)")
    parser.add_argument(
        "--subset", action="store_true", help="--diff only the runs AFTER has (a --schedulers run)"
    )
    parser.add_argument("--core", choices=("auto", "python", "compiled"), help="simulate's core")
    args = parser.parse_args()
    if args.core:
        CORE["core"] = args.core  # (forked runs see it)
    if args.diff:
        return _diff(*args.diff, args.match, args.subset)
    if not args.out:
        parser.error("give --out or --diff")
    every = list(LARGE) if args.large else list(POLLUX) if args.pollux else _runs(args.hetero)
    runs = [r for r in every if not args.match or args.match in _key(r)]
    if args.schedulers:
        wanted = set(args.schedulers.split(","))
        runs = [r for r in runs if r[1] in wanted]
    results = _run_with_progress(runs, args.out + ".partial", args.workers, args.timeout_s)
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=0, sort_keys=True)
    errors = sum("error" in v for v in results.values())
    print(f"{len(results)} runs, {errors} raised, written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
