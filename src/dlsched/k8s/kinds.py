"""The job kinds the controller sizes, and how this cluster serves them.

A `JobKind` says where a kind lives in the API, how to read it and where its granted worker
count is. At start the controller reads each kind's CustomResourceDefinition (`discover`): a kind
whose CRD is absent is skipped, and the worker count is written through the ``/scale``
subresource when the CRD declares one whose ``specReplicasPath`` is that field (DLJob's
``.spec.workers``; Kubeflow's PyTorchJob declares ``.spec.pytorchReplicaSpecs.Worker.replicas``),
otherwise by merge patch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kubernetes import client

from dlsched.k8s.objects import GROUP, KIND, PLURAL, VERSION, Obj, TrainingJob, parse_dljob
from dlsched.k8s.pytorchjob import (
    MANAGED_LABEL,
    PT_GROUP,
    PT_KIND,
    PT_PLURAL,
    PT_VERSION,
    WORKERS_PATH,
    parse_pytorchjob,
)
from dlsched.k8s.rest import JsonApi
from dlsched.k8s.retry import with_retries

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class JobKind:
    """One kind of training job.

    Attributes:
        parse: object → `TrainingJob` (raises `ObjectError`).
        workers_path: the granted workers' field (the ``/scale`` ``specReplicasPath``).
        ps_path: the granted parameter servers' field; None for kinds without them.
        label_selector: only objects matching it are the controller's (``""``: all).
        scale_if_unreadable: use ``/scale`` when the CRD cannot be read (403): True for the
            CRD dlsched ships.
    """

    kind: str
    group: str
    version: str
    plural: str
    parse: Callable[[Obj], TrainingJob]
    workers_path: tuple[str, ...]
    ps_path: tuple[str, ...] | None
    label_selector: str = ""
    scale_if_unreadable: bool = False

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"

    def path(self, namespace: str, name: str = "", sub: str = "") -> str:
        """The API path of the collection, an object or its subresource."""
        path = f"/apis/{self.group}/{self.version}/namespaces/{namespace}/{self.plural}"
        return "/".join(p for p in (path, name, sub) if p)


DLJOB = JobKind(
    KIND,
    GROUP,
    VERSION,
    PLURAL,
    parse_dljob,
    ("spec", "workers"),
    ("spec", "ps"),
    scale_if_unreadable=True,
)
PYTORCHJOB = JobKind(
    PT_KIND,
    PT_GROUP,
    PT_VERSION,
    PT_PLURAL,
    parse_pytorchjob,
    WORKERS_PATH,
    None,
    label_selector=f"{MANAGED_LABEL}=true",
)
KINDS = {k.kind.lower(): k for k in (DLJOB, PYTORCHJOB)}
"""Kinds by lower-case name (``--kinds dljob,pytorchjob``)."""


@dataclass(frozen=True, slots=True)
class ServedKind:
    """A kind this cluster serves; ``scale``: the worker count is written through ``/scale``."""

    kind: JobKind
    scale: bool


def discover(api: client.ApiClient, kinds: Iterable[JobKind]) -> dict[str, ServedKind]:
    """Kind name → how it is served, from each kind's CRD (absent CRD: kind left out)."""
    rest = JsonApi(api)
    served: dict[str, ServedKind] = {}
    for kind in kinds:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{kind.crd_name}"
        try:
            crd = with_retries(lambda path=path: rest.request("GET", path), f"read CRD {path}")  # type: ignore[misc]
        except client.ApiException as exc:
            if exc.status == 404:
                log.info(
                    "CRD %s is not installed: %s objects are not scheduled",
                    kind.crd_name,
                    kind.kind,
                )
                continue
            log.warning(
                "cannot read CRD %s (%s %s); assuming %s",
                kind.crd_name,
                exc.status,
                exc.reason,
                "its /scale" if kind.scale_if_unreadable else "no /scale",
            )
            served[kind.kind] = ServedKind(kind, kind.scale_if_unreadable)
            continue
        scale = _declares_scale(crd, kind)
        if scale is not None:
            served[kind.kind] = ServedKind(kind, scale)
    return served


def _declares_scale(crd: Obj, kind: JobKind) -> bool | None:
    """Whether the CRD's served version of ``kind`` has a fitting ``/scale`` (None: that
    version is not served)."""
    want = "." + ".".join(kind.workers_path)
    for version in (crd.get("spec") or {}).get("versions") or []:
        if version.get("name") != kind.version or not version.get("served", True):
            continue
        scale = (version.get("subresources") or {}).get("scale")
        if scale is None:
            log.info("%s has no /scale subresource: workers are set by merge patch", kind.crd_name)
            return False
        if scale.get("specReplicasPath") != want:
            log.warning(
                "%s's /scale sets %s, not %s: workers are set by merge patch",
                kind.crd_name,
                scale.get("specReplicasPath"),
                want,
            )
            return False
        return True
    log.warning(
        "%s does not serve version %s: its objects are not scheduled", kind.crd_name, kind.version
    )
    return None
