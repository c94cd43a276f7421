"""Chaos run of issue 30: faults injected into live jobs and into the Kubernetes controller.

Run::

    PYTHONPATH=src .venv/bin/python benchmarks/chaos.py                       # defaults
    PYTHONPATH=src .venv/bin/python benchmarks/chaos.py --seed 3 --live-jobs 8 --live-faults 10
    PYTHONPATH=src .venv/bin/python benchmarks/chaos.py --skip-k8s --json

**Live, in-process** (`dlsched.live.cluster.LiveCluster` under FIFO, 2 cores as GPUs): a seeded
stream of ``--live-jobs`` jobs (the ``smooth`` model, snapshots every ``--snapshot-every``
steps) gets ``--live-faults`` faults, drawn (seeded) from the kinds below and spread over the
jobs, each injected once its job reached a drawn step; each job gets a shape its fault needs:

- ``kill_only_worker`` / ``kill_only_ps``: SIGKILL of a (1 PS, 1 worker) job's only worker / PS;
- ``kill_one_worker`` / ``kill_one_ps``: SIGKILL of one of two workers / PS;
- ``kill_coordinator``: SIGKILL of the job's coordinator;
- ``stop_worker``: SIGSTOP of a worker for 4 s, then SIGCONT.

**Live, ``live run`` killed**: ``dlsched live run`` (a subprocess, 3 jobs) is SIGKILLed once a
job finished, then ``live run --resume`` finishes the run; its exit code, the processes of the
killed run left 15 s later, and the temporary folders left are counted.

**Kubernetes**: ``benchmarks/chaos_k8s.py``'s ``run(seed, jobs, faults)`` (when present) is run
and its counters printed beside.

Counted: jobs lost (not finished with parameters equal, ``atol=1e-5``, to an uninterrupted
single-process run), steps redone (in all and per fault kind), processes left, exit code. All
but steps redone must be 0 (exit code 0).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.live.chaos import (
    ATOL,
    Fault,
    alive,
    descendants,
    max_param_diff,
    run_with_faults,
    stream,
)
from dlsched.live.run_log import ended_jobs, read_progress
from dlsched.live.stream import make_stream

KINDS = {
    # kind: (shape (PS, workers), role, signal kind, processes)
    "kill_only_worker": ((1, 1), "worker", "kill"),
    "kill_only_ps": ((1, 1), "ps", "kill"),
    "kill_one_worker": ((1, 2), "worker", "kill"),
    "kill_one_ps": ((2, 1), "ps", "kill"),
    "kill_coordinator": ((1, 1), "coordinator", "kill"),
    "stop_worker": ((1, 2), "worker", "stop"),
}


def live_chaos(
    seed: int, jobs: int, faults: int, steps: int, snapshot_every: int
) -> dict[str, Any]:
    """The in-process part: counters and steps redone per fault kind."""
    rng = np.random.default_rng(seed)
    names = list(KINDS)
    kinds = [names[i % len(names)] for i in rng.permutation(max(faults, jobs))][:faults]
    per_job: dict[int, list[str]] = defaultdict(list)
    for i, kind in enumerate(kinds):
        per_job[i % jobs].append(kind)
    shapes = [KINDS[per_job[j][0]][0] if per_job[j] else (1, 1) for j in range(jobs)]
    arrivals = [float(t) for t in np.round(np.cumsum(rng.exponential(2.0, jobs)), 2)]
    arrivals[0] = 0.0
    requests = stream(
        shapes,
        arrivals,
        steps=steps,
        snapshot_every=snapshot_every,
        heartbeat_timeout_s=2.0,
        seed=seed,
    )
    plan: list[tuple[Fault, str]] = []
    for j, ks in per_job.items():
        at = sorted(int(x) for x in rng.integers(steps // 5, steps * 3 // 4, len(ks)))
        at = [a + 12 * i for i, a in enumerate(at)]  # one fault settles before the next
        for kind, step in zip(ks, at, strict=True):
            _, role, signal_kind = KINDS[kind]
            plan.append((Fault(j, role, step, kind=signal_kind, stop_s=4.0), kind))
    with tempfile.TemporaryDirectory(prefix="dlsched-chaos-") as tmp:
        t0 = time.perf_counter()
        cluster, _ = run_with_faults(requests, [f for f, _ in plan], Path(tmp), horizon_s=600)
        wall = time.perf_counter() - t0
        diffs = max_param_diff(requests, Path(tmp))
    redone: dict[str, int] = defaultdict(int)
    for j in range(jobs):
        injected = sorted((f.done_at or 0.0, kind) for f, kind in plan if f.job_id == j)
        for e in cluster.events:
            if e.job_id != j or not e.steps_redone:
                continue
            cause = [kind for t, kind in injected if t <= e.t_s + 1e-6]
            redone[cause[-1] if cause else "none"] += e.steps_redone
    lost = [j for j in range(jobs) if not cluster.jobs[j].run.finished or diffs[j] >= ATOL]
    return {
        "live_jobs": jobs,
        "live_faults": len(plan),
        "jobs_lost": len(lost),
        "steps_redone": sum(redone.values()),
        "processes_left": len(alive(cluster.pids_seen)),
        "max_param_diff": max(diffs.values()),
        "repairs": sum(lv.repairs for lv in cluster.jobs.values()),
        "wall_s": round(wall, 1),
        "by_kind": {k: (kinds.count(k), redone.get(k, 0)) for k in sorted(set(kinds))},
    }


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "dlsched", "live", "run", *args]


def killed_run(seed: int, steps: int, snapshot_every: int) -> dict[str, Any]:
    """``live run`` SIGKILLed once a job finished, then ``--resume``d: the counters."""
    with tempfile.TemporaryDirectory(prefix="dlsched-chaos-run-") as tmp_name:
        tmp = Path(tmp_name)
        out = tmp / "out"
        env = {**os.environ, "TMPDIR": str(tmp)}
        n = 3
        args = [
            "-s",
            "fifo",
            "-n",
            str(n),
            "--slot",
            "0.3",
            "--steps",
            str(steps),
            "--arrival-gap",
            "0.5",
            "--step-sleep",
            "0.02",
            "--models",
            "smooth",
            "--snapshot-every",
            str(snapshot_every),
            "--seed",
            str(seed),
            "--out",
            str(out),
            "--json",
        ]
        requests = make_stream(
            n,
            seed=seed,
            cores=2,
            steps=steps,
            arrival_gap_s=0.5,
            step_sleep_s=0.02,
            models=("smooth",),
            snapshot_every=snapshot_every,
        )
        first = subprocess.Popen(
            _cli(*args), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and first.poll() is None:
            # kill once a job finished and another is well past its last snapshot
            ended = ended_jobs(out) if (out / "jobs.csv").exists() else {}
            going = {j: s for j, s in read_progress(out / "work").items() if j not in ended}
            if ended and any(
                s % snapshot_every >= snapshot_every // 2
                and s + snapshot_every < requests[j].config.total_steps
                for j, s in going.items()
            ):
                break
            time.sleep(0.1)
        children = descendants(first.pid)
        first.kill()
        first.wait(10)
        time.sleep(15)
        left = alive(children)
        t0 = time.perf_counter()
        second = subprocess.run(
            _cli("--resume", str(out), "--json"),
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        wall = time.perf_counter() - t0
        with (out / "jobs.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        diffs = max_param_diff(requests, out / "params")
        finished = {int(r["job_id"]) for r in rows if r["status"] == "finished"}
        lost = [j for j in range(n) if j not in finished or diffs[j] >= ATOL]
        leftovers = [p.name for p in tmp.iterdir() if p.name != "out"]
        return {
            "run_jobs": n,
            "run_exit_code": second.returncode,
            "run_jobs_lost": len(lost),
            "run_steps_redone": sum(int(r.get("steps_redone") or 0) for r in rows),
            "run_processes_left": len(left),
            "run_temp_dirs_left": len(leftovers) + int((out / "work").exists()),
            "run_resume_wall_s": round(wall, 1),
        }


def k8s_chaos(seed: int, jobs: int, faults: int) -> dict[str, int] | None:
    """``benchmarks/chaos_k8s.py``'s counters, or None if that file is not there."""
    here = Path(__file__).resolve().parent
    if not (here / "chaos_k8s.py").exists():
        return None
    sys.path.insert(0, str(here))
    import chaos_k8s  # type: ignore[import-not-found]

    return dict(chaos_k8s.run(seed=seed, jobs=jobs, faults=faults))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--live-jobs", type=int, default=6)
    parser.add_argument("--live-faults", type=int, default=8)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--snapshot-every", type=int, default=20)
    parser.add_argument("--k8s-jobs", type=int, default=500)
    parser.add_argument("--k8s-faults", type=int, default=20)
    parser.add_argument("--skip-k8s", action="store_true")
    parser.add_argument("--skip-killed-run", action="store_true")
    parser.add_argument("--json", action="store_true", help="one JSON object, no table")
    args = parser.parse_args()
    rows: dict[str, Any] = live_chaos(
        args.seed, args.live_jobs, args.live_faults, args.steps, args.snapshot_every
    )
    if not args.skip_killed_run:
        rows.update(killed_run(args.seed, args.steps // 2, args.snapshot_every))
    k8s = None if args.skip_k8s else k8s_chaos(args.seed, args.k8s_jobs, args.k8s_faults)
    if k8s is not None:
        rows.update({f"k8s_{k}": v for k, v in k8s.items()})
    if args.json:
        print(json.dumps(rows))
        return
    by_kind = rows.pop("by_kind")
    if "run_steps_redone" in rows:
        by_kind["kill_live_run"] = (1, rows["run_steps_redone"])
    width = max(len(k) for k in rows) + 2
    print(f"{'counter':<{width}} value")
    for key, value in rows.items():
        print(f"{key:<{width}} {value}")
    print(f"\n{'fault kind':<{width}} faults  steps redone")
    for kind, (count, redone) in by_kind.items():
        print(f"{kind:<{width}} {count:>6}  {redone:>12}")
    if k8s is None and not args.skip_k8s:
        print("(benchmarks/chaos_k8s.py not found: Kubernetes half not run)")


if __name__ == "__main__":
    main()
