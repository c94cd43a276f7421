"""Nodes, DLJobs and controllers for the Kubernetes tests."""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client

from dlsched.k8s.controller import Controller
from dlsched.k8s.objects import PLACEMENT_ANNOTATION, ObjectError, TrainingJob, parse_dljob
from dlsched.k8s.pytorchjob import parse_pytorchjob
from dlsched.schedulers.registry import make_scheduler
from tests.k8s.apiserver import FakeApiServer

NS = "default"


def node(
    name: str, gpu: int = 4, cpu: int = 16, mem_gi: int = 64, ready: bool = True
) -> dict[str, Any]:
    """A Node with allocatable GPUs, cores and GiB, Ready or not."""
    return {
        "metadata": {"name": name},
        "spec": {},
        "status": {
            "allocatable": {"nvidia.com/gpu": str(gpu), "cpu": str(cpu), "memory": f"{mem_gi}Gi"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def dljob(
    name: str,
    *,
    workers: int = 2,
    ps: int = 1,
    arch: str = "ps",
    gpu: int = 1,
    cpu: str = "2",
    memory: str = "4Gi",
    max_workers: int | None = None,
    created: str | None = None,
    total_work: float = 100.0,
) -> dict[str, Any]:
    """A DLJob asking for ``workers`` workers (and ``ps`` PS for a PS job)."""
    spec: dict[str, Any] = {
        "model": "resnet-50",
        "arch": arch,
        "totalWork": total_work,
        "request": {"workers": workers, "ps": ps if arch == "ps" else 0},
        "maxWorkers": max_workers or workers,
        "worker": {"gpu": gpu, "cpu": cpu, "memory": memory},
        "template": {"spec": {"containers": [{"name": "train", "image": "example/train:1"}]}},
    }
    if arch == "ps":
        spec["parameterServer"] = {"cpu": "1", "memory": "2Gi"}
        spec["maxPS"] = ps
    meta: dict[str, Any] = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    return {"apiVersion": "dlsched.io/v1alpha1", "kind": "DLJob", "metadata": meta, "spec": spec}


def pytorchjob(
    name: str,
    *,
    request: int = 2,
    min_workers: int = 1,
    max_workers: int = 4,
    gpu: int = 1,
    managed: bool = True,
    total_work: float = 100.0,
    created: str | None = None,
) -> dict[str, Any]:
    """An elastic Kubeflow PyTorchJob (Worker replicas only, created at 0 replicas)."""
    meta: dict[str, Any] = {
        "name": name,
        "annotations": {
            "dlsched.io/total-work": str(total_work),
            "dlsched.io/request-workers": str(request),
        },
    }
    if managed:
        meta["labels"] = {"dlsched.io/managed": "true"}
    if created:
        meta["creationTimestamp"] = created
    container = {
        "name": "pytorch",
        "image": "example/train:1",
        "resources": {"limits": {"nvidia.com/gpu": gpu, "cpu": "2", "memory": "4Gi"}},
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": meta,
        "spec": {
            "elasticPolicy": {
                "rdzvBackend": "c10d",
                "minReplicas": min_workers,
                "maxReplicas": max_workers,
            },
            "pytorchReplicaSpecs": {
                "Worker": {
                    "replicas": 0,
                    "restartPolicy": "OnFailure",
                    "template": {"spec": {"containers": [container]}},
                }
            },
        },
    }


def running(job: dict[str, Any], node_name: str, workers: int) -> dict[str, Any]:
    """``job`` (a DLJob) holding ``workers`` workers and its PS on one node, as if granted."""
    ps = job["spec"]["request"]["ps"]
    job["spec"]["workers"], job["spec"]["ps"] = workers, ps
    placement = {"workers": {node_name: workers}, "ps": {node_name: ps} if ps else {}}
    job["metadata"].setdefault("annotations", {})[PLACEMENT_ANNOTATION] = json.dumps(placement)
    return job


def controller(api: client.ApiClient, scheduler: str = "fifo", **kwargs: Any) -> Controller:
    kwargs.setdefault("watch_timeout_s", 1)
    return Controller(api, make_scheduler(scheduler), namespace=NS, **kwargs)


def jobs(server: FakeApiServer) -> list[TrainingJob]:
    """The well-formed DLJobs and managed PyTorchJobs in the server."""
    found = []
    for plural, parse in (("dljobs", parse_dljob), ("pytorchjobs", parse_pytorchjob)):
        for obj in server.objects(plural, NS):
            if plural == "pytorchjobs" and "dlsched.io/managed" not in (
                obj["metadata"].get("labels") or {}
            ):
                continue
            try:
                found.append(parse(obj))
            except ObjectError:
                continue
    return found


def grants(server: FakeApiServer) -> dict[str, tuple[int, int]]:
    """Job name → (workers, ps) granted in the cluster."""
    return {job.name: (job.workers, job.ps) for job in jobs(server)}


def node_usage(server: FakeApiServer) -> dict[str, list[float]]:
    """Node name → [gpu, cpu, GiB] the placement annotations of unfinished jobs take on it."""
    used: dict[str, list[float]] = {}
    for job in jobs(server):
        if job.done or job.placement is None:
            continue
        for role, counts in job.placement.items():
            demand = job.spec.worker_demand if role == "workers" else job.spec.ps_demand
            for name, n in counts.items():
                row = used.setdefault(name, [0.0, 0.0, 0.0])
                for i, x in enumerate(demand.as_tuple()):
                    row[i] += x * n
    return used


def finish(server: FakeApiServer, name: str, plural: str = "dljobs") -> None:
    """The job reports it is done (a PyTorchJob: its training operator's Succeeded condition)."""
    obj = server.get(plural, NS, name)
    if plural == "pytorchjobs":
        done = {"type": "Succeeded", "status": "True"}
        obj["status"] = {**(obj.get("status") or {}), "conditions": [done]}
    else:
        obj["status"] = {
            **(obj.get("status") or {}),
            "phase": "Succeeded",
            "progress": obj["spec"]["totalWork"],
        }
    server.put(plural, NS, obj)


__all__ = [
    "NS",
    "PLACEMENT_ANNOTATION",
    "controller",
    "dljob",
    "finish",
    "grants",
    "node",
    "node_usage",
    "pytorchjob",
    "running",
]
