"""dlsched vs Blox's simulator on the same Philly jobs, cluster and policy, in one run.

Speed (jobs/s of each, whole processes) and fidelity (the average JCT each reports) for FIFO
and LAS, on the first N jobs of Philly from 2017-10-01 (dlsched's packaged trace) on S servers
of 8 GPUs. Blox is a peer (msr-fiddle/blox, MIT): it is never copied into the project. The
benchmark takes the peer's paths and its venv as arguments::

    PYTHONPATH=src python benchmarks/peer_side_by_side.py \\
        --blox ../shared/peers/blox --blox-run ../shared/peers/blox-run \\
        --blox-python /work/peer-venvs/blox/bin/python --jobs 1000 --policies fifo,las

``--blox-run`` holds the helper scripts written for this comparison (not Blox's own code):
``make_traces.py`` cuts the common trace, ``blox_prepare.sh`` makes a runnable, loopback-only
copy of Blox in a scratch folder (gRPC stubs generated, every socket on 127.0.0.1, and — unless
``--blox-as-shipped`` — a one-line fix of Blox's scattered placement, which otherwise refuses an
8-GPU job when node 0 has 7 free GPUs and node 1 has 8), and ``blox_trace_sim.py`` replays the
trace through Blox's own simulator process while its scheduler process runs the rounds. The
Blox venv needs pandas 1.5.3, numpy 1.26.4, grpcio and grpcio-tools 1.62.2, protobuf 4.25.3 and
matplotlib.

Each simulator runs as whole processes (start, imports, trace loading, simulation; for Blox
both of its processes), timed by wall clock and by CPU time (children's ``getrusage``), ``--reps``
times interleaved; the medians are printed. ``--variants`` adds dlsched runs (in this process)
with Blox's assumptions switched on one at a time — decisions only every 300 s round instead of
at every arrival and completion; no slowdown for jobs spread over servers; for LAS, service
counted as wall time held instead of GPU-seconds — to show where the average JCTs differ and
why. ``--blox-rounds`` also times, as a whole process like the others, dlsched in Blox's rounds
(``BLOX_ROUNDS_OPTIONS``: decisions every 300 s only, no cross-server slowdown, no restart pause;
row ``dlsched-rounds``), the configuration whose average JCT is compared with Blox's.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GPUS_PER_SERVER = 8


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def make_trace(blox_run: Path, jobs: int, servers: int, out: Path) -> Path:
    """The common trace: first ``jobs`` Philly jobs from 2017-10-01 that fit the cluster."""
    from importlib import resources

    philly = Path(str(resources.files("dlsched") / "data" / "philly_jobs.csv.gz"))
    path = out / f"trace_{jobs}.csv"
    subprocess.run(
        [
            sys.executable,
            str(blox_run / "make_traces.py"),
            "common",
            str(jobs),
            str(path),
            "--max-gpus",
            str(servers * GPUS_PER_SERVER),
        ],
        check=True,
        env={**os.environ, "PHILLY_CSV": str(philly)},
    )
    return path


def prepare_blox(blox: Path, blox_run: Path, python: str, out: Path, fix: bool) -> Path:
    """A runnable, loopback-only copy of Blox under ``out`` (the checkout is not changed)."""
    dest = out / "blox"
    venv = str(Path(python).parent.parent)
    proc = subprocess.run(
        ["bash", str(blox_run / "blox_prepare.sh"), str(blox), str(dest), venv],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "BLOX_FIX_PLACEMENT": "1" if fix else "0"},
    )
    return Path(proc.stdout.strip().splitlines()[-1])


def run_blox(
    copy: Path, blox_run: Path, python: str, trace: Path, policy: str, servers: int, out: Path
) -> dict[str, Any]:
    """One Blox run: its simulator and scheduler processes; wall, CPU and its job records."""
    work = Path(tempfile.mkdtemp(prefix=f"blox_{policy}_", dir=out))
    sim_port, rm_port = _free_ports(2)
    env = {
        **os.environ,
        "PYTHONPATH": str(copy),
        "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python",  # as Blox's README runs it
    }
    cpu0, wall0 = _children_cpu(), time.perf_counter()
    with open(work / "sim.log", "w") as log:
        sim = subprocess.Popen(
            [
                python,
                str(blox_run / "blox_trace_sim.py"),
                "--trace",
                str(trace),
                "--scheduler",
                policy.capitalize(),
                "--machines",
                str(servers),
                "--gpus-per-machine",
                str(GPUS_PER_SERVER),
                "--sim-port",
                str(sim_port),
                "--rm-port",
                str(rm_port),
            ],
            cwd=work,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        for _ in range(1200):
            if '"started"' in (work / "sim.log").read_text():
                break
            if sim.poll() is not None:
                raise RuntimeError(f"blox simulator exited: see {work / 'sim.log'}")
            time.sleep(0.05)
        with open(work / "sched.err", "w") as err:
            subprocess.run(
                [
                    python,
                    str(copy / "blox_new_flow_multi_run.py"),
                    "--simulate",
                    "--exp-prefix",
                    "trace",
                    "--round-duration",
                    "300",
                    "--simulator-rpc-port",
                    str(sim_port),
                    "--central-scheduler-port",
                    str(rm_port),
                ],
                cwd=work,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                check=False,
            )
        sim.wait(timeout=30)
    finally:
        if sim.poll() is None:
            sim.kill()
            sim.wait()
    wall = time.perf_counter() - wall0
    cpu = _children_cpu() - cpu0
    stats_files = glob.glob(str(work / "trace_*_job_stats.json"))
    stats = json.loads(Path(stats_files[0]).read_text()) if stats_files else {}
    jcts = [end - start for start, end in stats.values()]
    return {
        "sim": "blox",
        "policy": policy,
        "wall_s": wall,
        "cpu_s": cpu,
        "finished": len(jcts),
        "avg_jct_s": statistics.fmean(jcts) if jcts else float("nan"),
        "makespan_s": max((end for _, end in stats.values()), default=float("nan")),
    }


# dlsched in Blox's rounds (``--blox-rounds``), as Blox's simulator models them: decisions only
# at 300 s round boundaries, no slowdown for jobs spread over servers, and no restart pause for
# a preempted job (Blox's simulated launch: "TODO: Add time for checkpoint and restore").
BLOX_ROUNDS_OPTIONS = (
    "interval_s=300",
    "on_events=false",
    "cross_server_slowdown=false",
    "restart_s=0",
)


def run_dlsched(
    trace: Path, policy: str, servers: int, options: tuple[str, ...] = (), label: str = "dlsched"
) -> dict[str, Any]:
    """One dlsched run as a whole process (``dlsched simulate --json``, ``-o`` each option)."""
    cpu0, wall0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dlsched",
            "simulate",
            "--workload",
            f"trace:{trace}",
            "--scheduler",
            policy,
            "--servers",
            str(servers),
            *(arg for option in options for arg in ("-o", option)),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - wall0
    summary = json.loads(proc.stdout)
    return {
        "sim": label,
        "policy": policy,
        "wall_s": wall,
        "cpu_s": _children_cpu() - cpu0,
        "finished": summary["finished"],
        "avg_jct_s": summary["avg_jct_s"],
        "makespan_s": summary["makespan_s"],
        "sim_wall_s": summary["wall_s"],
        "core": summary.get("core"),  # which simulator core ran (LAS: compiled or python)
    }


class _NoLocality:
    """Every job at speed 1 once it holds all its GPUs, wherever they are (as in Blox)."""

    name = "no-locality"

    def speed(self, spec: Any, alloc: Any) -> float:
        return 1.0 if alloc.num_workers >= spec.num_workers else 0.0

    def ideal_speed(self, spec: Any) -> float:
        return 1.0

    def best_speed(self, spec: Any) -> float:
        return 1.0


def _wall_time_las() -> Any:
    """LAS ranked by wall time held (Blox adds the round length to a running job's service)
    instead of GPU-seconds; ties by arrival."""
    from dlsched.schedulers.base import BaseScheduler
    from dlsched.schedulers.ordered import run_in_order

    class WallTimeLas(BaseScheduler):
        name = "las-wall-time"
        preemptive = True

        def decide(self, view: Any) -> Any:
            now = view.now_s
            order = sorted(
                view.jobs(),
                key=lambda r: (
                    r.attained_gpu_s_at(now) / max(r.spec.num_gpus, 1),
                    r.spec.submit_time_s,
                    r.job_id,
                ),
            )
            return run_in_order(view, order)

    return WallTimeLas()


def run_variants(trace: Path, policy: str, servers: int) -> list[dict[str, Any]]:
    """dlsched with Blox's assumptions switched on one at a time: decisions only every 300 s
    round; no slowdown for jobs spread over servers; (LAS) service as wall time held."""
    import dataclasses

    from dlsched.api import simulate
    from dlsched.workloads.registry import make_workload

    workload = make_workload(f"trace:{trace}", seed=0, servers=servers)
    flat = dataclasses.replace(workload, model=_NoLocality())
    rounds = {"interval_s": 300.0, "on_events": False}
    cases: list[tuple[str, Any, Any, dict[str, Any]]] = [
        ("300 s rounds", workload, policy, rounds),
        ("300 s rounds, no locality slowdown", flat, policy, rounds),
    ]
    if policy == "las":
        cases += [
            ("300 s rounds, no locality slowdown, wall-time LAS", flat, _wall_time_las(), rounds),
            ("every event, no locality slowdown, wall-time LAS", flat, _wall_time_las(), {}),
        ]
    rows = []
    for label, work, scheduler, options in cases:
        summary = simulate(workload=work, scheduler=scheduler, seed=0, **options).summary()
        rows.append(
            {
                "sim": f"dlsched, {label}",
                "policy": policy,
                "finished": summary["finished"],
                "avg_jct_s": summary["avg_jct_s"],
                "makespan_s": summary["makespan_s"],
            }
        )
    return rows


def _versus(jobs: int, b: dict[str, float], name: str, d: dict[str, float]) -> str:
    """One summary line: Blox's medians beside one dlsched configuration's."""
    return (
        f"blox {jobs / b['wall_s']:.1f} jobs/s ({b['wall_s']:.1f} s wall, "
        f"{b['cpu_s']:.1f} s CPU), {name} {jobs / d['wall_s']:.1f} jobs/s "
        f"({d['wall_s']:.2f} s wall, {d['cpu_s']:.2f} s CPU): ratio "
        f"{b['wall_s'] / d['wall_s']:.1f}x wall, {b['cpu_s'] / d['cpu_s']:.1f}x CPU; "
        f"avg JCT blox {b['avg_jct_s']:,.0f} s, {name} {d['avg_jct_s']:,.0f} s "
        f"({100 * (d['avg_jct_s'] / b['avg_jct_s'] - 1):+.1f} %); makespan "
        f"{b['makespan_s']:,.0f} vs {d['makespan_s']:,.0f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blox", type=Path, required=True, help="a Blox checkout (peer)")
    parser.add_argument("--blox-run", type=Path, required=True, help="the blox-run helpers")
    parser.add_argument("--blox-python", required=True, help="python of Blox's own venv")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--servers", type=int, default=16)
    parser.add_argument("--policies", default="fifo,las")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--variants", action="store_true", help="dlsched with Blox's assumptions")
    parser.add_argument(
        "--blox-rounds",
        action="store_true",
        help="also time dlsched in Blox's rounds (" + " ".join(BLOX_ROUNDS_OPTIONS) + ")",
    )
    parser.add_argument("--blox-as-shipped", action="store_true", help="no placement fix")
    parser.add_argument("--out", type=Path, default=None, help="scratch folder (default: temp)")
    parser.add_argument("--json", type=Path, default=None, help="also write every run here")
    args = parser.parse_args()
    for path in (args.blox, args.blox_run, Path(args.blox_python)):
        if not path.exists():
            print(f"peer_side_by_side: {path} does not exist", file=sys.stderr)
            return 2
    # the peer runs from its own scratch folder: relative paths would point elsewhere there
    args.blox, args.blox_run = args.blox.resolve(), args.blox_run.resolve()
    out = args.out or Path(tempfile.mkdtemp(prefix="peer_sbs_"))
    out.mkdir(parents=True, exist_ok=True)
    trace = make_trace(args.blox_run, args.jobs, args.servers, out)
    copy = prepare_blox(args.blox, args.blox_run, args.blox_python, out, not args.blox_as_shipped)
    print(
        f"{args.jobs} Philly jobs, {args.servers} x {GPUS_PER_SERVER} GPUs, Blox rounds of "
        f"300 s, placement fix {'off' if args.blox_as_shipped else 'on'}; scratch {out}",
        flush=True,
    )
    rows: list[dict[str, Any]] = []
    policies = args.policies.split(",")
    sims = ["blox", "dlsched"] + (["dlsched-rounds"] if args.blox_rounds else [])
    for rep in range(args.reps):
        for policy in policies:
            runs = [
                run_blox(copy, args.blox_run, args.blox_python, trace, policy, args.servers, out),
                run_dlsched(trace, policy, args.servers),
            ]
            if args.blox_rounds:
                runs.append(run_dlsched(trace, policy, args.servers, BLOX_ROUNDS_OPTIONS, sims[2]))
            for row in runs:
                row["rep"] = rep
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.variants:
        for policy in policies:
            for row in run_variants(trace, policy, args.servers):
                rows.append(row)
                print(json.dumps(row), flush=True)
    for policy in policies:
        med: dict[str, dict[str, float]] = {}
        for sim in sims:
            mine = [r for r in rows if r["sim"] == sim and r["policy"] == policy]
            med[sim] = {
                k: statistics.median(r[k] for r in mine)
                for k in ("wall_s", "cpu_s", "avg_jct_s", "makespan_s")
            }
        for sim in sims[1:]:
            print(f"{policy}: {_versus(args.jobs, med['blox'], sim, med[sim])}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
