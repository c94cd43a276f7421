"""dlsched's Gavel policies side by side with Gavel's own simulator, on the same jobs.

    python benchmarks/gavel_side_by_side.py /work/shared/peers/gavel --jobs 60 --rate 6

PEER is a checkout of Gavel (its ``scheduler/`` folder is read, never changed: it is copied to
a temporary folder where its gRPC stubs are generated, as its ``make`` does). Gavel runs in its
own virtual environment (``--gavel-python``; by default one is made with ``python -m venv`` in
``--venv-dir`` and its dependencies installed with pip from the registry: cvxpy, ecos, numpy,
psutil, grpcio, grpcio-tools, matrix-completion, scikit-learn).

One job list is drawn with dlsched's Gavel generator (`dlsched.papers.gavel.workload.draw_jobs`)
and written as a Gavel trace (whole steps); Gavel's ``simulate_scheduler_with_trace.py`` runs
it on ``-c V:P:K`` GPUs (one GPU per server, Gavel's default) and dlsched on the same GPUs (servers
of 4). Printed per policy: average JCT and makespan of each, their ratio (target: within ±10 %)
and the time of each (target: dlsched ≥ 50× faster). A policy may name a variant
(``gavel-makespan:centre``): it is compared with its policy's Gavel run.

Both are timed the same way (``--repeat N``: N runs of each side, alternated, medians; the
load average beside each line): each runs as a whole process of its own (interpreter start-up,
imports, reading the jobs, the simulation), wall time and CPU time (user + system, of the
child process: steadier than wall time on a loaded machine). dlsched's process is this script
with ``--dlsched-run JOBS POLICY CLUSTER`` (the jobs as JSON); it also reports the time of the
simulation alone (``sim``). ``--before SRC`` also runs, in turn with the two, dlsched from
another source folder (``git archive REV src | tar -x -C DIR``, then ``DIR/src``): one more line
per policy, ``(before)``, against the same Gavel runs. ``--gavel-results FILE`` keeps each
Gavel run's figures (JSON, keyed by the trace's sha256, policy, cluster and seed, with the date
and load they were measured at) and reuses them instead of running Gavel again (its run of 4,000
jobs takes tens of minutes); a reused line says ``gavel cached`` and when it was measured.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

import dlsched
from dlsched.models.gavel_table import throughputs
from dlsched.papers.gavel.workload import draw_jobs, gavel_workload

# argparse, shutil, subprocess and tempfile are imported where used: dlsched's own timed process
# (``--dlsched-run``) needs none of them (~10 ms of its start-up, not dlsched's)

POLICIES = {
    "gavel-las": "max_min_fairness",
    "gavel-las-het": "max_min_fairness_perf",
    "gavel-ftf": "finish_time_fairness",
    "gavel-ftf-het": "finish_time_fairness_perf",
    "gavel-makespan": "min_total_duration",
    "gavel-makespan-het": "min_total_duration_perf",
    "gavel-fifo": "fifo",
    "gavel-fifo-het": "fifo_perf",
}
"""dlsched's name -> Gavel's policy name."""
PACKAGES = (
    "cvxpy",
    "ecos",
    "numpy",
    "psutil",
    "grpcio",
    "grpcio-tools",
    "matrix-completion",
    "scikit-learn",
)
_JCT = re.compile(r"Average job completion time: ([0-9.]+) seconds")
_SPAN = re.compile(r"Total duration: ([0-9.]+) seconds")


def gavel_python(venv_dir: Path) -> Path:
    """The Python of Gavel's own venv in ``venv_dir``, made and filled with pip if missing."""
    import subprocess

    python = venv_dir / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv_dir)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    return python


def prepare_gavel(peer: Path, python: Path, work: Path) -> Path:
    """A copy of ``peer/scheduler`` in ``work`` with its gRPC stubs generated."""
    import shutil
    import subprocess

    source = peer / "scheduler"
    if not (source / "scheduler.py").exists():
        raise SystemExit(f"{peer}: no scheduler/scheduler.py (give the Gavel checkout)")
    copy = work / "scheduler"
    shutil.copytree(source, copy)
    for proto in sorted((copy / "runtime" / "protobuf").glob("*.proto")):
        subprocess.run(
            [str(python), "-m", "grpc_tools.protoc", "-Iruntime/protobuf",
             "--python_out=runtime/rpc_stubs", "--grpc_python_out=runtime/rpc_stubs",
             str(proto.relative_to(copy))],
            cwd=copy, check=True,
        )  # fmt: skip
    return copy


def write_trace(drawn: list[tuple[float, str, int, float]], path: Path) -> list[int]:
    """Gavel's trace format, one job a line; the whole steps of each job."""
    v100 = throughputs()["v100"]
    steps = [max(1, int(d * v100[(kind, scale)])) for _, kind, scale, d in drawn]
    with path.open("w") as out:
        for (t, kind, scale, _), n in zip(drawn, steps, strict=True):
            out.write(f"{kind}\tcmd\tdir\t--num_steps\t0\t{n}\t{scale}\t1\t-1\t{t!r}\n")
    return steps


