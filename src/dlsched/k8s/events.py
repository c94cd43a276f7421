"""Kubernetes Events the controller records (best effort: a failed one is only logged)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from urllib3.exceptions import HTTPError

from dlsched.k8s.rest import BadReply, JsonApi

log = logging.getLogger(__name__)

COMPONENT = "dlsched-controller"


def involved(obj: dict[str, Any], default_namespace: str) -> dict[str, Any] | None:
    """An Event's ``involvedObject`` for ``obj`` (None if it has no usable name)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return None
    ref = {
        "apiVersion": str(obj.get("apiVersion", "")),
        "kind": str(obj.get("kind", "")),
        "name": meta["name"],
        "uid": str(meta.get("uid", "")),
    }
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        ref["namespace"] = namespace
    return ref


def record(
    rest: JsonApi,
    namespace: str,
    ref: dict[str, Any],
    reason: str,
    message: str,
    kind: str = "Normal",
) -> None:
    """Record an Event about ``ref`` in ``namespace`` (a cluster-scoped object's Events go to
    the controller's namespace, as kubectl shows them)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    body: Any = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{ref['name']}.", "namespace": namespace},
        "involvedObject": ref,
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": COMPONENT},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    try:
        rest.request("POST", f"/api/v1/namespaces/{namespace}/events", body)
    except (client.ApiException, HTTPError, OSError, BadReply) as exc:
        log.warning("event on %s %s not recorded: %s", ref.get("kind"), ref["name"], exc)
