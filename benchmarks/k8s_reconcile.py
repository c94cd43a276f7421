"""One reconcile round for 1,000 DLJobs on 500 nodes against the fake API server.

Measures the controller's CPU time (``time.process_time`` of this process, which also runs the
fake server's threads: an upper bound) and the wall time of the decision and of its enactment
(patches and events over real HTTP on 127.0.0.1).

    PYTHONPATH=src:tests/k8s python benchmarks/k8s_reconcile.py --scheduler drf
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "k8s"))

from apiserver import FakeApiServer
from k8s_helpers import NS, dljob, grants, node
from kubernetes import client

from dlsched.k8s.controller import Controller
from dlsched.schedulers.registry import make_scheduler


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scheduler", default="drf")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=500)
    args = parser.parse_args()
    with FakeApiServer() as server, client.ApiClient(client.Configuration(host=server.url)) as api:
        for i in range(args.nodes):
            server.put("nodes", "", node(f"node-{i:04d}", gpu=8, cpu=64, mem_gi=512))
        for i in range(args.jobs):
            server.put("dljobs", NS, dljob(f"job-{i:04d}", workers=1 + i % 4, arch="ps"))
        ctl = Controller(api, make_scheduler(args.scheduler), namespace=NS)
        cpu0, wall0 = _cpu_s(), time.perf_counter()
        report = ctl.reconcile()
        cpu, wall = _cpu_s() - cpu0, time.perf_counter() - wall0
        started = sum(1 for w, _ in grants(server).values() if w)
        cpu0, wall0 = _cpu_s(), time.perf_counter()
        ctl.reconcile()
        cpu2, wall2 = _cpu_s() - cpu0, time.perf_counter() - wall0
    print(f"scheduler {args.scheduler}: {args.jobs} jobs, {args.nodes} nodes, {started} started")
    print(f"first round (enacts every start): CPU {cpu:.2f} s (with server), wall {wall:.2f} s")
    print(f"  decision {report.decision_s * 1000:.1f} ms, enactment {report.enactment_s:.2f} s")
    print(f"steady round (no change): CPU {cpu2:.2f} s, wall {wall2:.2f} s")


if __name__ == "__main__":
    main()
