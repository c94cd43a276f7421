"""The controller end to end: the real client over real HTTP against the fake API server."""

from __future__ import annotations

import json
import threading
import time
import urllib.request

import pytest
from kubernetes import client

from dlsched.k8s.metrics import serve
from dlsched.k8s.objects import PLACEMENT_ANNOTATION
from tests.k8s.apiserver import FakeApiServer
from tests.k8s.k8s_helpers import NS, controller, dljob, finish, grants, node, node_usage


def _cluster(server: FakeApiServer, nodes: int = 2, jobs: int = 3, **job_kw: object) -> None:
    for i in range(nodes):
        server.put("nodes", "", node(f"n{i}"))
    for i in range(jobs):
        server.put("dljobs", NS, dljob(f"j{i}", created=f"2026-01-01T00:00:0{i}Z", **job_kw))


def test_fifo_starts_jobs_in_arrival_order_as_they_fit(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, jobs=3, workers=3)  # 8 GPUs: two jobs of 3 fit, the third waits
    report = controller(api_client, "fifo").reconcile()
    assert report.refused == {} and not report.skipped
    assert grants(server) == {"j0": (3, 1), "j1": (3, 1), "j2": (0, 0)}
    placement = json.loads(
        server.get("dljobs", NS, "j0")["metadata"]["annotations"][PLACEMENT_ANNOTATION]
    )
    assert sum(placement["workers"].values()) == 3 and sum(placement["ps"].values()) == 1
    reasons = [e["reason"] for e in server.objects("events", NS)]
    assert reasons == ["Start", "Start"]


def test_events_past_the_rounds_budget_are_counted_not_recorded(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, jobs=3, workers=2)  # 8 GPUs: all three start
    ctl = controller(api_client, "fifo", max_events=1)
    ctl.reconcile()
    assert sum(w > 0 for w, _ in grants(server).values()) == 3
    assert [e["reason"] for e in server.objects("events", NS)] == ["Start"]
    assert ctl.metrics.registry.get_sample_value("dlsched_events_skipped_total") == 2


def test_drf_gives_the_finished_jobs_gpus_to_the_waiting_one(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, jobs=3, workers=3)
    ctl = controller(api_client, "drf")
    ctl.reconcile()
    assert grants(server)["j2"] == (0, 0)
    finish(server, "j0")
    ctl.reconcile()
    assert grants(server)["j2"] == (3, 1)
    assert all(u[0] <= 4 for u in node_usage(server).values())


def test_a_second_round_changes_nothing(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, jobs=3, workers=3)
    ctl = controller(api_client, "drf")
    ctl.reconcile()
    patches = server.count("PATCH", "/dljobs/")
    ctl.reconcile()
    assert server.count("PATCH", "/dljobs/") == patches


def test_a_lost_node_frees_its_jobs_and_they_are_rescheduled(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, nodes=3, jobs=2, workers=4)  # each job fills one node's 4 GPUs
    ctl = controller(api_client, "fifo", placement="pack")
    ctl.reconcile()
    lost = {n for n in node_usage(server)}
    victim = sorted(lost)[0]
    server.delete("nodes", "", victim)
    report = ctl.reconcile()
    assert report.reclaimed >= 1
    assert grants(server) == {"j0": (4, 1), "j1": (4, 1)}
    assert victim not in node_usage(server)
    assert all(u[0] <= 4 for u in node_usage(server).values())


def test_a_not_ready_node_counts_as_lost(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, nodes=2, jobs=1, workers=4)
    ctl = controller(api_client, "fifo", placement="pack")
    ctl.reconcile()
    (held,) = node_usage(server)
    server.put("nodes", "", node(held, ready=False))
    report = ctl.reconcile()
    assert report.reclaimed == 1
    assert grants(server) == {"j0": (4, 1)} and held not in node_usage(server)


def test_with_no_usable_node_left_stale_grants_are_still_reclaimed(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, nodes=1, jobs=1, workers=2)
    ctl = controller(api_client, "fifo")
    ctl.reconcile()
    assert grants(server) == {"j0": (2, 1)}
    server.delete("nodes", "", "n0")
    report = ctl.reconcile()
    assert report.reclaimed == 1 and report.skipped == "no node is Ready"
    assert grants(server) == {"j0": (0, 0)}
    assert PLACEMENT_ANNOTATION not in server.get("dljobs", NS, "j0")["metadata"].get(
        "annotations", {}
    )
    patches = server.count("PATCH", "/dljobs/")
    assert ctl.reconcile().reclaimed == 0 and server.count("PATCH", "/dljobs/") == patches


