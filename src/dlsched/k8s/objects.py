"""Kubernetes objects as dlsched sees them: a `DLJob` read as a `TrainingJob`, and a `NodeInfo`.

A DLJob (``dlsched.io/v1alpha1``, see ``deploy/crd.yaml``) carries what the user asked for
(``spec.request``, ``spec.worker``, ``spec.parameterServer``, bounds, ``spec.totalWork``), what
the controller granted (``spec.workers``, ``spec.ps`` and the ``dlsched.io/placement``
annotation, written together in one patch) and what the job reports (``status.progress``,
``status.speed``, ``status.progressTime``, ``status.phase``). Memory is read in GiB (dlsched's
``mem`` unit), CPU in cores, GPUs from ``nvidia.com/gpu``. A malformed object raises
`ObjectError` naming the object and the field, as ``kubectl`` does: any object, within the CRD's
schema or not (an annotation map that is a list, a status that is a string, a count of 1e999),
is read or refused, never lets another exception through (`dlsched.k8s.controller` skips it).
"""

from __future__ import annotations

import json
import math
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
MAX_TASKS = 1024
"""Most workers (and parameter servers) one job may ask for or be granted: the CRD's
``maximum`` of ``maxWorkers``/``maxPS``/``request`` (and what the parser enforces)."""

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


