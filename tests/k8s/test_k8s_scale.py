"""Replica counts through the ``/scale`` subresource: the controller's use of it, and the fake
API server's implementation (CRD-declared paths, resourceVersion conflicts)."""

from __future__ import annotations

import json

import pytest
import yaml
from kubernetes import client

from dlsched.k8s.objects import PLACEMENT_ANNOTATION
from tests.k8s.apiserver import DEFAULT_CRDS, FakeApiServer
from tests.k8s.k8s_helpers import (
    NS,
    controller,
    dljob,
    grants,
    node,
    node_usage,
    pytorchjob,
    running,
)


def _dljob_crd(scale: bool = True) -> dict:
    crd = yaml.safe_load(DEFAULT_CRDS[0].read_text())
    if not scale:
        del crd["spec"]["versions"][0]["subresources"]["scale"]
    return crd


def _resizable(server: FakeApiServer) -> None:
    """Two 4-GPU nodes and one allreduce DLJob running 1 of its 2 requested (max 4) workers."""
    for i in range(2):
        server.put("nodes", "", node(f"n{i}"))
    job = dljob("a", workers=2, arch="allreduce", max_workers=4)
    server.put("dljobs", NS, running(job, "n0", 1))


def _placement(server: FakeApiServer, name: str) -> dict:
    notes = server.get("dljobs", NS, name)["metadata"].get("annotations") or {}
    return json.loads(notes[PLACEMENT_ANNOTATION]) if PLACEMENT_ANNOTATION in notes else {}


