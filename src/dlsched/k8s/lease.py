"""Leader election with a ``coordination.k8s.io/v1`` Lease: one controller acts at a time.

The holder renews the lease every round; another controller takes it over only once it has
not been renewed for ``leaseDurationSeconds``. Every write names the resourceVersion it read, so
two controllers racing for an expired lease cannot both win (the loser gets 409 Conflict).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from dlsched.k8s.objects import parse_time
from dlsched.k8s.retry import with_retries

log = logging.getLogger(__name__)


def _micro_time(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderLease:
    """The lease ``namespace/name`` held for ``identity``.

    Args:
        duration_s: seconds a holder's claim lasts without renewal.
        clock: Unix seconds (tests pass a fake).
    """

    def __init__(
        self,
        coordination: client.CoordinationV1Api,
        namespace: str,
        name: str,
        identity: str,
        duration_s: float = 15.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.api = coordination
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.duration_s = duration_s
        self.clock = clock
        self.leading = False

    def _spec(self, now: float, transitions: int, acquired: str | None) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.duration_s)),
            "acquireTime": acquired or _micro_time(now),
            "renewTime": _micro_time(now),
            "leaseTransitions": transitions,
        }

    def acquire(self) -> bool:
        """Take or renew the lease; True while this controller leads."""
        now = self.clock()
        try:
            raw: Any = with_retries(
                lambda: self.api.read_namespaced_lease(
                    self.name, self.namespace, _preload_content=False
                ),
                "read lease",
            )
            lease = json.loads(raw.data)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
            body: Any = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(now, 0, None),
            }
            return self._won(
                lambda: self.api.create_namespaced_lease(
                    self.namespace, body, _preload_content=False
                )
            )
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        renewed = parse_time(spec.get("renewTime"), "Lease spec.renewTime") or 0.0
        duration = float(spec.get("leaseDurationSeconds") or self.duration_s)
        if holder and holder != self.identity and renewed + duration > now:
            if self.leading:
                log.warning("lost the lease %s/%s to %s", self.namespace, self.name, holder)
            self.leading = False
            return False
        transitions = int(spec.get("leaseTransitions") or 0) + (holder != self.identity)
        acquired = spec.get("acquireTime") if holder == self.identity else None
        lease["spec"] = self._spec(now, transitions, acquired)
        return self._won(
            lambda: self.api.replace_namespaced_lease(
                self.name, self.namespace, lease, _preload_content=False
            )
        )

    def _won(self, write: Callable[[], object]) -> bool:
        try:
            with_retries(write, "write lease")
        except client.ApiException as exc:
            if exc.status != 409:
                raise
            self.leading = False
            return False
        if not self.leading:
            log.info("leading: holding lease %s/%s as %s", self.namespace, self.name, self.identity)
        self.leading = True
        return True
