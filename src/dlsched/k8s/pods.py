"""``--bind``: the controller creates a granted job's pods and binds them to the nodes its
placement chose (the Binding subresource, as kube-scheduler does), and deletes surplus ones.

Pods are built from the DLJob's ``spec.template`` (a PodTemplateSpec), one per task, named by
``generateName``, labelled with the job and the role, owned by the DLJob (garbage-collected with
it), with ``schedulerName: dlsched`` so that no other scheduler takes them, and with the task's
GPUs, cores and memory as requests and limits. Reconciling is idempotent: pods already on the
right nodes stay, as do pods that Succeeded (the task ended: it is not started again); unbound
pods (a create whose bind never happened) and Failed ones are deleted and remade.
"""

from __future__ import annotations

import copy
import json
import logging
from collections import defaultdict
from typing import Any

from kubernetes import client

from dlsched.core import Resources
from dlsched.k8s.objects import GIB, GPU_RESOURCE, GROUP, KIND, VERSION, ObjectError, TrainingJob
from dlsched.k8s.retry import with_retries

log = logging.getLogger(__name__)

SCHEDULER_NAME = "dlsched"
JOB_LABEL = "dlsched.io/job"
ROLE_LABEL = "dlsched.io/role"
MANAGED_LABEL = "app.kubernetes.io/managed-by"
ROLES = {"workers": "worker", "ps": "ps"}


def check_template(job: TrainingJob) -> str:
    """Why ``job`` cannot get pods (no ``spec.template.spec.containers``), or ``""``."""
    template = job.raw.get("spec", {}).get("template") or {}
    containers = (template.get("spec") or {}).get("containers")
    if not isinstance(containers, list) or not containers:
        return f"DLJob {job.key}: spec.template.spec.containers: Required value (--bind)"
    return ""


def pod_body(job: TrainingJob, role: str, demand: Resources) -> dict[str, Any]:
    """One task's pod (not yet bound) from the job's template."""
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
            "generateName": f"{job.name}-{role}-",
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


class PodBinder:
    """Keeps each granted job's pods where its placement says.

    Args:
        core: the CoreV1 API.
        namespace: where the DLJobs and their pods are.
    """

    def __init__(self, core: client.CoreV1Api, namespace: str) -> None:
        self.core = core
        self.namespace = namespace
        self._pods: dict[str, list[dict[str, Any]]] = defaultdict(list)

    def load(self) -> None:
        """Read every pod this controller manages (one list call)."""
        raw: Any = with_retries(
            lambda: self.core.list_namespaced_pod(
                self.namespace, label_selector=f"{MANAGED_LABEL}=dlsched", _preload_content=False
            ),
            "list pods",
        )
        self._pods = defaultdict(list)
        for pod in json.loads(raw.data)["items"]:
            self._pods[pod["metadata"]["labels"].get(JOB_LABEL, "")].append(pod)

    def sync(self, job: TrainingJob, placement: dict[str, dict[str, int]]) -> int:
        """Create, bind and delete ``job``'s pods to match ``placement``; pods changed."""
        have: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        gone: list[dict[str, Any]] = []
        for pod in self._pods.get(job.name, []):
            role = pod["metadata"]["labels"].get(ROLE_LABEL, "")
            node = (pod.get("spec") or {}).get("nodeName") or ""
            phase = (pod.get("status") or {}).get("phase", "")
            if node and phase != "Failed":  # a Succeeded task is done: never made again
                have[(role, node)].append(pod)
            else:  # never bound, or failed: made again where the placement says
                gone.append(pod)
        kept: list[dict[str, Any]] = []
        to_make: list[tuple[str, Resources, str]] = []
        for plural, role in ROLES.items():
            demand = job.spec.worker_demand if plural == "workers" else job.spec.ps_demand
            want = placement.get(plural, {})
            for node in sorted(set(want) | {n for r, n in have if r == role}):
                pods = have.get((role, node), [])
                keep = min(len(pods), want.get(node, 0))
                kept += pods[:keep]
                gone += pods[keep:]
                to_make += [(role, demand, node)] * (want.get(node, 0) - keep)
        for pod in gone:  # free the nodes before binding new pods to them
            self._delete(pod["metadata"]["name"])
        made = [self._create_bound(job, *task) for task in to_make]
        self._pods[job.name] = kept + made
        return len(gone) + len(made)

    def _delete(self, name: str) -> None:
        try:
            with_retries(
                lambda: self.core.delete_namespaced_pod(
                    name, self.namespace, _preload_content=False
                ),
                f"delete pod {name}",
            )
        except client.ApiException as exc:
            if exc.status != 404:
                raise
        log.info("deleted pod %s/%s", self.namespace, name)

    def _create_bound(
        self, job: TrainingJob, role: str, demand: Resources, node: str
    ) -> dict[str, Any]:
        body: Any = pod_body(job, role, demand)
        raw: Any = with_retries(
            lambda: self.core.create_namespaced_pod(self.namespace, body, _preload_content=False),
            f"create pod for {job.key}",
        )
        pod: dict[str, Any] = json.loads(raw.data)
        name = pod["metadata"]["name"]
        binding: Any = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": self.namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        with_retries(
            lambda: self.core.create_namespaced_pod_binding(
                name, self.namespace, binding, _preload_content=False
            ),
            f"bind pod {name}",
        )
        pod.setdefault("spec", {})["nodeName"] = node
        log.info("bound pod %s/%s (%s of %s) to node %s", self.namespace, name, role, job.key, node)
        return pod
