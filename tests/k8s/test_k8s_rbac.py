"""Least privilege: every request the controller makes is allowed by deploy/rbac.yaml, and
nothing is granted by wildcard."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import yaml
from kubernetes import client

from tests.k8s.apiserver import FakeApiServer
from tests.k8s.k8s_helpers import NS, controller, dljob, node, pytorchjob, running

RBAC = Path(__file__).resolve().parents[2] / "deploy" / "rbac.yaml"
VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "WATCH": "watch"}
_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/[^/]+)?/(?P<plural>[^/]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>scale|status|binding))?$"
)


def _granted() -> set[tuple[str, str, str, str]]:
    """(scope, group, resource, verb) the manifests grant (scope: cluster or namespace)."""
    grants = set()
    for doc in yaml.safe_load_all(RBAC.read_text()):
        if doc["kind"] not in ("Role", "ClusterRole"):
            continue
        scope = "cluster" if doc["kind"] == "ClusterRole" else "namespace"
        for rule in doc["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        grants.add((scope, group, resource, verb))
    return grants


def _used(server: FakeApiServer) -> set[tuple[str, str, str, str]]:
    used = set()
    for method, path in server.requests:
        match = _PATH.match(path)
        assert match is not None, path
        verb = VERBS.get(method) or ("get" if match["name"] else "list")
        resource = match["plural"] + (f"/{match['sub']}" if match["sub"] else "")
        scope = "namespace" if "/namespaces/" in path else "cluster"
        used.add((scope, match["group"] or "", resource, verb))
    return used


def test_every_request_the_controller_makes_is_granted() -> None:
    with FakeApiServer() as server, client.ApiClient(client.Configuration(host=server.url)) as api:
        for i in range(2):
            server.put("nodes", "", node(f"n{i}"))
        server.put(
            "dljobs", NS, running(dljob("a", workers=2, arch="allreduce", max_workers=4), "n0", 1)
        )
        server.put("dljobs", NS, dljob("b", workers=1))
        server.put("pytorchjobs", NS, pytorchjob("p", request=1, max_workers=2))
        server.fail_next("PUT", r"/scale$", 409)  # the conflict path reads the Scale
        server.fail_next("PATCH", r"/dljobs/b$", 409)  # ... and the job
        ctl = controller(api, "drf", bind=True, interval_s=0.2)
        stop = threading.Event()
        thread = threading.Thread(target=ctl.run, args=(stop,))
        thread.start()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and server.count("WATCH", "/pytorchjobs") < 1:
            time.sleep(0.05)
        stop.set()
        thread.join(timeout=10)
        used = _used(server)
    granted = _granted()
    assert used - granted == set()
    assert ("namespace", "dlsched.io", "dljobs/scale", "update") in used
    assert ("namespace", "kubeflow.org", "pytorchjobs", "watch") in used
    assert ("namespace", "", "pods/binding", "create") in used
    assert ("cluster", "apiextensions.k8s.io", "customresourcedefinitions", "get") in used
    assert not any("*" in part for grant in granted for part in grant)