def timed(
    command: list[str], cwd: Path | None, timeout_s: float, env: dict[str, str] | None = None
) -> tuple[str, float, float]:
    """(output, wall s, CPU s) of ``command`` run as a child process."""
    import subprocess

    before = os.times()
    start = time.perf_counter()
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=timeout_s, env=env
    )
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise RuntimeError(f"{command[1]} failed (exit {done.returncode}):\n{output[-2000:]}")
    return output, wall, cpu


def run_gavel(
    python: Path, copy: Path, trace: Path, policy: str, cluster: str, seed: int, timeout_s: float
) -> tuple[float, float, float, float]:
    """(average JCT s, makespan s, wall s, CPU s) of Gavel's simulator on ``trace``."""
    output, wall, cpu = timed(
        [str(python), "scripts/drivers/simulate_scheduler_with_trace.py", "-t", str(trace),
         "-p", policy, "-c", cluster, "--seed", str(seed)],
        copy, timeout_s,
    )  # fmt: skip
    jct, span = _JCT.search(output), _SPAN.search(output)
    if jct is None or span is None:
        raise RuntimeError(
            f"Gavel {policy}: no average JCT or total duration in:\n{output[-2000:]}"
        )
    return float(jct.group(1)), float(span.group(1)), wall, cpu


def cached_gavel(
    results: Path | None, key: str, run: Callable[[], tuple[float, float, float, float]]
) -> tuple[tuple[float, float, float, float], str | None]:
    """Gavel's (JCT, makespan, wall, CPU) for ``key`` from ``results`` (JSON) if it holds them,
    else ``run()``'s, stored there; and when the reused ones were measured (None: just now)."""
    stored = json.loads(results.read_text()) if results is not None and results.exists() else {}
    if key in stored:
        got = stored[key]
        return (got["jct_s"], got["span_s"], got["wall_s"], got["cpu_s"]), got["measured"]
    g = run()
    if results is not None:
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        stored[key] = {
            "jct_s": g[0], "span_s": g[1], "wall_s": g[2], "cpu_s": g[3],
            "measured": f"{stamp}, load {os.getloadavg()[0]:.1f}",
        }  # fmt: skip
        results.write_text(json.dumps(stored, indent=1))
    return g, None


def exact_jobs(
    drawn: list[tuple[float, str, int, float]], steps: list[int]
) -> list[tuple[float, str, int, float]]:
    """The drawn jobs with durations of the whole steps written in Gavel's trace."""
    v100 = throughputs()["v100"]
    return [(t, k, s, n / v100[(k, s)]) for (t, k, s, _), n in zip(drawn, steps, strict=True)]


def dlsched_once(jobs_json: Path, name: str, cluster: str) -> dict[str, float]:
    """dlsched on the jobs in ``jobs_json`` on ``-c V:P:K`` GPUs (servers of 4)."""
    jobs = [
        (float(t), str(k), int(s), float(d)) for t, k, s, d in json.loads(jobs_json.read_text())
    ]
    v, p, k = (int(x) for x in cluster.split(":"))
    groups = [f"{t}:{n // 4}x4" for t, n in (("v100", v), ("p100", p), ("k80", k)) if n]
    workload = gavel_workload(jobs, cluster=",".join(groups), name="gavel")
    start = time.perf_counter()
    summary = dlsched.simulate(workload, name).summary()
    return {
        "avg_jct_s": float(summary["avg_jct_s"]),
        "makespan_s": float(summary["makespan_s"]),
        "sim_s": time.perf_counter() - start,
    }


def run_dlsched(
    jobs_json: Path, name: str, cluster: str, timeout_s: float, src: Path | None = None
) -> tuple[float, float, float, float, float]:
    """(average JCT s, makespan s, wall s, CPU s, simulation s) of dlsched in its own process
    (``src``: dlsched's source folder to import instead of this one's, e.g. an older version)."""
    command = [sys.executable, __file__, "--dlsched-run", str(jobs_json), name, cluster]
    if src is None:
        output, wall, cpu = timed(command, None, timeout_s)
    else:
        env = {**os.environ, "PYTHONPATH": str(src.resolve())}
        output, wall, cpu = timed(command, None, timeout_s, env)
    got = json.loads(output.strip().splitlines()[-1])
    return got["avg_jct_s"], got["makespan_s"], wall, cpu, got["sim_s"]


