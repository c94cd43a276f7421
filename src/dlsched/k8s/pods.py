"""``--bind``: the controller creates a granted job's pods and binds them to the nodes its
placement chose (the Binding subresource, as kube-scheduler does), and deletes surplus ones.

Pods are built from the DLJob's ``spec.template`` (a PodTemplateSpec), one per task, named
``JOB-ROLE-K`` (the lowest K the job's pods do not use: a create retried after a lost answer
finds its own pod, 409 AlreadyExists, and never makes a second one), labelled with the job and
the role, owned by the DLJob (garbage-collected with it), with ``schedulerName: dlsched`` so
that no other scheduler takes them, and with the task's GPUs, cores and memory as requests and
limits. Reconciling is idempotent: pods already on the right nodes stay, as do pods that
Succeeded (the task ended: it is not started again); unbound pods (a create whose bind never
happened) and Failed ones are deleted and remade. Pods still running for a DLJob that finished
or was deleted are deleted (`PodBinder.collect`). Every write goes through `JsonApi`, so the
leader lease's fence comes before each.

`other_usage` is what pods the controller does not account for by placement take on each node
(other workloads, pods of jobs it cannot read, pods waiting to be deleted): the scheduler's
capacity is the node's allocatable minus that.
"""

from __future__ import annotations

import copy
import logging
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from kubernetes import client

from dlsched.core import Resources
from dlsched.k8s.objects import (
    GIB,
    GPU_RESOURCE,
    GROUP,
    KIND,
    VERSION,
    ObjectError,
    TrainingJob,
    mapping,
    parse_quantity,
)
from dlsched.k8s.rest import JsonApi
from dlsched.k8s.retry import with_retries

log = logging.getLogger(__name__)

SCHEDULER_NAME = "dlsched"
JOB_LABEL = "dlsched.io/job"
ROLE_LABEL = "dlsched.io/role"
MANAGED_LABEL = "app.kubernetes.io/managed-by"
ROLES = {"workers": "worker", "ps": "ps"}
ENDED = ("Succeeded", "Failed")


def check_template(job: TrainingJob) -> str:
    """Why ``job`` cannot get pods (no ``spec.template.spec.containers``), or ``""``."""
    template = job.raw.get("spec", {}).get("template") or {}
    containers = (template.get("spec") or {}).get("containers")
    if not isinstance(containers, list) or not containers:
        return f"DLJob {job.key}: spec.template.spec.containers: Required value (--bind)"
    return ""


def pod_body(job: TrainingJob, role: str, demand: Resources, name: str) -> dict[str, Any]:
    """One task's pod ``name`` (not yet bound) from the job's template."""
    why = check_template(job)
    if why:
        raise ObjectError(why)
    template = copy.deepcopy(job.raw["spec"]["template"])
    meta = template.get("metadata") or {}
    labels = {**(meta.get("labels") or {}), JOB_LABEL: job.name, ROLE_LABEL: role}
    labels[MANAGED_LABEL] = "dlsched"
    spec = template["spec"]
    spec["schedulerName"] = SCHEDULER_NAME
    spec.setdefault("restartPolicy", "OnFailure")
    amounts = {
        "cpu": f"{round(demand.cpu * 1000)}m",
        "memory": str(round(demand.mem * GIB)),
    }
    if demand.gpu:
        amounts[GPU_RESOURCE] = str(round(demand.gpu))
    main = spec["containers"][0]
    main.setdefault("resources", {})
    main["resources"]["requests"] = dict(amounts)
    main["resources"]["limits"] = dict(amounts)
    main.setdefault("env", []).append({"name": "DLSCHED_ROLE", "value": role})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": job.namespace,
            "labels": labels,
            "annotations": meta.get("annotations") or {},
            "ownerReferences": [
                {
                    "apiVersion": f"{GROUP}/{VERSION}",
                    "kind": KIND,
                    "name": job.name,
                    "uid": job.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }


def _phase(pod: dict[str, Any]) -> str:
    status = pod.get("status")
    return str(status.get("phase", "")) if isinstance(status, dict) else ""


def _label(pod: dict[str, Any], key: str) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(key, ""))


