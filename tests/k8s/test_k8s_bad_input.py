"""Issue 35: no object and no reply stops the controller, and ``k8s run``'s own failures are
one line and exit 2. Each invalid object is skipped with an Event and a metric while the valid
jobs are scheduled; each off-spec reply fails one round, which is retried."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.k8s.objects import PLACEMENT_ANNOTATION, parse_node
from dlsched.k8s.rest import BadReply
from tests.k8s.apiserver import FakeApiServer, RawReply
from tests.k8s.chaos_server import BAD_REPLIES
from tests.k8s.k8s_helpers import NS, controller, dljob, grants, jobs, node, node_usage

ROOT = Path(__file__).resolve().parents[2]


def _bad_job(case: str) -> dict[str, Any]:
    job = dljob("bad", workers=1, created="2026-01-01T00:00:00Z")
    meta, spec = job["metadata"], job["spec"]
    if case == "placement-1e999":
        spec["workers"] = 1
        meta["annotations"] = {PLACEMENT_ANNOTATION: '{"workers": {"n0": 1e999}}'}
    elif case == "zero-demand-huge-max":
        spec["worker"] = {"gpu": 0, "cpu": 0, "memory": 0}
        spec["maxWorkers"] = 4611686018427387904
    elif case == "annotations-list":
        meta["annotations"] = ["a", "b"]
    elif case == "status-string":
        job["status"] = "Running"
    elif case == "spec-worker-string":
        spec["worker"] = "4 GPUs"
    elif case == "total-work-inf":
        spec["totalWork"] = math.inf
    elif case == "placement-list":
        spec["workers"] = 1
        meta["annotations"] = {PLACEMENT_ANNOTATION: '[["n0", 1]]'}
    elif case == "max-workers-over-limit":
        spec["maxWorkers"] = 5000
    return job


JOB_CASES = (
    "placement-1e999",
    "zero-demand-huge-max",
    "annotations-list",
    "status-string",
    "spec-worker-string",
    "total-work-inf",
    "placement-list",
    "max-workers-over-limit",
)


def _reconcile_in_time(ctl: Any, timeout_s: float = 20.0) -> None:
    """``ctl.reconcile()`` in a thread (an endless loop fails the test instead of hanging it)."""
    failure: list[BaseException] = []

    def work() -> None:
        try:
            ctl.reconcile()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert not thread.is_alive(), "the round did not end"
    assert not failure, repr(failure[0])


@pytest.mark.parametrize("case", JOB_CASES)
def test_an_invalid_dljob_is_skipped_with_an_event_and_a_metric(
    server: FakeApiServer, api_client: client.ApiClient, case: str
) -> None:
    server.put("nodes", "", node("n0"))
    server.put("dljobs", NS, _bad_job(case))
    server.put("dljobs", NS, dljob("good", workers=2, created="2026-01-01T00:00:01Z"))
    ctl = controller(api_client, "drf")
    _reconcile_in_time(ctl)
    assert grants(server)["good"] == (2, 1)
    assert server.get("dljobs", NS, "bad")["spec"].get("workers", 0) in (0, 1)  # untouched
    events = [e for e in server.objects("events", NS) if e["involvedObject"]["name"] == "bad"]
    assert [e["reason"] for e in events] == ["Invalid"] and events[0]["type"] == "Warning"
    errors = ctl.metrics.registry.get_sample_value(
        "dlsched_errors_total", {"kind": "invalid_object"}
    )
    assert errors == 1


@pytest.mark.parametrize("case", ["conditions-strings", "status-string", "allocatable-list"])
def test_an_invalid_node_is_skipped(
    server: FakeApiServer, api_client: client.ApiClient, case: str
) -> None:
    server.put("nodes", "", node("n0"))
    bad = node("n1")
    if case == "conditions-strings":
        bad["status"]["conditions"] = ["Ready", "True"]
    elif case == "status-string":
        bad["status"] = "Ready"
    else:
        bad["status"]["allocatable"] = [4, 16]
    server.put("nodes", "", bad)
    server.put("dljobs", NS, dljob("good", workers=2))
    ctl = controller(api_client, "drf")
    _reconcile_in_time(ctl)
    assert grants(server)["good"] == (2, 1)
    assert node_usage(server).keys() == {"n0"}
    errors = ctl.metrics.registry.get_sample_value(
        "dlsched_errors_total", {"kind": "invalid_object"}
    )
    assert errors == 1


class Replies(FakeApiServer):
    """Answers the next GETs whose path ends with ``target`` with ``reply``."""

    def __init__(self) -> None:
        super().__init__()
        self.left = 0
        self.target = ""
        self.reply: RawReply | None = None

    def before(self, method: str, path: str, agent: str) -> None:
        if method == "GET" and path.endswith(self.target) and self.left > 0 and self.reply:
            self.left -= 1
            raise self.reply


@pytest.mark.parametrize(
    ("target", "reply"),
    [(("/nodes", "/dljobs", "/pods")[i % 3], i) for i in range(len(BAD_REPLIES))],
)
def test_an_off_spec_reply_fails_the_round_which_is_retried(target: str, reply: int) -> None:
    with Replies() as server, client.ApiClient(client.Configuration(host=server.url)) as api:
        server.put("nodes", "", node("n0"))
        server.put("dljobs", NS, dljob("good", workers=2))
        server.target, server.reply, server.left = target, BAD_REPLIES[reply], 6
        ctl = controller(api, "drf")
        with pytest.raises(BadReply):
            ctl.reconcile()
        server.left = 1
        ctl = controller(api, "drf", interval_s=0.2)
        stop = threading.Event()
        loop = threading.Thread(target=ctl.run, args=(stop,))
        loop.start()
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and grants(server)["good"] != (2, 1):
                assert loop.is_alive()
                time.sleep(0.05)
        finally:
            stop.set()
            loop.join(timeout=10)
        assert grants(server)["good"] == (2, 1)
        failed = [  # the round or the node watch's list met it
            ctl.metrics.registry.get_sample_value("dlsched_errors_total", {"kind": kind}) or 0
            for kind in ("round", "watch")
        ]
        assert sum(failed) >= 1


# ---------------------------------------------------------------------- the command


def _run(args: list[str], prelude: str = "", timeout_s: float = 60) -> subprocess.CompletedProcess:
    argv = ["dlsched", *args]
    code = f"{prelude}\nimport sys\nfrom dlsched.cli import main\nsys.argv = {argv!r}\nmain()"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HOME": "/nonexistent"}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s, env=env
    )


def _one_line(done: subprocess.CompletedProcess, fragment: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def _kubeconfig(tmp_path: Path, text: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    return str(path)


def _config_for(url: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": url}}],
            "users": [{"name": "u", "user": {}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
        }
    )


def test_without_the_kubernetes_package_one_line_exit_2() -> None:
    args = ["--bind", "--dry-run", "--metrics-port", "9", "--once"]
    done = _run(["k8s", "run", *args], prelude="import sys; sys.modules['kubernetes'] = None")
    _one_line(done, "needs the k8s extra")


@pytest.mark.parametrize("text", ["\x00\x01 not yaml: [", "- a\n- list\n"], ids=str)
def test_a_kubeconfig_that_is_not_one_is_one_line_exit_2(tmp_path: Path, text: str) -> None:
    done = _run(["k8s", "run", "--once", "--kubeconfig", _kubeconfig(tmp_path, text)])
    _one_line(done, "--kubeconfig")


def test_an_unreachable_server_is_one_line_exit_2(tmp_path: Path) -> None:
    config = _kubeconfig(tmp_path, _config_for("http://127.0.0.1:1"))
    t0 = time.monotonic()
    done = _run(["k8s", "run", "--kubeconfig", config])
    _one_line(done, "cannot reach the Kubernetes API at http://127.0.0.1:1")
    assert time.monotonic() - t0 < 30


def test_a_server_that_is_not_kubernetes_is_one_line_exit_2(tmp_path: Path) -> None:
    class Html(FakeApiServer):
        def before(self, method: str, path: str, agent: str) -> None:
            raise RawReply(200, "text/html", b"<html>login</html>")

    with Html() as server:
        done = _run(["k8s", "run", "--kubeconfig", _kubeconfig(tmp_path, _config_for(server.url))])
    _one_line(done, "is not a Kubernetes API server")


@pytest.mark.parametrize("namespace", ["Bad_NS", "-x", "a" * 64, "a/b"])
def test_an_invalid_namespace_is_one_line_exit_2(namespace: str) -> None:
    result = CliRunner().invoke(app, ["k8s", "run", "--once", "--namespace", namespace])
    assert result.exit_code == 2 and "--namespace" in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


# ---------------------------------------------------------------------- random objects


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
PATHS = (
    ("metadata",),
    ("metadata", "annotations"),
    ("metadata", "annotations", PLACEMENT_ANNOTATION),
    ("metadata", "name"),
    ("spec",),
    ("spec", "worker"),
    ("spec", "worker", "gpu"),
    ("spec", "worker", "cpu"),
    ("spec", "request"),
    ("spec", "request", "workers"),
    ("spec", "maxWorkers"),
    ("spec", "minWorkers"),
    ("spec", "workers"),
    ("spec", "ps"),
    ("spec", "totalWork"),
    ("spec", "arch"),
    ("status",),
    ("status", "phase"),
    ("status", "progress"),
)
NODE_PATHS = (("status",), ("status", "conditions"), ("status", "allocatable"), ("spec",))


def _set(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        if not isinstance(obj.get(key), dict):
            obj[key] = {}
        obj = obj[key]
    obj[path[-1]] = value


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    edits=st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from(PATHS), JSON), min_size=1, max_size=6
    ),
    node_edit=st.none() | st.tuples(st.sampled_from(NODE_PATHS), JSON),
    reply=st.none() | st.sampled_from(range(len(BAD_REPLIES))),
    target=st.sampled_from(["/nodes", "/dljobs", "/pods"]),
)
def test_random_objects_and_replies_never_stop_the_controller_nor_over_commit(
    edits: list, node_edit: Any, reply: int | None, target: str
) -> None:
    with Replies() as server, client.ApiClient(client.Configuration(host=server.url)) as api:
        server.put("nodes", "", node("n0", gpu=4, cpu=8, mem_gi=32))
        n1 = node("n1", gpu=4, cpu=8, mem_gi=32)
        if node_edit is not None:
            _set(n1, *node_edit)
        server.put("nodes", "", n1)
        objs = [dljob(f"j{i}", workers=2, max_workers=4) for i in range(4)]
        for i, path, value in edits:
            _set(objs[i], path, value)
        for i, obj in enumerate(objs):
            obj["metadata"] = {
                "name": f"j{i}",
                **(obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}),
            }
            if not isinstance(obj["metadata"]["name"], str) or not obj["metadata"]["name"]:
                obj["metadata"]["name"] = f"j{i}"
            try:
                server.put("dljobs", NS, json.loads(json.dumps(obj)))
            except (TypeError, ValueError):
                continue  # the server would refuse it too
        if reply is not None:
            server.target, server.reply, server.left = target, BAD_REPLIES[reply], 1
        ctl = controller(api, "drf")
        for _ in range(2):
            try:
                _reconcile_in_time(ctl)
            except AssertionError as exc:
                assert reply is not None and "BadReply" in str(exc), exc
        capacity = {}
        for obj in server.objects("nodes"):
            try:
                info = parse_node(obj)
            except Exception:
                continue
            capacity[info.name] = info.capacity.as_tuple()
        for name, used in node_usage(server).items():
            if name in capacity:
                assert all(u <= c + 1e-9 for u, c in zip(used, capacity[name], strict=True))
        for job in jobs(server):
            assert job.workers <= 4
