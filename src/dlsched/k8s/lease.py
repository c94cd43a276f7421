"""Leader election with a ``coordination.k8s.io/v1`` Lease: one controller writes at a time.

The holder renews the lease at the start of every round and again during a long round, before
any write made when a third of the lease has passed since the last renewal. Another controller
takes it over only once it has not been renewed for ``leaseDurationSeconds``. Every lease write
names the resourceVersion it read, so two controllers racing for an expired lease cannot both
win (the loser gets 409 Conflict).

Fencing has two halves. Before every write, `fence` (the holder counts its lease from the moment
it *sent* the renewal, on a monotonic clock, which keeps running while the process is paused)
refuses the write once less than a third of the lease is left: a controller paused past its
lease (SIGSTOP, a long GC, a stalled request) wakes to `NotLeading` and writes nothing more; the
round is abandoned and the next one starts from what the cluster holds then. That check cannot
cover the gap between it and the request reaching the server (client-go's leader election says
the same of itself: it "does not guarantee that only one client is acting as a leader (a.k.a.
fencing)"): a process paused in exactly that gap sends one write once it wakes. The write itself
must be fenced where it is applied: the server admits a write of the controller only while the
Lease names the writer (its identity, sent as the User-Agent ``dlsched-controller/IDENTITY``)
as holder, unexpired. The project's test API server does this (``tests/k8s/apiserver.py``,
``fence=``), under the lock of the write itself. On a real cluster (Kubernetes >= 1.30),
``deploy/fence-policy.yaml`` does it: a ValidatingAdmissionPolicy with the Lease as parameter
admits a write of the controller's service account only when the Lease's holder is the pod
named by the request's bound service-account token (``deploy/deployment.yaml`` passes the pod
name as ``--identity``), and refuses it with 403 otherwise. It is weaker than the test server's
in two ways: it checks the holder, not expiry (CEL has no clock: a lease that expired without
being taken over still admits its old holder, which is safe, since no one else can write until
they take it), and it reads the Lease from the API server's watch cache, so a takeover fences the
old holder once that server has seen it (the watch's delay, not zero). Because one controller
process sends its writes one after the other and only it ever names itself holder, a write
admitted while the Lease names it cannot come from an earlier term that another controller
interrupted. A write refused (403, or 409) makes the controller `recheck` the Lease and, if it
is no longer safely the holder, stand down: `NotLeading`, one log line, no retry.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from dlsched.k8s.objects import ObjectError, parse_time
from dlsched.k8s.retry import with_retries

log = logging.getLogger(__name__)


class NotLeading(Exception):
    """This controller may not write now (its lease is lost, expiring, or it is stopping)."""


def _micro_time(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderLease:
    """The lease ``namespace/name`` held for ``identity``.

    Args:
        duration_s: seconds a holder's claim lasts without renewal.
        clock: Unix seconds, written as ``renewTime`` (tests pass a fake).
        monotonic: seconds that never go back, for the holder's own count of its lease
            (default: ``time.monotonic``, or ``clock`` when a fake clock is given).
    """

    def __init__(
        self,
        coordination: client.CoordinationV1Api,
        namespace: str,
        name: str,
        identity: str,
        duration_s: float = 15.0,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] | None = None,
    ) -> None:
        self.api = coordination
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.duration_s = duration_s
        self.clock = clock
        self.monotonic = monotonic or (time.monotonic if clock is time.time else clock)
        self.leading = False
        self.renewed_at = -math.inf
        """`monotonic` time at which the last successful renewal was sent."""

    @property
    def margin_s(self) -> float:
        """Lease left below which no write is made (a third of the lease)."""
        return self.duration_s / 3

    def _spec(self, now: float, transitions: int, acquired: str | None) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.duration_s)),
            "acquireTime": acquired or _micro_time(now),
            "renewTime": _micro_time(now),
            "leaseTransitions": transitions,
        }

    def _read(self, timeout_s: float = 10.0) -> Any:
        """The stored lease (None if there is none); `ObjectError` if it is not an object."""
        try:
            raw: Any = with_retries(
                lambda: self.api.read_namespaced_lease(
                    self.name, self.namespace, _preload_content=False, _request_timeout=timeout_s
                ),
                "read lease",
            )
        except client.ApiException as exc:
            if exc.status != 404:
                raise
            return None
        try:
            lease: Any = json.loads(raw.data)
        except ValueError:
            raise ObjectError(f"Lease {self.namespace}/{self.name}: reply is not JSON") from None
        if not isinstance(lease, dict) or not isinstance(lease.get("spec") or {}, dict):
            raise ObjectError(f"Lease {self.namespace}/{self.name}: not a Lease object")
        return lease

    def acquire(self) -> bool:
        """Take or renew the lease; True while this controller leads."""
        sent = self.monotonic()
        now = self.clock()
        lease = self._read()
        if lease is None:
            body: Any = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(now, 0, None),
            }
            return self._won(
                sent,
                lambda: self.api.create_namespaced_lease(
                    self.namespace, body, _preload_content=False, _request_timeout=10
                ),
            )
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        try:
            renewed = parse_time(spec.get("renewTime"), "Lease spec.renewTime") or 0.0
        except ObjectError:
            renewed = 0.0  # unreadable: as if never renewed (expired)
        duration = spec.get("leaseDurationSeconds")
        if not isinstance(duration, int | float) or isinstance(duration, bool) or duration <= 0:
            duration = self.duration_s
        if holder and holder != self.identity and renewed + float(duration) > now:
            if self.leading:
                log.warning("lost the lease %s/%s to %s", self.namespace, self.name, holder)
            self.leading = False
            self.renewed_at = -math.inf
            return False
        previous = spec.get("leaseTransitions")
        transitions = (previous if isinstance(previous, int) else 0) + (holder != self.identity)
        acquired = spec.get("acquireTime") if holder == self.identity else None
        lease["spec"] = self._spec(now, transitions, acquired)
        if holder and holder != self.identity:
            log.info("lease %s/%s of %s expired: taking it", self.namespace, self.name, holder)
        return self._won(
            sent,
            lambda: self.api.replace_namespaced_lease(
                self.name, self.namespace, lease, _preload_content=False, _request_timeout=10
            ),
        )

    def _won(self, sent: float, write: Callable[[], object]) -> bool:
        try:
            with_retries(write, "write lease")
        except client.ApiException as exc:
            if exc.status not in (409, 422):  # 409: another controller wrote it first
                raise
            if self.leading:
                log.warning("lost the lease %s/%s (%s)", self.namespace, self.name, exc.status)
            self.leading = False
            self.renewed_at = -math.inf
            return False
        if not self.leading:
            log.info("leading: holding lease %s/%s as %s", self.namespace, self.name, self.identity)
        self.leading = True
        self.renewed_at = sent
        return True

    def left_s(self) -> float:
        """Seconds of lease left by this controller's own count (negative: expired)."""
        return self.renewed_at + self.duration_s - self.monotonic()

    def fence(self) -> None:
        """Call before every write: renews the lease when a third of it has passed; raises
        `NotLeading` when less than `margin_s` is left or the renewal fails."""
        left = self.left_s()
        if not self.leading or left < self.margin_s:
            if self.leading:
                log.warning(
                    "lease %s/%s: %.1f s left, under the %.1f s margin: writing nothing more",
                    self.namespace,
                    self.name,
                    left,
                    self.margin_s,
                )
                self.leading = False
            raise NotLeading(f"lease {self.namespace}/{self.name} not held ({left:.1f} s left)")
        if self.duration_s - left < self.margin_s:
            return
        try:
            renewed = self.acquire()
        except Exception as exc:  # any failure: the renewal did not happen
            log.warning("lease %s/%s: renewal failed (%s)", self.namespace, self.name, exc)
            renewed = False
        if not renewed or self.left_s() < self.margin_s:
            self.leading = False
            raise NotLeading(f"lease {self.namespace}/{self.name} could not be renewed")

    def recheck(self) -> str:
        """After a write was refused: read the lease again; ``""`` if this controller still
        holds it with more than `margin_s` left, else why not (then it no longer leads)."""
        try:
            lease = self._read(timeout_s=2.0)
        except Exception as exc:  # unreadable: leading cannot be confirmed
            why = f"lease {self.namespace}/{self.name} not readable ({exc})"
        else:
            holder = ((lease or {}).get("spec") or {}).get("holderIdentity") or ""
            left = self.left_s()
            if holder != self.identity:
                why = f"lease {self.namespace}/{self.name} is held by {holder or 'nobody'!r}"
            elif not self.leading or left < self.margin_s:
                why = f"lease {self.namespace}/{self.name}: {left:.1f} s left"
            else:
                return ""
        self.leading = False
        self.renewed_at = -math.inf
        return why

    def release(self) -> bool:
        """Give the lease up (holder cleared) so that another controller takes over at once;
        True if it was released. Best effort: a failure leaves it to expire."""
        if not self.leading or self.left_s() <= 0:
            return False
        self.leading = False
        self.renewed_at = -math.inf
        try:
            lease = self._read(timeout_s=1.0)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return False
            lease["spec"]["holderIdentity"] = ""
            lease["spec"]["leaseDurationSeconds"] = 1
            lease["spec"]["renewTime"] = _micro_time(self.clock())
            self.api.replace_namespaced_lease(
                self.name, self.namespace, lease, _preload_content=False, _request_timeout=1
            )
        except Exception as exc:  # exiting anyway: the lease expires by itself
            log.warning("lease %s/%s not released (%s)", self.namespace, self.name, exc)
            return False
        log.info("released lease %s/%s", self.namespace, self.name)
        return True