def test_a_start_is_one_patch_and_a_resize_goes_through_scale(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    for i in range(2):
        server.put("nodes", "", node(f"n{i}"))
    server.put("dljobs", NS, dljob("a", workers=2, arch="allreduce", max_workers=4))
    controller(api_client, "fifo").reconcile()  # fifo starts it at its request
    assert grants(server) == {"a": (2, 0)}
    assert server.count("PATCH", "/dljobs/a") == 1 and server.count("PUT", "/scale") == 0
    controller(api_client, "drf").reconcile()  # drf grows it to its maximum
    assert grants(server) == {"a": (4, 0)}
    assert server.count("PUT", "/dljobs/a/scale") == 1
    assert sum(_placement(server, "a")["workers"].values()) == 4


def test_without_a_scale_subresource_a_resize_is_one_patch() -> None:
    crds = (_dljob_crd(scale=False), DEFAULT_CRDS[1])
    with (
        FakeApiServer(crds) as server,
        client.ApiClient(client.Configuration(host=server.url)) as api,
    ):
        _resizable(server)
        controller(api, "drf").reconcile()
        assert grants(server) == {"a": (4, 0)}
        assert server.count("PUT", "/scale") == 0 and server.count("PATCH", "/dljobs/a") == 1


def test_a_409_on_scale_is_retried_while_the_count_is_unchanged(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _resizable(server)
    server.fail_next("PUT", r"/dljobs/a/scale$", 409)
    ctl = controller(api_client, "drf")
    report = ctl.reconcile()
    assert report.refused == {} and grants(server) == {"a": (4, 0)}
    assert server.count("PUT", "/dljobs/a/scale") == 2
    assert ctl.metrics.registry.get_sample_value("dlsched_errors_total", {"kind": "conflict"}) == 1


def test_a_scale_that_keeps_failing_is_refused_and_the_placement_put_back(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _resizable(server)
    before = _placement(server, "a")
    server.fail_next("PUT", r"/dljobs/a/scale$", 409, times=10)
    ctl = controller(api_client, "drf")
    report = ctl.reconcile()
    assert set(report.refused) == set(ctl.runs)
    assert grants(server) == {"a": (1, 0)} and _placement(server, "a") == before
    server._faults.clear()
    report = ctl.reconcile()
    assert report.refused == {} and report.reclaimed == 0 and grants(server) == {"a": (4, 0)}


def test_a_job_resized_by_someone_else_during_the_round_is_not_overwritten(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    _resizable(server)
    ctl = controller(api_client, "drf")
    decide = ctl.scheduler.decide

    def racing(view):  # type: ignore[no-untyped-def]
        obj = server.get("dljobs", NS, "a")  # kubectl scale, after the round read the job
        obj["spec"]["workers"] = 3
        server.put("dljobs", NS, obj)
        return decide(view)

    ctl.scheduler.decide = racing  # type: ignore[method-assign]
    report = ctl.reconcile()
    assert set(report.refused) == set(ctl.runs)
    assert grants(server) == {"a": (3, 0)}  # the other writer's count stands
    ctl.scheduler.decide = decide  # type: ignore[method-assign]
    report = ctl.reconcile()  # 3 workers, a 1-worker placement: stale, reclaimed, restarted
    assert report.reclaimed == 1
    assert grants(server)["a"][0] == sum(_placement(server, "a")["workers"].values())
    assert all(u[0] <= 4 for u in node_usage(server).values())


# ---------------------------------------------------------------------- the fake server


def test_the_fake_servers_scale_follows_the_crds_paths(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    custom = client.CustomObjectsApi(api_client)
    server.put("pytorchjobs", NS, pytorchjob("p"))
    scale = custom.get_namespaced_custom_object_scale("kubeflow.org", "v1", NS, "pytorchjobs", "p")
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 0
    scale["spec"]["replicas"] = 3
    custom.replace_namespaced_custom_object_scale(
        "kubeflow.org", "v1", NS, "pytorchjobs", "p", scale
    )
    obj = server.get("pytorchjobs", NS, "p")
    assert obj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3
    custom.patch_namespaced_custom_object_scale(
        "kubeflow.org", "v1", NS, "pytorchjobs", "p", {"spec": {"replicas": 1}}
    )
    assert server.get("pytorchjobs", NS, "p")["spec"]["pytorchReplicaSpecs"]["Worker"] == {
        **obj["spec"]["pytorchReplicaSpecs"]["Worker"],
        "replicas": 1,
    }


def test_the_fake_servers_scale_put_with_a_stale_version_is_a_409(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    custom = client.CustomObjectsApi(api_client)
    server.put("dljobs", NS, dljob("a"))
    stale = custom.get_namespaced_custom_object_scale("dlsched.io", "v1alpha1", NS, "dljobs", "a")
    server.put("dljobs", NS, {**server.get("dljobs", NS, "a"), "status": {"progress": 1.0}})
    stale["spec"]["replicas"] = 2
    with pytest.raises(client.ApiException) as err:
        custom.replace_namespaced_custom_object_scale(
            "dlsched.io", "v1alpha1", NS, "dljobs", "a", stale
        )
    assert err.value.status == 409
    assert server.get("dljobs", NS, "a")["spec"].get("workers", 0) == 0
    fresh = custom.get_namespaced_custom_object_scale("dlsched.io", "v1alpha1", NS, "dljobs", "a")
    fresh["spec"]["replicas"] = 2
    custom.replace_namespaced_custom_object_scale(
        "dlsched.io", "v1alpha1", NS, "dljobs", "a", fresh
    )
    assert server.get("dljobs", NS, "a")["spec"]["workers"] == 2


def test_the_fake_server_has_no_scale_where_the_crd_declares_none() -> None:
    with (
        FakeApiServer((_dljob_crd(scale=False),)) as server,
        client.ApiClient(client.Configuration(host=server.url)) as api,
    ):
        server.put("dljobs", NS, dljob("a"))
        custom = client.CustomObjectsApi(api)
        with pytest.raises(client.ApiException) as err:
            custom.get_namespaced_custom_object_scale("dlsched.io", "v1alpha1", NS, "dljobs", "a")
        assert err.value.status == 404
        with pytest.raises(client.ApiException) as err:  # no PyTorchJob CRD: no such resource
            custom.list_namespaced_custom_object("kubeflow.org", "v1", NS, "pytorchjobs")
        assert err.value.status == 404
