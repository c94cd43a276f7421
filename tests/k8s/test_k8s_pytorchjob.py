"""Elastic Kubeflow PyTorchJobs: read as training jobs, sized beside DLJobs, resized by /scale."""

from __future__ import annotations

import copy
import json

import pytest
from kubernetes import client

from dlsched.core import Arch
from dlsched.k8s.objects import PLACEMENT_ANNOTATION, ObjectError
from dlsched.k8s.pytorchjob import parse_pytorchjob
from tests.k8s.apiserver import DEFAULT_CRDS, FakeApiServer
from tests.k8s.k8s_helpers import (
    NS,
    controller,
    dljob,
    finish,
    grants,
    node,
    node_usage,
    pytorchjob,
)

UID = {"uid": "0123456789abcdef0123456789abcdef"}


def _obj(**kw: object) -> dict:
    obj = pytorchjob("p", **kw)  # type: ignore[arg-type]
    obj["metadata"].update(UID, namespace=NS)
    return obj


def test_an_elastic_pytorchjob_reads_as_an_allreduce_job() -> None:
    job = parse_pytorchjob(_obj(request=2, min_workers=1, max_workers=4, gpu=2))
    assert job.kind == "PyTorchJob" and job.spec.arch is Arch.ALLREDUCE
    assert (job.spec.num_workers, job.spec.min_workers, job.spec.max_workers) == (2, 1, 4)
    assert job.spec.worker_demand.as_tuple() == (2.0, 2.0, 4.0)
    assert job.workers == 0 and job.ps == 0 and job.spec.total_work == 100.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda o: o["spec"].pop("elasticPolicy"), r"spec\.elasticPolicy: Required value"),
        (
            lambda o: o["spec"]["pytorchReplicaSpecs"].update(
                Master={**copy.deepcopy(o["spec"]["pytorchReplicaSpecs"]["Worker"]), "replicas": 1}
            ),
            r"pytorchReplicaSpecs\.Master: not supported",
        ),
        (
            lambda o: o["metadata"]["annotations"].pop("dlsched.io/total-work"),
            r"annotation dlsched\.io/total-work: Required value",
        ),
        (
            lambda o: o["metadata"]["annotations"].update({"dlsched.io/progress": "lots"}),
            r"annotation dlsched\.io/progress: not a number: 'lots'",
        ),
        (
            lambda o: o["metadata"]["annotations"].update({"dlsched.io/request-workers": "9"}),
            r"request-workers \(9\) <= elasticPolicy\.maxReplicas \(4\)",
        ),
    ],
)
def test_a_pytorchjob_dlsched_cannot_size_is_named_with_its_field(
    change: object, message: str
) -> None:
    obj = _obj()
    change(obj)  # type: ignore[operator]
    with pytest.raises(ObjectError, match=message):
        parse_pytorchjob(obj)


def test_pytorchjobs_are_scheduled_beside_dljobs_and_resized_through_scale(
    server: FakeApiServer, api_client: client.ApiClient
) -> None:
    server.put("nodes", "", node("n0"))
    server.put("nodes", "", node("n1"))
    server.put("pytorchjobs", NS, pytorchjob("p", request=2, created="2026-01-01T00:00:00Z"))
    server.put("pytorchjobs", NS, pytorchjob("other", request=2, managed=False))
    server.put(
        "dljobs", NS, dljob("d", workers=4, arch="allreduce", created="2026-01-01T00:00:01Z")
    )
    server.put(
        "dljobs", NS, dljob("late", workers=4, arch="allreduce", created="2026-01-01T00:00:02Z")
    )
    controller(api_client, "fifo").reconcile()
    assert grants(server) == {"p": (2, 0), "d": (4, 0), "late": (0, 0)}  # 8 GPUs: late waits
    p = server.get("pytorchjobs", NS, "p")
    assert p["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 2
    assert (
        sum(json.loads(p["metadata"]["annotations"][PLACEMENT_ANNOTATION])["workers"].values()) == 2
    )
    other = server.get("pytorchjobs", NS, "other")
    assert other["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 0  # not opted in
    assert PLACEMENT_ANNOTATION not in other["metadata"]["annotations"]
    assert server.count("PATCH", "/pytorchjobs/other") == 0

    finish(server, "d")  # 4 GPUs free: drf starts late and grows p to its maximum (4 + 4)
    controller(api_client, "drf").reconcile()
    assert grants(server) == {"d": (4, 0), "p": (4, 0), "late": (4, 0)}  # d is done
    assert server.count("PUT", "/pytorchjobs/p/scale") == 1
    assert all(u[0] <= 4 for u in node_usage(server).values())
    finish(server, "p", "pytorchjobs")  # its training operator reports Succeeded
    server.put("dljobs", NS, dljob("next", workers=4, arch="allreduce"))
    controller(api_client, "fifo").reconcile()
    assert grants(server)["next"] == (4, 0)  # in the GPUs p held


def test_without_the_pytorchjob_crd_only_dljobs_are_scheduled() -> None:
    with (
        FakeApiServer(DEFAULT_CRDS[:1]) as server,
        client.ApiClient(client.Configuration(host=server.url)) as api,
    ):
        server.put("nodes", "", node("n0"))
        server.put("dljobs", NS, dljob("d", workers=2))
        ctl = controller(api, "fifo")
        report = ctl.reconcile()
        assert report.refused == {} and grants(server) == {"d": (2, 1)}
        assert set(ctl.kinds) == {"DLJob"}
        assert server.count("GET", f"/namespaces/{NS}/pytorchjobs") == 0