def _owner_uid(pod: dict[str, Any]) -> str:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return str(ref.get("uid", ""))
    return ""


class PodBinder:
    """Keeps each granted job's pods where its placement says.

    Args:
        rest: JSON requests (writes fenced by the lease).
        namespace: where the DLJobs and their pods are.
    """

    def __init__(self, rest: JsonApi, namespace: str) -> None:
        self.rest = rest
        self.namespace = namespace
        self._pods: dict[str, list[dict[str, Any]]] = defaultdict(list)

    @property
    def _base(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"

    def load(self, pods: list[Any]) -> None:
        """Take this round's pods (every pod of the namespace, or only the managed ones)."""
        self._pods = defaultdict(list)
        for pod in pods:
            meta = pod.get("metadata") if isinstance(pod, dict) else None
            if (
                not isinstance(meta, dict)
                or meta.get("namespace", self.namespace) != self.namespace
            ):
                continue
            if _label(pod, MANAGED_LABEL) == "dlsched":
                self._pods[_label(pod, JOB_LABEL)].append(pod)

    def collect(self, active: dict[str, str], unreadable: set[str]) -> int:
        """Delete running pods of DLJobs that are no longer active (finished, deleted, or
        replaced by a job of the same name); ``active``: name → uid of active DLJobs,
        ``unreadable``: names of DLJobs that could not be read (their pods are left alone).
        Pods deleted."""
        deleted = 0
        for name, pods in list(self._pods.items()):
            if name in unreadable:
                continue
            uid = active.get(name)
            keep = []
            for pod in pods:
                if (
                    _phase(pod) in ENDED
                    or (pod.get("metadata") or {}).get("deletionTimestamp")
                    or (uid is not None and _owner_uid(pod) in ("", uid))
                ):
                    keep.append(pod)
                    continue
                log.info("pod %s: its DLJob %s is finished or gone", _name(pod), name)
                self._delete(_name(pod))
                deleted += 1
            self._pods[name] = keep
        return deleted

    def sync(self, job: TrainingJob, placement: dict[str, dict[str, int]]) -> int:
        """Create, bind and delete ``job``'s pods to match ``placement``; pods changed."""
        have: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        gone: list[dict[str, Any]] = []
        pods = self._pods.get(job.name, [])
        for pod in pods:
            if (pod.get("metadata") or {}).get("deletionTimestamp"):
                continue  # on its way out (its node's books count it until it is gone)
            role = _label(pod, ROLE_LABEL)
            node = (pod.get("spec") or {}).get("nodeName") or ""
            if job.done:
                if _phase(pod) not in ENDED:
                    gone.append(pod)
            elif node and _phase(pod) != "Failed":  # a Succeeded task is done: never made again
                have[(role, node)].append(pod)
            else:  # never bound, or failed: made again where the placement says
                gone.append(pod)
        kept: list[dict[str, Any]] = []
        to_make: list[tuple[str, Resources, str]] = []
        for plural, role in ROLES.items():
            demand = job.spec.worker_demand if plural == "workers" else job.spec.ps_demand
            want = {} if job.done else placement.get(plural, {})
            for node in sorted(set(want) | {n for r, n in have if r == role}):
                on_node = have.get((role, node), [])
                keep = min(len(on_node), want.get(node, 0))
                kept += on_node[:keep]
                gone += on_node[keep:]
                to_make += [(role, demand, node)] * (want.get(node, 0) - keep)
        for pod in gone:  # free the nodes before binding new pods to them
            self._delete(_name(pod))
        taken = {_name(pod) for pod in pods}
        made = []
        for role, demand, node in to_make:
            name = _free_name(job.name, role, taken)
            taken.add(name)
            made.append(self._create_bound(job, role, demand, node, name))
        self._pods[job.name] = kept + made
        return len(gone) + len(made)

    def _delete(self, name: str) -> None:
        try:
            with_retries(
                lambda: self.rest.request("DELETE", f"{self._base}/{name}"), f"delete pod {name}"
            )
        except client.ApiException as exc:
            if exc.status != 404:
                raise
        log.info("deleted pod %s/%s", self.namespace, name)

    def _create_bound(
        self, job: TrainingJob, role: str, demand: Resources, node: str, name: str
    ) -> dict[str, Any]:
        body = pod_body(job, role, demand, name)
        try:
            pod = with_retries(
                lambda: self.rest.request("POST", self._base, body), f"create pod {name}"
            )
        except client.ApiException as exc:
            if exc.status != 409:
                raise
            pod = self._own(job, name)  # made by a try whose answer was lost
        bound = (pod.get("spec") or {}).get("nodeName")
        if bound == node:
            return pod
        if bound:
            raise ObjectError(f"pod {self.namespace}/{name} is already bound to node {bound}")
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": self.namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            with_retries(
                lambda: self.rest.request("POST", f"{self._base}/{name}/binding", binding),
                f"bind pod {name}",
            )
        except client.ApiException as exc:
            if exc.status != 409:
                raise
            if (self._own(job, name).get("spec") or {}).get("nodeName") != node:
                raise
        pod.setdefault("spec", {})["nodeName"] = node
        log.info("bound pod %s/%s (%s of %s) to node %s", self.namespace, name, role, job.key, node)
        return pod

    def _own(self, job: TrainingJob, name: str) -> dict[str, Any]:
        """Pod ``name`` if it is ``job``'s; the 409 is raised again if it is not."""
        pod = with_retries(
            lambda: self.rest.request("GET", f"{self._base}/{name}"), f"get pod {name}"
        )
        if _owner_uid(pod) != job.uid or (pod.get("metadata") or {}).get("deletionTimestamp"):
            raise ObjectError(f"pod {self.namespace}/{name} exists and is not {job.key}'s")
        return pod


