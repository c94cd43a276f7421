"""Kubernetes objects as dlsched sees them: a `DLJob` read as a `TrainingJob`, and a `NodeInfo`.

A DLJob (``dlsched.io/v1alpha1``, see ``deploy/crd.yaml``) carries what the user asked for
(``spec.request``, ``spec.worker``, ``spec.parameterServer``, bounds, ``spec.totalWork``), what
the controller granted (``spec.workers``, ``spec.ps`` and the ``dlsched.io/placement``
annotation, written together in one patch) and what the job reports (``status.progress``,
``status.speed``, ``status.progressTime``, ``status.phase``). Memory is read in GiB (dlsched's
``mem`` unit), CPU in cores, GPUs from ``nvidia.com/gpu``. A malformed object raises
`ObjectError` naming the object and the field, as ``kubectl`` does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dlsched.core import Arch, JobSpec, Resources

GROUP = "dlsched.io"
VERSION = "v1alpha1"
PLURAL = "dljobs"
KIND = "DLJob"
PLACEMENT_ANNOTATION = "dlsched.io/placement"
"""JSON ``{"workers": {node: count}, "ps": {node: count}}``: where the granted tasks go."""
GPU_RESOURCE = "nvidia.com/gpu"
DONE_PHASES = ("Succeeded", "Failed")
GIB = float(2**30)

_QUANTITY = re.compile(
    r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$"
)
_SUFFIX = {
    None: 1.0,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}

Obj = dict[str, Any]


class ObjectError(ValueError):
    """A Kubernetes object dlsched cannot read; the message names the object and the field."""


def parse_quantity(value: object, where: str) -> float:
    """A Kubernetes quantity (``"500m"``, ``"16Gi"``, ``4``) as a float >= 0 in base units."""
    if isinstance(value, bool):
        raise ObjectError(f"{where}: not a quantity: {value!r}")
    if isinstance(value, int | float):
        number = float(value)
    else:
        match = _QUANTITY.match(str(value).strip())
        if match is None:
            raise ObjectError(f"{where}: not a quantity: {value!r}")
        number = float(match[1]) * _SUFFIX[match[2]]
    if not number >= 0 or number == float("inf"):
        raise ObjectError(f"{where}: must be a finite quantity >= 0, got {value!r}")
    return number


def parse_time(value: object, where: str) -> float | None:
    """An RFC 3339 timestamp as Unix seconds (None if absent)."""
    if value in (None, ""):
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise ObjectError(f"{where}: not an RFC 3339 time: {value!r}") from None


def task_resources(obj: object, where: str) -> Resources:
    """``{gpu, cpu, memory}`` of one task: GPUs, cores, memory in GiB."""
    if obj is None:
        return Resources()
    if not isinstance(obj, dict):
        raise ObjectError(f"{where}: must be an object with gpu, cpu, memory")
    return Resources(
        parse_quantity(obj.get("gpu", 0), f"{where}.gpu"),
        parse_quantity(obj.get("cpu", 0), f"{where}.cpu"),
        parse_quantity(obj.get("memory", 0), f"{where}.memory") / GIB,
    )


def count_field(obj: Obj, key: str, default: int, where: str) -> int:
    value = obj.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ObjectError(f"{where}.{key}: must be an integer >= 0, got {value!r}")
    return value


def number_field(obj: Obj, key: str, default: float, where: str) -> float:
    value = obj.get(key, default)
    if not isinstance(value, int | float) or isinstance(value, bool) or value != value:
        raise ObjectError(f"{where}.{key}: must be a number, got {value!r}")
    return float(value)


def job_id_of(uid: str) -> int:
    """A stable integer id from an object's UID (its first 48 bits): the same after restarts."""
    digits = uid.replace("-", "")
    try:
        return int(digits[:12], 16)
    except ValueError:
        raise ObjectError(f"metadata.uid: not a UUID: {uid!r}") from None


@dataclass(slots=True)
class TrainingJob:
    """One elastic training job as read from the API: a DLJob or a Kubeflow PyTorchJob.

    Attributes:
        kind: the object's kind (``DLJob``, ``PyTorchJob``); `dlsched.k8s.kinds` says how to
            list it and write its grant.
        spec: the request as dlsched's `JobSpec` (submit time: creation, Unix seconds).
        workers, ps: replicas granted now (``spec.workers``, ``spec.ps``).
        placement: granted tasks per node, by role (``workers``/``ps``); None without annotation.
        phase: ``status.phase`` (``""`` before the job reports one).
        progress: work done (``spec.totalWork``'s unit) at ``progress_time_s`` (Unix seconds).
        speed: measured work units per second (0 if not reported).
        start_time_s: when it first ran (Unix seconds), if reported.
    """

    name: str
    namespace: str
    uid: str
    resource_version: str
    spec: JobSpec
    workers: int
    ps: int
    placement: dict[str, dict[str, int]] | None
    phase: str = ""
    progress: float = 0.0
    speed: float = 0.0
    progress_time_s: float | None = None
    start_time_s: float | None = None
    raw: Obj = field(default_factory=dict, repr=False)
    kind: str = KIND

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def done(self) -> bool:
        return self.phase in DONE_PHASES