def test_a_conflict_on_status_only_is_retried(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, nodes=1, jobs=1, workers=2)
    ctl = controller(api_client, "fifo")
    state = ctl.observe()
    assert state.view is not None
    # the job reports progress between the controller's read and its write
    obj = server.get("dljobs", NS, "j0")
    obj["status"] = {"progress": 1.0}
    server.put("dljobs", NS, obj)
    ctl.reconcile()
    assert grants(server) == {"j0": (2, 1)}


def test_an_injected_409_is_refused_then_the_next_round_enacts(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, nodes=1, jobs=1, workers=2)
    ctl = controller(api_client, "fifo")
    server.fail_next("PATCH", r"/dljobs/j0$", 409, times=10)
    report = ctl.reconcile()
    assert set(report.refused) == {next(iter(ctl.runs))}
    assert grants(server) == {"j0": (0, 0)}
    server._faults.clear()
    ctl.reconcile()
    assert grants(server) == {"j0": (2, 1)}


def test_5xx_is_retried_with_back_off(server: FakeApiServer, api_client: client.ApiClient) -> None:
    _cluster(server, nodes=1, jobs=1, workers=2)
    server.fail_next("PATCH", r"/dljobs/j0$", 503, times=2)
    server.fail_next("GET", r"/nodes$", 500, times=1)
    report = controller(api_client, "fifo").reconcile()
    assert report.refused == {}
    assert grants(server) == {"j0": (2, 1)}


def test_a_restarted_controller_continues_from_the_cluster(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, jobs=3, workers=3)
    controller(api_client, "fifo").reconcile()
    before = grants(server)
    usage = node_usage(server)
    patches = server.count("PATCH", "/dljobs/")
    again = controller(api_client, "fifo")  # a new process: nothing in memory
    again.reconcile()
    assert grants(server) == before and node_usage(server) == usage
    assert server.count("PATCH", "/dljobs/") == patches
    finish(server, "j1")
    again.reconcile()
    assert grants(server)["j2"] == (3, 1)


