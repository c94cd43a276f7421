"""Issue 30: one writer (lease fencing), finished jobs never regrown, no orphan pods, cordon,
other workloads' pods, one-line timestamped logs, SIGTERM within 5 s with the lease released."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from dlsched.k8s.lease import NotLeading
from tests.k8s.apiserver import ApiError, FakeApiServer
from tests.k8s.k8s_helpers import NS, controller, dljob, finish, grants, node, node_usage, running

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR) \S+: ")


class Hooked(FakeApiServer):
    """Calls ``hook(method, path)`` before serving each request."""

    def __init__(self) -> None:
        super().__init__()
        self.hook = lambda method, path: None

    def before(self, method: str, path: str, agent: str) -> None:
        self.hook(method, path)


@pytest.fixture
def hooked() -> Any:
    with Hooked() as server, client.ApiClient(client.Configuration(host=server.url)) as api:
        yield server, api


def _cluster(server: FakeApiServer, nodes: int = 2, jobs: int = 3, **kw: Any) -> None:
    for i in range(nodes):
        server.put("nodes", "", node(f"n{i}"))
    for i in range(jobs):
        server.put("dljobs", NS, dljob(f"j{i}", created=f"2026-01-01T00:00:0{i}Z", **kw))


def test_a_leader_paused_past_its_lease_writes_nothing_more(hooked: Any) -> None:
    server, api = hooked
    _cluster(server, jobs=3, workers=1)
    now = [1_000.0]
    first = controller(api, "fifo", identity="a", clock=lambda: now[0], lease_duration_s=15)
    second = controller(api, "fifo", identity="b", clock=lambda: now[0], lease_duration_s=15)

    def pause(method: str, path: str) -> None:
        if method == "PATCH" and now[0] < 1_100:
            now[0] += 100  # the process slept 100 s after its first write
            assert second.lease.acquire()

    server.hook = pause
    with pytest.raises(NotLeading):
        first.reconcile()
    assert server.count("PATCH", "/dljobs/") == 1  # the others were not written
    assert sum(w > 0 for w, _ in grants(server).values()) == 1


def test_the_lease_is_renewed_during_a_long_round(hooked: Any) -> None:
    server, api = hooked
    _cluster(server, nodes=4, jobs=6, workers=1)
    now = [1_000.0]

    def slow(method: str, path: str) -> None:
        if method == "PATCH":
            now[0] += 4.0  # each write takes 4 s of a 15 s lease

    server.hook = slow
    ctl = controller(api, "fifo", identity="a", clock=lambda: now[0], lease_duration_s=15)
    ctl.reconcile()
    assert sum(w > 0 for w, _ in grants(server).values()) == 6  # 24 s of writes, all made
    assert server.count("PUT", "/leases/") >= 3


@pytest.mark.parametrize("conflict_on", ["PATCH", "PUT"])
def test_a_job_finished_before_a_409_retry_is_not_regrown(hooked: Any, conflict_on: str) -> None:
    server, api = hooked
    server.put("nodes", "", node("n0", gpu=8))
    job = running(dljob("j0", workers=1, arch="allreduce", max_workers=4), "n0", 1)
    server.put("dljobs", NS, job)
    fired = []

    def finish_then_conflict(method: str, path: str) -> None:
        if method == conflict_on and "/dljobs/j0" in path and not fired:
            fired.append(server.count("POST", "/pods"))
            finish(server, "j0")  # the job ends while the round is writing
            raise ApiError(409, "Conflict", "the object has been modified")

    server.hook = finish_then_conflict
    ctl = controller(api, "drf", bind=True)
    ctl.reconcile()
    assert fired
    stored = server.get("dljobs", NS, "j0")
    assert stored["spec"]["workers"] == 1
    placed = json.loads(stored["metadata"]["annotations"]["dlsched.io/placement"])
    assert placed["workers"] == {"n0": 1}
    ctl.reconcile()
    assert server.get("dljobs", NS, "j0")["spec"]["workers"] == 1
    assert server.count("POST", "/pods") == fired[0]  # no pod made after it finished
    assert server.objects("pods", NS) == []  # and its running one deleted


def test_pods_of_finished_and_deleted_jobs_are_removed(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, jobs=2, workers=2)
    ctl = controller(api_client, "drf", bind=True)
    ctl.reconcile()
    assert len(server.objects("pods", NS)) == 6
    for pod in server.objects("pods", NS):  # the worker tasks end; the PS keep running
        if pod["metadata"]["labels"]["dlsched.io/role"] == "worker":
            pod["status"] = {"phase": "Succeeded"}
            server.put("pods", NS, pod)
    finish(server, "j0")
    server.delete("dljobs", NS, "j1")
    ctl.reconcile()
    left = [
        p for p in server.objects("pods", NS) if (p.get("status") or {}).get("phase") != "Succeeded"
    ]
    assert left == []


def test_a_cordoned_node_keeps_its_running_jobs_and_takes_no_new_task(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    server.put("nodes", "", node("n0"))
    server.put("nodes", "", node("n1"))
    a = running(dljob("a", workers=2, arch="allreduce", created="2026-01-01T00:00:00Z"), "n0", 2)
    server.put("dljobs", NS, a)
    cordoned = node("n0")
    cordoned["spec"] = {"unschedulable": True}
    server.put("nodes", "", cordoned)
    for i in range(3):
        job = dljob(f"b{i}", workers=1, arch="allreduce", created=f"2026-01-01T00:01:0{i}Z")
        server.put("dljobs", NS, job)
    controller(api_client, "fifo").reconcile()
    assert grants(server)["a"] == (2, 0)  # not preempted
    usage = node_usage(server)
    assert usage["n0"][0] == 2  # nothing new on n0: its 2 free GPUs stay free
    assert usage["n1"][0] == 3


def test_pods_of_other_workloads_count_against_node_capacity(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    server.put("nodes", "", node("n0", gpu=4))
    other = {
        "metadata": {"name": "inference"},
        "spec": {
            "nodeName": "n0",
            "containers": [{"name": "x", "resources": {"limits": {"nvidia.com/gpu": "3"}}}],
        },
        "status": {"phase": "Running"},
    }
    server.put("pods", "serving", other)
    server.put(
        "dljobs", NS, dljob("small", workers=1, arch="allreduce", created="2026-01-01T00:00:00Z")
    )
    server.put(
        "dljobs", NS, dljob("big", workers=2, arch="allreduce", created="2026-01-01T00:00:01Z")
    )
    controller(api_client, "fifo").reconcile()
    assert grants(server) == {"big": (0, 0), "small": (1, 0)}


# ---------------------------------------------------------------------- the process


def _kubeconfig(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "kubeconfig"
    cluster = {"name": "fake", "cluster": {"server": url}}
    context = {"name": "fake", "context": {"cluster": "fake", "user": "fake"}}
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [cluster],
                "users": [{"name": "fake", "user": {}}],
                "contexts": [context],
                "current-context": "fake",
            }
        )
    )
    return path


def _dlsched(*args: str) -> list[str]:
    return [sys.executable, "-m", "dlsched", *args]


def test_logs_are_timestamped_lines_of_every_grant_bind_lease_change_and_error(
    tmp_path: Path,
) -> None:
    with FakeApiServer() as server:
        _cluster(server, jobs=1, workers=1)
        server.fail_next("GET", r"/namespaces/default/dljobs$", 500, times=1)
        config = _kubeconfig(tmp_path, server.url)
        env = {"PYTHONPATH": str(ROOT / "src")}
        done = subprocess.run(
            _dlsched("k8s", "run", "--once", "--bind", "--kubeconfig", str(config)),
            capture_output=True,
            text=True,
            timeout=60,
            env={**_env(), **env},
        )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines and all(LINE.match(line) for line in lines), lines
    text = done.stderr
    assert "leading: holding lease" in text and "released lease" in text
    assert "start DLJob default/j0" in text and "bound pod default/j0-worker-0" in text
    assert re.search(r"list dljobs failed \(500 Internal Server Error\)", text)


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


@pytest.mark.parametrize("stalled", [False, True], ids=["idle", "stalled-server"])
def test_sigterm_exits_within_5_s_and_releases_the_lease(tmp_path: Path, stalled: bool) -> None:
    with Hooked() as server:
        _cluster(server, jobs=2, workers=1)
        config = _kubeconfig(tmp_path, server.url)
        stall = threading.Event()
        server.hook = lambda method, path: stall.is_set() and time.sleep(20)  # type: ignore[func-returns-value]
        command = _dlsched("k8s", "run", "--kubeconfig", str(config), "--interval", "0.5")
        env = {**_env(), "PYTHONPATH": str(ROOT / "src")}
        log = (tmp_path / "log").open("w")
        proc = subprocess.Popen(command, stderr=log, env=env)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not any(w for w, _ in grants(server).values()):
                time.sleep(0.1)
            if stalled:
                stall.set()
                time.sleep(1.0)  # a request is now held by the server
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=15)
            took = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
            stall.clear()
        holder = server.get("leases", NS, "dlsched-controller")["spec"]["holderIdentity"]
    assert took <= 5.0, (took, (tmp_path / "log").read_text()[-3000:])
    assert proc.returncode == 0
    if not stalled:  # with a request hanging, the lease is left to expire
        assert holder == ""