def _medians(runs: Sequence[tuple[float, ...]]) -> tuple[float, ...]:
    """Each field's median over ``runs`` (the JCT and makespan are the same in every run)."""
    return tuple(float(np.median(column)) for column in zip(*runs, strict=True))


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--dlsched-run":  # dlsched's own timed process
        print(json.dumps(dlsched_once(Path(sys.argv[2]), sys.argv[3], sys.argv[4])))
        return 0
    import argparse
    import hashlib
    import tempfile
    from functools import partial

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("peer", type=Path, help="Gavel checkout (holds scheduler/)")
    parser.add_argument(
        "--policies", default="gavel-las,gavel-las-het,gavel-ftf-het,gavel-makespan-het"
    )
    parser.add_argument("--jobs", type=int, default=60)
    parser.add_argument("--rate", type=float, default=6.0, help="jobs per hour")
    parser.add_argument("--multi-gpu", action="store_true")
    parser.add_argument("--cluster", default="12:12:12", help="V100:P100:K80 GPUs (multiples of 4)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gavel-python", type=Path, help="Python of Gavel's venv")
    parser.add_argument("--venv-dir", type=Path, default=Path(tempfile.gettempdir()) / "gavel-venv")
    parser.add_argument("--timeout-s", type=float, default=1800.0, help="per run")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each side per policy (times: medians)"
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="another dlsched source folder (e.g. from git archive), run in turn with the two "
        "sides and printed as a second dlsched line '(before)'",
    )
    parser.add_argument(
        "--gavel-results",
        type=Path,
        help="JSON file of Gavel's figures: reused where it holds this trace, policy, cluster "
        "and seed (then Gavel is not run again), else measured and stored",
    )
    args = parser.parse_args()
    unknown = [p for p in args.policies.split(",") if p.partition(":")[0] not in POLICIES]
    if unknown:
        parser.error(f"--policies: {unknown[0]!r} is not one of {', '.join(POLICIES)}")
    if any(int(x) % 4 for x in args.cluster.split(":")):
        parser.error(f"--cluster {args.cluster}: GPU counts must be multiples of 4")
    python = args.gavel_python or gavel_python(args.venv_dir)
    drawn = draw_jobs(np.random.default_rng(args.seed), args.jobs, args.rate, args.multi_gpu)
    print(f"{args.jobs} jobs, {args.rate:g}/h, cluster {args.cluster}, seed {args.seed}")
    print(
        f"{'policy':20} {'JCT gavel':>11} {'dlsched':>11} {'ratio':>6} {'span gavel':>11} "
        f"{'dlsched':>11} {'ratio':>6} {'wall gavel':>10} {'dlsched':>8} {'faster':>6} "
        f"{'cpu gavel':>9} {'dlsched':>8} {'faster':>6} {'sim':>6} {'load':>5}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        copy = prepare_gavel(args.peer, python, work)
        trace = work / "jobs.trace"
        steps = write_trace(drawn, trace)
        jobs_json = work / "jobs.json"
        jobs_json.write_text(json.dumps(exact_jobs(drawn, steps)))
        digest = hashlib.sha256(trace.read_bytes()).hexdigest()
        for name in args.policies.split(","):
            gavel_runs, dlsched_runs, before_runs = [], [], []
            gavel_name = POLICIES[name.partition(":")[0]]  # a variant: its policy's Gavel run
            key = f"{digest} {gavel_name} {args.cluster} seed {args.seed}"
            measured: list[str | None] = []
            for _ in range(max(args.repeat, 1)):  # alternated, so both meet the same load
                gavel = (python, copy, trace, gavel_name, args.cluster, args.seed)
                got, when = cached_gavel(
                    args.gavel_results, key, partial(run_gavel, *gavel, args.timeout_s)
                )
                gavel_runs.append(got)
                measured.append(when)
                dlsched_runs.append(run_dlsched(jobs_json, name, args.cluster, args.timeout_s))
                if args.before is not None:
                    before_runs.append(
                        run_dlsched(jobs_json, name, args.cluster, args.timeout_s, args.before)
                    )
            g = _medians(gavel_runs)
            _print_line(name, g, _medians(dlsched_runs))
            if before_runs:
                _print_line(f"{name} (before)", g, _medians(before_runs))
            if any(measured):
                print(f"  (gavel cached: measured {next(m for m in measured if m)})")
    return 0


def _print_line(name: str, g: tuple[float, ...], d: tuple[float, ...]) -> None:
    print(
        f"{name:20} {g[0]:11,.0f} {d[0]:11,.0f} {d[0] / g[0]:6.3f} {g[1]:11,.0f} "
        f"{d[1]:11,.0f} {d[1] / g[1]:6.3f} {g[2]:9.1f}s {d[2]:7.2f}s {g[2] / d[2]:5.1f}x "
        f"{g[3]:8.1f}s {d[3]:7.2f}s {g[3] / d[3]:5.1f}x {d[4]:5.2f}s "
        f"{os.getloadavg()[0]:5.1f}",
        flush=True,
    )


if __name__ == "__main__":
    raise SystemExit(main())