def test_dry_run_logs_the_changes_and_writes_nothing(
    server: FakeApiServer, api_client: client.ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    _cluster(server, jobs=2, workers=2)
    caplog.set_level("INFO", logger="dlsched.k8s")
    report = controller(api_client, "fifo", dry_run=True).reconcile()
    assert report.refused == {}
    assert grants(server) == {"j0": (0, 0), "j1": (0, 0)}
    assert all(m == "GET" for m, _ in server.requests)
    assert caplog.text.count("dry-run: would start DLJob default/j") == 2


def test_a_failing_round_backs_off_and_the_next_one_recovers(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, nodes=1, jobs=1, workers=2)
    server.fail_next("GET", r"/namespaces/default/dljobs$", 500, times=7)  # 5 tries, then fails
    ctl = controller(api_client, "fifo", interval_s=60.0)
    stop = threading.Event()
    thread = threading.Thread(target=ctl.run, args=(stop,))
    thread.start()
    try:
        _wait(lambda: grants(server) == {"j0": (2, 1)})
    finally:
        stop.set()
        thread.join(timeout=10)
    assert ctl.metrics.registry.get_sample_value("dlsched_errors_total", {"kind": "round"}) == 1


def test_bind_creates_and_binds_pods_by_placement(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, jobs=2, workers=3)
    ctl = controller(api_client, "drf", bind=True)
    ctl.reconcile()
    pods = server.objects("pods", NS)
    assert len(pods) == 8 and all(p["spec"].get("nodeName") for p in pods)
    for name in ("j0", "j1"):
        placement = json.loads(
            server.get("dljobs", NS, name)["metadata"]["annotations"][PLACEMENT_ANNOTATION]
        )
        mine = [p for p in pods if p["metadata"]["labels"]["dlsched.io/job"] == name]
        on = {}
        for p in mine:
            if p["metadata"]["labels"]["dlsched.io/role"] == "worker":
                on[p["spec"]["nodeName"]] = on.get(p["spec"]["nodeName"], 0) + 1
        assert on == placement["workers"]
    finish(server, "j0")
    server.put("dljobs", NS, dljob("j9", workers=2, created="2026-01-01T00:01:00Z"))
    server.delete("dljobs", NS, "j1")  # gone: its pods are left to the garbage collector
    ctl.reconcile()
    j9 = [
        p for p in server.objects("pods", NS) if p["metadata"]["labels"]["dlsched.io/job"] == "j9"
    ]
    assert len(j9) == 3 and all(p["spec"]["nodeName"] for p in j9)


def test_bind_does_not_recreate_pods_that_succeeded(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, jobs=1, workers=2)
    ctl = controller(api_client, "drf", bind=True)
    ctl.reconcile()
    before = sorted(p["metadata"]["name"] for p in server.objects("pods", NS))
    for pod in server.objects("pods", NS):  # the job's tasks end before it reports Succeeded
        pod["status"] = {"phase": "Succeeded"}
        server.put("pods", NS, pod)
    creates = server.count("POST", "/pods")
    ctl.reconcile()
    assert server.count("POST", "/pods") == creates
    assert sorted(p["metadata"]["name"] for p in server.objects("pods", NS)) == before


def test_the_watch_relists_after_410_and_wakes_rounds(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, jobs=0)
    ctl = controller(api_client, "fifo", interval_s=60.0)
    stop = threading.Event()
    thread = threading.Thread(target=ctl.run, args=(stop,))
    thread.start()
    try:
        _wait(lambda: server.count("WATCH", "/dljobs") >= 1)
        server.expire_watches()
        _wait(lambda: server.count("WATCH", "/dljobs") >= 2)
        server.put("dljobs", NS, dljob("late", workers=2))
        _wait(lambda: grants(server).get("late") == (2, 1))  # long before the 60 s interval
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert ctl.metrics.errors.labels("watch_expired")._value.get() >= 1


def test_only_the_lease_holder_acts(server: FakeApiServer, api_client: client.ApiClient) -> None:
    now = [1_000.0]
    first = controller(api_client, "fifo", identity="a", clock=lambda: now[0])
    second = controller(api_client, "fifo", identity="b", clock=lambda: now[0])
    assert first.lease.acquire() and not second.lease.acquire()
    now[0] += 5
    assert first.lease.acquire() and not second.lease.acquire()
    now[0] += 60  # a stops renewing
    assert second.lease.acquire() and not first.lease.acquire()
    lease = server.get("leases", NS, "dlsched-controller")
    assert lease["spec"]["holderIdentity"] == "b" and lease["spec"]["leaseTransitions"] == 1


def test_a_malformed_job_is_skipped_and_the_rest_scheduled(
    server: FakeApiServer, api_client: client.ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    _cluster(server, jobs=1, workers=2)
    bad = dljob("bad", workers=2)
    bad["spec"]["worker"]["memory"] = "lots"
    server.put("dljobs", NS, bad)
    controller(api_client, "fifo").reconcile()
    assert grants(server)["j0"] == (2, 1)
    assert "DLJob default/bad: spec.worker.memory: not a quantity: 'lots'" in caplog.text


def _wait(condition: object, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_metrics_are_served_for_prometheus(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, jobs=3, workers=3)  # two start, one waits
    ctl = controller(api_client, "fifo")
    ctl.reconcile()
    http = serve(ctl.metrics, 0, "127.0.0.1")
    try:
        host, port = http.server_address[:2]
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as answer:
            text = answer.read().decode()
    finally:
        http.shutdown()
        http.server_close()
    samples = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    assert samples["dlsched_decisions_total"] == 1
    assert samples['dlsched_scale_actions_total{action="start",dry_run="false"}'] == 2
    assert samples["dlsched_decision_seconds_count"] == 1
    assert samples["dlsched_enactment_seconds_count"] == 1
    assert samples["dlsched_running_jobs"] == 2 and samples["dlsched_pending_jobs"] == 1


def test_a_lost_node_wakes_a_round_and_a_heartbeat_does_not(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _cluster(server, nodes=2, jobs=1, workers=4)  # one job fills one node
    ctl = controller(api_client, "fifo", interval_s=60.0, placement="pack")
    stop = threading.Event()
    thread = threading.Thread(target=ctl.run, args=(stop,))
    thread.start()
    try:
        _wait(lambda: grants(server) == {"j0": (4, 1)} and server.count("WATCH", "") >= 3)
        time.sleep(1.0)  # the rounds woken by the watches' first lists and our own writes
        rounds = ctl.metrics.registry.get_sample_value("dlsched_decisions_total")
        (held,) = node_usage(server)
        beat = server.get("nodes", "", held)
        beat["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-01-01T00:00:00Z"
        beat["metadata"]["labels"] = {"touched": "yes"}
        server.put("nodes", "", beat)
        time.sleep(1.0)  # a round would run within 0.2 s of a wake
        assert ctl.metrics.registry.get_sample_value("dlsched_decisions_total") == rounds
        server.delete("nodes", "", held)
        _wait(lambda: held not in node_usage(server) and grants(server) == {"j0": (4, 1)})
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
