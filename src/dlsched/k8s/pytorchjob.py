"""Kubeflow ``PyTorchJob`` (``kubeflow.org/v1``) with an elastic policy, read as a `TrainingJob`.

dlsched sizes only the PyTorchJobs that opt in with the label ``dlsched.io/managed: "true"``
(the controller lists with that selector) and that are elastic (``spec.elasticPolicy``, Worker
replicas only: a ``Master`` replica would hold resources dlsched does not grant). The grant is
``spec.pytorchReplicaSpecs.Worker.replicas`` (written through the CRD's ``/scale``
subresource, whose ``specReplicasPath`` is that field) plus the ``dlsched.io/placement``
annotation; create the job with ``replicas: 0`` so that it waits for its grant. A PyTorchJob's
spec and status belong to the training operator, so what dlsched needs besides them is read
from annotations:

- ``dlsched.io/total-work`` (required, > 0): work to finish, in the unit the job reports;
- ``dlsched.io/request-workers``: the size asked for (default ``elasticPolicy.minReplicas``);
- ``dlsched.io/priority``, ``dlsched.io/model``: as a DLJob's ``spec.priority``/``spec.model``;
- ``dlsched.io/progress``, ``dlsched.io/speed``, ``dlsched.io/progress-time``: what the job
  reports (work done, work per second, RFC 3339 time), written by the training script.

Each worker's demand is the sum of its containers' requests (limits where a request is absent)
of ``nvidia.com/gpu``, ``cpu`` and ``memory``. The phase comes from ``status.conditions``
(``Succeeded``/``Failed`` end the job), the start from ``status.startTime``.
"""

from __future__ import annotations

from typing import Any

from dlsched.core import Arch, JobSpec, Resources
from dlsched.k8s.objects import (
    GIB,
    GPU_RESOURCE,
    Obj,
    ObjectError,
    TrainingJob,
    count_field,
    job_id_of,
    mapping,
    parse_quantity,
    parse_time,
    read_placement,
)

PT_GROUP = "kubeflow.org"
PT_VERSION = "v1"
PT_PLURAL = "pytorchjobs"
PT_KIND = "PyTorchJob"
MANAGED_LABEL = "dlsched.io/managed"
"""Label that puts a PyTorchJob under dlsched (value ``"true"``)."""
WORKERS_PATH = ("spec", "pytorchReplicaSpecs", "Worker", "replicas")
_ANNOTATION = "dlsched.io/"


def _annotation_number(notes: dict[str, Any], key: str, default: float | None, where: str) -> float:
    text = notes.get(_ANNOTATION + key)
    if text is None:
        if default is None:
            raise ObjectError(f"{where}: annotation {_ANNOTATION}{key}: Required value")
        return default
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ObjectError(
            f"{where}: annotation {_ANNOTATION}{key}: not a number: {text!r}"
        ) from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ObjectError(f"{where}: annotation {_ANNOTATION}{key}: must be finite, got {text!r}")
    return value


def _worker_demand(worker: Obj, where: str) -> Resources:
    """Sum of the Worker template's containers' requests (limits where a request is absent)."""
    containers = ((worker.get("template") or {}).get("spec") or {}).get("containers")
    if not isinstance(containers, list) or not containers:
        raise ObjectError(f"{where}.template.spec.containers: Required value")
    total = [0.0, 0.0, 0.0]
    for i, container in enumerate(containers):
        res = (container or {}).get("resources") or {}
        requests, limits = res.get("requests") or {}, res.get("limits") or {}
        for k, name in enumerate((GPU_RESOURCE, "cpu", "memory")):
            value = requests.get(name, limits.get(name, 0))
            total[k] += parse_quantity(value, f"{where}.template.spec.containers[{i}]: {name}")
    return Resources(total[0], total[1], total[2] / GIB)


def _phase(status: Obj) -> str:
    """``Succeeded``/``Failed`` once a condition of that type is True, else the newest True one."""
    true = [c.get("type", "") for c in status.get("conditions") or [] if c.get("status") == "True"]
    for done in ("Succeeded", "Failed"):
        if done in true:
            return done
    return true[-1] if true else ""


