"""One reconcile round for 1,000 DLJobs on 500 nodes against the fake API server.

The fake API server (``tests/k8s/apiserver.py``) runs in a child process bound to 127.0.0.1,
filled there and stopped by this script, so the CPU figure is the controller's alone:
``time.process_time`` of this process (all its threads) around the round. Wall times of the
round, of the decision and of its enactment (writes and events over real HTTP) are printed too,
with the requests the round sent by kind. Each start is one merge patch (workers, PS and
placement together); with ``--scenario resize`` every job already runs (three in four one worker
short of their request) and each resize is a placement patch and a ``/scale`` update.
``--runs N`` repeats on a fresh server and controller (the box is shared: the spread is part of
the figure).

    PYTHONPATH=src python benchmarks/k8s_reconcile.py --scheduler drf --arch ps --runs 3
"""

from __future__ import annotations

import argparse
import cProfile
import json
import multiprocessing as mp
import pstats
import sys
import time
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: tests.k8s

from kubernetes import client
from tests.k8s.apiserver import FakeApiServer
from tests.k8s.k8s_helpers import NS, PLACEMENT_ANNOTATION, dljob, node

from dlsched.k8s.controller import Controller
from dlsched.k8s.objects import GROUP, PLURAL, VERSION
from dlsched.schedulers.registry import make_scheduler


def _running(job: dict[str, Any], node_name: str, workers: int) -> None:
    """Make ``job`` hold ``workers`` workers (and its PS) on one node, as granted before."""
    ps = job["spec"]["request"]["ps"]
    job["spec"]["workers"], job["spec"]["ps"] = workers, ps
    placement = {"workers": {node_name: workers}, "ps": {node_name: ps} if ps else {}}
    job["metadata"]["annotations"] = {PLACEMENT_ANNOTATION: json.dumps(placement)}


def serve(conn: Connection, jobs: int, nodes: int, arch: str, scenario: str) -> None:
    """Child process: fill a fake API server, send its URL, serve until told to stop, then
    send the requests it served (method and path kind)."""
    with FakeApiServer() as server:
        for i in range(nodes):
            server.put("nodes", "", node(f"node-{i:04d}", gpu=8, cpu=64, mem_gi=512))
        for i in range(jobs):
            job = dljob(f"job-{i:04d}", workers=1 + i % 4, arch=arch, max_workers=4)
            if scenario == "resize":
                _running(job, f"node-{i % nodes:04d}", 1 + i % 4 - (i % 4 > 0))
            server.put("dljobs", NS, job)
        conn.send(server.url)
        conn.recv()  # the parent's stop
        conn.send(dict(Counter(f"{m} {_what(p)}" for m, p in server.requests)))


def _what(path: str) -> str:
    parts = path.rstrip("/").split("/")
    if parts[-1] in ("scale", "status", "binding"):
        return f"{parts[-3]}/{parts[-1]}"
    return parts[-2] if parts[-2] in ("dljobs", "events", "pods") else parts[-1]


def started(api: client.ApiClient) -> int:
    """DLJobs holding workers (read after the timed rounds)."""
    raw = client.CustomObjectsApi(api).list_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, _preload_content=False
    )
    return sum(1 for obj in json.loads(raw.data)["items"] if obj["spec"].get("workers"))


def run_once(args: argparse.Namespace) -> None:
    """One fresh server and controller: the first round, then a steady one."""
    here, there = mp.Pipe()
    child = mp.get_context("spawn").Process(
        target=serve, args=(there, args.jobs, args.nodes, args.arch, args.scenario)
    )
    child.start()
    requests: dict[str, int] = {}
    try:
        url = here.recv()
        with client.ApiClient(client.Configuration(host=url)) as api:
            ctl = Controller(api, make_scheduler(args.scheduler), namespace=NS)
            profile = cProfile.Profile(time.process_time) if args.profile else None
            cpu0, wall0 = time.process_time(), time.perf_counter()
            if profile is not None:
                profile.enable()
            report = ctl.reconcile()
            if profile is not None:
                profile.disable()
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            cpu0, wall0 = time.process_time(), time.perf_counter()
            ctl.reconcile()
            cpu2, wall2 = time.process_time() - cpu0, time.perf_counter() - wall0
            n = started(api)
    finally:
        here.send("stop")
        if here.poll(30):
            requests = here.recv()
        child.join(timeout=10)
        if child.is_alive():
            child.terminate()
    print(
        f"scheduler {args.scheduler}, {args.arch} jobs, scenario {args.scenario}: "
        f"{args.jobs} jobs, {args.nodes} nodes"
    )
    print(f"first round: {n} running after; controller CPU {cpu:.2f} s, wall {wall:.2f} s")
    print(f"  decision {report.decision_s * 1000:.1f} ms, enactment {report.enactment_s:.2f} s")
    print(f"steady round (no change): controller CPU {cpu2:.2f} s, wall {wall2:.2f} s")
    print("  requests served (both rounds and the final list):")
    for what, count in sorted(requests.items()):
        print(f"    {count:5d} {what}")
    if profile is not None:
        print("  first round's CPU by part (cProfile, process-time clock; profiling inflates it):")
        _shares(profile)


PARTS = {
    "HTTP, every request (urllib3, http.client)": ("urllib3/connectionpool.py", "urlopen"),
    "  of which response header parsing": ("http/client.py", "parse_headers"),
    "observe: lists (their HTTP too) and parsing": ("dlsched/k8s/controller.py", "observe"),
    "scheduler decision": ("dlsched/schedulers/", "decide"),
    "placement": ("dlsched/placement/tasks.py", "place_tasks"),
}


def _shares(profile: cProfile.Profile) -> None:
    """Cumulative share of the round in a few parts (their outermost calls)."""
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    total = max(cum for _cc, _nc, _tt, cum, _callers in stats.values())
    for label, (file_part, func) in PARTS.items():
        cum = sum(
            row[3]
            for (file, _line, name), row in stats.items()
            if file_part in file and name == func and not _called_by_itself(row, file_part, func)
        )
        print(f"    {cum / total:5.1%} {label}")


def _called_by_itself(row: tuple, file_part: str, func: str) -> bool:
    callers = row[4]
    return any(file_part in f and n == func for f, _l, n in callers)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scheduler", default="drf")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--arch", choices=("ps", "allreduce"), default="ps")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="Split the first round's CPU.")
    parser.add_argument(
        "--scenario",
        choices=("start", "resize"),
        default="start",
        help="start: no job runs yet; resize: 3 in 4 jobs run one worker short of their request",
    )
    args = parser.parse_args()
    for _ in range(args.runs):
        run_once(args)


if __name__ == "__main__":
    main()