def mapping(value: object, where: str) -> Obj:
    """``value`` if it is an object (None: an empty one); `ObjectError` otherwise."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ObjectError(f"{where}: must be an object, got {type(value).__name__}")
    return value


def parse_quantity(value: object, where: str) -> float:
    """A Kubernetes quantity (``"500m"``, ``"16Gi"``, ``4``) as a float >= 0 in base units."""
    if isinstance(value, bool):
        raise ObjectError(f"{where}: not a quantity: {value!r}")
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:
            raise ObjectError(f"{where}: must be a finite quantity >= 0, got {value!r}") from None
    else:
        match = _QUANTITY.match(str(value).strip())
        if match is None:
            raise ObjectError(f"{where}: not a quantity: {value!r}")
        try:
            number = float(match[1]) * _SUFFIX[match[2]]
        except ValueError:  # "1.2.3"
            raise ObjectError(f"{where}: not a quantity: {value!r}") from None
    if not number >= 0 or number == float("inf"):
        raise ObjectError(f"{where}: must be a finite quantity >= 0, got {value!r}")
    return number


def parse_time(value: object, where: str) -> float | None:
    """An RFC 3339 timestamp as Unix seconds (None if absent)."""
    if value in (None, ""):
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError, OSError):
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
    """A task count in ``0..MAX_TASKS``."""
    value = obj.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_TASKS:
        raise ObjectError(f"{where}.{key}: must be an integer in 0..{MAX_TASKS}, got {value!r}")
    return value


def number_field(obj: Obj, key: str, default: float, where: str) -> float:
    value = obj.get(key, default)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ObjectError(f"{where}.{key}: must be a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:
        number = float("inf")
    if not math.isfinite(number):
        raise ObjectError(f"{where}.{key}: must be a finite number, got {value!r}")
    return number


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
    """The ``dlsched.io/placement`` annotation of ``meta`` (None if absent): counts are
    integers in ``0..MAX_TASKS``."""
    text = mapping(meta.get("annotations"), f"{where}: metadata.annotations").get(
        PLACEMENT_ANNOTATION
    )
    if text is None:
        return None
    bad = ObjectError(f"{where}: annotation {PLACEMENT_ANNOTATION} is not valid JSON placement")
    try:
        data = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        raise bad from None
    if not isinstance(data, dict):
        raise bad
    result: dict[str, dict[str, int]] = {}
    for role in ("workers", "ps"):
        counts = data.get(role) or {}
        if not isinstance(counts, dict):
            raise bad
        result[role] = {}
        for node, count in counts.items():
            if not isinstance(count, int) or isinstance(count, bool):
                if not (isinstance(count, float) and count.is_integer()):
                    raise bad  # 1.5, 1e999 (inf), nan, strings
                count = int(count)
            if not 0 <= count <= MAX_TASKS:
                raise bad
            result[role][str(node)] = count
    return result


def parse_dljob(obj: Obj) -> TrainingJob:
    """A DLJob object (as the API returns it) read into a `DLJob`; `ObjectError` if malformed."""
    if not isinstance(obj, dict):
        raise ObjectError(f"DLJob: not an object: {type(obj).__name__}")
    meta = mapping(obj.get("metadata"), "DLJob: metadata")
    where = f"DLJob {meta.get('namespace', '')}/{meta.get('name', '?')}"
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ObjectError(f"{where}: metadata.name: Required value")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise ObjectError(f"{where}: spec: Required value")
    status = mapping(obj.get("status"), f"{where}: status")
    s = f"{where}: spec"
    arch_name = spec.get("arch", "ps" if spec.get("parameterServer") else "replica")
    try:
        arch = Arch(arch_name)
    except (ValueError, TypeError):
        raise ObjectError(
            f"{s}.arch: must be one of ps, allreduce, replica, got {arch_name!r}"
        ) from None
    request = mapping(spec.get("request"), f"{s}.request")
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
    worker_demand = task_resources(spec.get("worker"), f"{s}.worker")
    if not (worker_demand.gpu >= 1 or worker_demand.cpu >= 1):
        raise ObjectError(f"{s}.worker: needs gpu >= 1 or cpu >= 1 (the CRD's minimum)")
    created = parse_time(meta.get("creationTimestamp"), f"{where}: metadata.creationTimestamp")
    uid = str(meta.get("uid") or "")
    job_spec = JobSpec(
        job_id=job_id_of(uid),
        submit_time_s=created or 0.0,
        model=str(spec.get("model", "unknown")),
        arch=arch,
        total_work=total_work,
        worker_demand=worker_demand,
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
        name=name,
        namespace=str(meta.get("namespace", "")),
        uid=uid,
        resource_version=str(meta.get("resourceVersion", "")),
        spec=job_spec,
        workers=count_field(spec, "workers", 0, s),
        ps=count_field(spec, "ps", 0, s),
        placement=read_placement(meta, where),
        phase=_phase(status.get("phase"), f"{st}.phase"),
        progress=max(0.0, number_field(status, "progress", 0.0, st)),
        speed=max(0.0, number_field(status, "speed", 0.0, st)),
        progress_time_s=parse_time(status.get("progressTime"), f"{st}.progressTime"),
        start_time_s=parse_time(status.get("startTime"), f"{st}.startTime"),
        raw=obj,
    )


def _phase(value: object, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ObjectError(f"{where}: must be a string, got {value!r}")
    return value


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
    if not isinstance(obj, dict):
        raise ObjectError(f"Node: not an object: {type(obj).__name__}")
    meta = mapping(obj.get("metadata"), "Node: metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ObjectError("Node: metadata.name: Required value")
    where = f"Node {name}: status.allocatable"
    status = mapping(obj.get("status"), f"Node {name}: status")
    alloc = mapping(status.get("allocatable"), where)
    capacity = Resources(
        parse_quantity(alloc.get(GPU_RESOURCE, 0), f"{where}[{GPU_RESOURCE}]"),
        parse_quantity(alloc.get("cpu", 0), f"{where}.cpu"),
        parse_quantity(alloc.get("memory", 0), f"{where}.memory") / GIB,
    )
    conditions = status.get("conditions") or []
    if not isinstance(conditions, list) or not all(isinstance(c, dict) for c in conditions):
        raise ObjectError(f"Node {name}: status.conditions: must be a list of objects")
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    schedulable = mapping(obj.get("spec"), f"Node {name}: spec").get("unschedulable") is not True
    return NodeInfo(name, capacity, ready, schedulable)