def _status(obj: Obj, where: str) -> Obj:
    """The job's ``status``, its conditions checked to be a list of objects."""
    status = mapping(obj.get("status"), f"{where}: status")
    conditions = status.get("conditions") or []
    if not isinstance(conditions, list) or not all(isinstance(c, dict) for c in conditions):
        raise ObjectError(f"{where}: status.conditions: must be a list of objects")
    return status


def parse_pytorchjob(obj: Obj) -> TrainingJob:
    """An elastic PyTorchJob read into a `TrainingJob`; `ObjectError` naming the field if not."""
    if not isinstance(obj, dict):
        raise ObjectError(f"PyTorchJob: not an object: {type(obj).__name__}")
    meta = mapping(obj.get("metadata"), "PyTorchJob: metadata")
    where = f"PyTorchJob {meta.get('namespace', '')}/{meta.get('name', '?')}"
    if not isinstance(meta.get("name"), str) or not meta["name"]:
        raise ObjectError(f"{where}: metadata.name: Required value")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise ObjectError(f"{where}: spec: Required value")
    elastic = spec.get("elasticPolicy")
    if not isinstance(elastic, dict):
        raise ObjectError(f"{where}: spec.elasticPolicy: Required value (dlsched resizes it)")
    replicas = mapping(spec.get("pytorchReplicaSpecs"), f"{where}: spec.pytorchReplicaSpecs")
    master = replicas.get("Master")
    if isinstance(master, dict) and master.get("replicas", 1):
        raise ObjectError(
            f"{where}: spec.pytorchReplicaSpecs.Master: not supported (elastic jobs managed "
            "by dlsched use Worker replicas only)"
        )
    worker = replicas.get("Worker")
    w = f"{where}: spec.pytorchReplicaSpecs.Worker"
    if not isinstance(worker, dict):
        raise ObjectError(f"{w}: Required value")
    e = f"{where}: spec.elasticPolicy"
    min_workers = count_field(elastic, "minReplicas", 1, e)
    notes = mapping(meta.get("annotations"), f"{where}: metadata.annotations")
    request = round(_annotation_number(notes, "request-workers", min_workers, where))
    max_workers = count_field(elastic, "maxReplicas", max(request, min_workers), e)
    if not 1 <= min_workers <= request <= max_workers:
        raise ObjectError(
            f"{where}: need 1 <= elasticPolicy.minReplicas ({min_workers}) <= annotation "
            f"dlsched.io/request-workers ({request}) <= elasticPolicy.maxReplicas ({max_workers})"
        )
    total_work = _annotation_number(notes, "total-work", None, where)
    if not total_work > 0:
        raise ObjectError(f"{where}: annotation dlsched.io/total-work: must be > 0")
    demand = _worker_demand(worker, w)
    if not (demand.gpu >= 1 or demand.cpu >= 1):
        raise ObjectError(f"{w}: a worker needs nvidia.com/gpu >= 1 or cpu >= 1")
    created = parse_time(meta.get("creationTimestamp"), f"{where}: metadata.creationTimestamp")
    uid = str(meta.get("uid") or "")
    job_spec = JobSpec(
        job_id=job_id_of(uid),
        submit_time_s=created or 0.0,
        model=str(notes.get("dlsched.io/model", "unknown")),
        arch=Arch.ALLREDUCE,
        total_work=total_work,
        worker_demand=demand,
        ps_demand=Resources(),
        num_workers=request,
        num_ps=0,
        min_workers=min_workers,
        max_workers=max_workers,
        max_ps=0,
        priority=_annotation_number(notes, "priority", 0.0, where),
    )
    status = _status(obj, where)
    return TrainingJob(
        name=str(meta.get("name")),
        namespace=str(meta.get("namespace", "")),
        uid=uid,
        resource_version=str(meta.get("resourceVersion", "")),
        spec=job_spec,
        workers=count_field(worker, "replicas", 0, w),
        ps=0,
        placement=read_placement(meta, where),
        phase=_phase(status),
        progress=max(0.0, _annotation_number(notes, "progress", 0.0, where)),
        speed=max(0.0, _annotation_number(notes, "speed", 0.0, where)),
        progress_time_s=parse_time(
            notes.get("dlsched.io/progress-time"), f"{where}: annotation dlsched.io/progress-time"
        ),
        start_time_s=parse_time(status.get("startTime"), f"{where}: status.startTime"),
        raw=obj,
        kind=PT_KIND,
    )
