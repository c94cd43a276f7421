"""One reconcile round for 1,000 DLJobs on 500 nodes against the fake API server.

The fake API server (``tests/k8s/apiserver.py``) runs in a child process bound to 127.0.0.1,
filled there and stopped by this script, so the CPU figure is the controller's alone:
``time.process_time`` of this process (all its threads) around the round. Wall times of the
round, of the decision and of its enactment (patches and events over real HTTP) are printed too.

    PYTHONPATH=src python benchmarks/k8s_reconcile.py --scheduler drf
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "k8s"))

from apiserver import FakeApiServer
from k8s_helpers import NS, dljob, node
from kubernetes import client

from dlsched.k8s.controller import Controller
from dlsched.k8s.objects import GROUP, PLURAL, VERSION
from dlsched.schedulers.registry import make_scheduler


def serve(conn: Connection, jobs: int, nodes: int) -> None:
    """Child process: fill a fake API server, send its URL, serve until told to stop."""
    with FakeApiServer() as server:
        for i in range(nodes):
            server.put("nodes", "", node(f"node-{i:04d}", gpu=8, cpu=64, mem_gi=512))
        for i in range(jobs):
            server.put("dljobs", NS, dljob(f"job-{i:04d}", workers=1 + i % 4, arch="ps"))
        conn.send(server.url)
        conn.recv()  # the parent's stop


def started(api: client.ApiClient) -> int:
    """DLJobs holding workers (read after the timed rounds)."""
    raw = client.CustomObjectsApi(api).list_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, _preload_content=False
    )
    return sum(1 for obj in json.loads(raw.data)["items"] if obj["spec"].get("workers"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scheduler", default="drf")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=500)
    args = parser.parse_args()
    here, there = mp.Pipe()
    child = mp.get_context("spawn").Process(target=serve, args=(there, args.jobs, args.nodes))
    child.start()
    try:
        url = here.recv()
        with client.ApiClient(client.Configuration(host=url)) as api:
            ctl = Controller(api, make_scheduler(args.scheduler), namespace=NS)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            report = ctl.reconcile()
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            cpu0, wall0 = time.process_time(), time.perf_counter()
            ctl.reconcile()
            cpu2, wall2 = time.process_time() - cpu0, time.perf_counter() - wall0
            n = started(api)
    finally:
        here.send("stop")
        child.join(timeout=10)
        if child.is_alive():
            child.terminate()
    print(f"scheduler {args.scheduler}: {args.jobs} jobs, {args.nodes} nodes, {n} started")
    print(f"first round (enacts every start): controller CPU {cpu:.2f} s, wall {wall:.2f} s")
    print(f"  decision {report.decision_s * 1000:.1f} ms, enactment {report.enactment_s:.2f} s")
    print(f"steady round (no change): controller CPU {cpu2:.2f} s, wall {wall2:.2f} s")


if __name__ == "__main__":
    main()