def _name(pod: dict[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name", ""))


def _free_name(job: str, role: str, taken: set[str]) -> str:
    k = 0
    while f"{job}-{role}-{k}" in taken:
        k += 1
    return f"{job}-{role}-{k}"


def pod_requests(pod: dict[str, Any]) -> Resources:
    """What a pod asks of its node: its containers' requests (limits where no request is
    given, as the API server defaults them), or its largest init container's if more."""
    spec = mapping(pod.get("spec"), "Pod spec")

    def total(containers: object, init: bool) -> list[float]:
        sums = [0.0, 0.0, 0.0]
        biggest = [0.0, 0.0, 0.0]
        if not isinstance(containers, list):
            return sums
        for container in containers:
            resources = mapping(mapping(container, "container").get("resources"), "resources")
            limits = mapping(resources.get("limits"), "limits")
            requests = {**limits, **mapping(resources.get("requests"), "requests")}
            row = [
                parse_quantity(requests.get(GPU_RESOURCE, 0), GPU_RESOURCE),
                parse_quantity(requests.get("cpu", 0), "cpu"),
                parse_quantity(requests.get("memory", 0), "memory") / GIB,
            ]
            sums = [a + b for a, b in zip(sums, row, strict=True)]
            biggest = [max(a, b) for a, b in zip(biggest, row, strict=True)]
        return biggest if init else sums  # init containers run one at a time

    main, init = total(spec.get("containers"), False), total(spec.get("initContainers"), True)
    return Resources(*(max(a, b) for a, b in zip(main, init, strict=True)))


def other_usage(
    pods: list[Any], accounted: Callable[[dict[str, Any]], bool]
) -> dict[str, Resources]:
    """Node name → what bound, unfinished pods take there, except those ``accounted`` says
    the books already count (pods of active jobs the controller sizes)."""
    used: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for pod in pods:
        if not isinstance(pod, dict) or _phase(pod) in ENDED:
            continue
        node = (pod.get("spec") or {}).get("nodeName") if isinstance(pod.get("spec"), dict) else ""
        if not node or accounted(pod):
            continue
        try:
            demand = pod_requests(pod)
        except ObjectError as exc:
            log.warning("pod %s: requests not readable (%s); counted as none", _name(pod), exc)
            continue
        row = used[str(node)]
        for i, x in enumerate(demand.as_tuple()):
            row[i] += x
    return {node: Resources(*row) for node, row in used.items()}