def read_placement(meta: Obj, where: str) -> dict[str, dict[str, int]] | None:
    """The ``dlsched.io/placement`` annotation of ``meta`` (None if absent)."""
    text = (meta.get("annotations") or {}).get(PLACEMENT_ANNOTATION)
    if text is None:
        return None
    try:
        data = json.loads(text)
        result = {
            role: {str(n): int(c) for n, c in data.get(role, {}).items()}
            for role in ("workers", "ps")
        }
    except (ValueError, TypeError, AttributeError):
        raise ObjectError(
            f"{where}: annotation {PLACEMENT_ANNOTATION} is not valid JSON placement"
        ) from None
    return result


def parse_dljob(obj: Obj) -> TrainingJob:
    """A DLJob object (as the API returns it) read into a `DLJob`; `ObjectError` if malformed."""
    meta = obj.get("metadata") or {}
    where = f"DLJob {meta.get('namespace', '')}/{meta.get('name', '?')}"
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise ObjectError(f"{where}: spec: Required value")
    status = obj.get("status") or {}
    s = f"{where}: spec"
    arch_name = spec.get("arch", "ps" if spec.get("parameterServer") else "replica")
    try:
        arch = Arch(arch_name)
    except ValueError:
        raise ObjectError(
            f"{s}.arch: must be one of ps, allreduce, replica, got {arch_name!r}"
        ) from None
    request = spec.get("request") or {}
    if not isinstance(request, dict):
        raise ObjectError(f"{s}.request: must be an object with workers, ps")
    num_workers = count_field(request, "workers", 1, f"{s}.request")
    num_ps = count_field(request, "ps", 1 if arch is Arch.PS else 0, f"{s}.request")
    min_workers = count_field(spec, "minWorkers", num_workers, s)
    max_workers = count_field(spec, "maxWorkers", num_workers, s)
    max_ps = count_field(spec, "maxPS", num_ps, s) if arch is Arch.PS else 0
    if not 1 <= min_workers <= num_workers <= max_workers:
        raise ObjectError(
            f"{s}: need 1 <= minWorkers ({min_workers}) <= request.workers ({num_workers}) "
            f"<= maxWorkers ({max_workers})"
        )
    if arch is Arch.PS and not 1 <= num_ps <= max_ps:
        raise ObjectError(f"{s}: need 1 <= request.ps ({num_ps}) <= maxPS ({max_ps})")
    total_work = number_field(spec, "totalWork", 0.0, s)
    if not total_work > 0:
        raise ObjectError(f"{s}.totalWork: must be > 0, got {total_work!r}")
    created = parse_time(meta.get("creationTimestamp"), f"{where}: metadata.creationTimestamp")
    uid = str(meta.get("uid") or "")
    job_spec = JobSpec(
        job_id=job_id_of(uid),
        submit_time_s=created or 0.0,
        model=str(spec.get("model", "unknown")),
        arch=arch,
        total_work=total_work,
        worker_demand=task_resources(spec.get("worker"), f"{s}.worker"),
        ps_demand=task_resources(spec.get("parameterServer"), f"{s}.parameterServer")
        if arch is Arch.PS
        else Resources(),
        num_workers=num_workers,
        num_ps=num_ps if arch is Arch.PS else 0,
        min_workers=min_workers,
        max_workers=max_workers,
        max_ps=max_ps,
        priority=number_field(spec, "priority", 0.0, s),
    )
    st = f"{where}: status"
    return TrainingJob(
        name=str(meta.get("name")),
        namespace=str(meta.get("namespace", "")),
        uid=uid,
        resource_version=str(meta.get("resourceVersion", "")),
        spec=job_spec,
        workers=count_field(spec, "workers", 0, s),
        ps=count_field(spec, "ps", 0, s),
        placement=read_placement(meta, where),
        phase=str(status.get("phase", "")),
        progress=max(0.0, number_field(status, "progress", 0.0, st)),
        speed=max(0.0, number_field(status, "speed", 0.0, st)),
        progress_time_s=parse_time(status.get("progressTime"), f"{st}.progressTime"),
        start_time_s=parse_time(status.get("startTime"), f"{st}.startTime"),
        raw=obj,
    )


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A node as a dlsched server: allocatable GPUs, cores, GiB, and whether it takes work."""

    name: str
    capacity: Resources
    ready: bool
    schedulable: bool

    @property
    def usable(self) -> bool:
        return self.ready and self.schedulable


def parse_node(obj: Obj) -> NodeInfo:
    """A Node object read into a `NodeInfo` (allocatable, Ready condition, cordon)."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", "?"))
    where = f"Node {name}: status.allocatable"
    status = obj.get("status") or {}
    alloc = status.get("allocatable") or {}
    capacity = Resources(
        parse_quantity(alloc.get(GPU_RESOURCE, 0), f"{where}[{GPU_RESOURCE}]"),
        parse_quantity(alloc.get("cpu", 0), f"{where}.cpu"),
        parse_quantity(alloc.get("memory", 0), f"{where}.memory") / GIB,
    )
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    schedulable = not (obj.get("spec") or {}).get("unschedulable", False)
    return NodeInfo(name, capacity, ready, schedulable)
