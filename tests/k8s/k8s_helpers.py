"""Nodes, DLJobs and controllers for the Kubernetes tests."""

from __future__ import annotations

from typing import Any

from apiserver import FakeApiServer
from kubernetes import client

from dlsched.k8s.controller import Controller
from dlsched.k8s.objects import PLACEMENT_ANNOTATION, ObjectError, TrainingJob, parse_dljob
from dlsched.schedulers.registry import make_scheduler

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


def controller(api: client.ApiClient, scheduler: str = "fifo", **kwargs: Any) -> Controller:
    kwargs.setdefault("watch_timeout_s", 1)
    return Controller(api, make_scheduler(scheduler), namespace=NS, **kwargs)


def jobs(server: FakeApiServer) -> list[TrainingJob]:
    """The well-formed DLJobs in the server."""
    found = []
    for obj in server.objects("dljobs", NS):
        try:
            found.append(parse_dljob(obj))
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


def finish(server: FakeApiServer, name: str) -> None:
    """The job reports it is done."""
    obj = server.get("dljobs", NS, name)
    obj["status"] = {
        **(obj.get("status") or {}),
        "phase": "Succeeded",
        "progress": obj["spec"]["totalWork"],
    }
    server.put("dljobs", NS, obj)


__all__ = [
    "NS",
    "PLACEMENT_ANNOTATION",
    "controller",
    "dljob",
    "finish",
    "grants",
    "node",
    "node_usage",
]
