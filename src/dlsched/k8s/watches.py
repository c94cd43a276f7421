"""Watches that wake the reconcile loop early: list, then watch from the list's resourceVersion.

A watch whose resourceVersion the server no longer keeps ends with 410 Gone (etcd compaction):
the loop lists again and watches from the new version. Other failures (network, 5xx, a stream
cut mid-way, an event that is not what the API sends) back off exponentially (0.5 s doubling to
30 s): the watch thread never ends before ``stop``. Rounds list everything themselves, so a
watch only decides *when* a round runs, never what it sees: a missed event costs latency, not
correctness.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubernetes import client, watch

from dlsched.k8s.metrics import Metrics
from dlsched.k8s.objects import NodeInfo, ObjectError, parse_node
from dlsched.k8s.retry import short

log = logging.getLogger(__name__)

Event = dict[str, Any]


def watch_loop(
    what: str,
    relist: Callable[[], str],
    call: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    changed: Callable[[Event], bool],
    *,
    stop: threading.Event,
    wake: threading.Event,
    metrics: Metrics,
    timeout_s: int,
) -> None:
    """Until ``stop``: ``relist()`` (its resourceVersion), then watch ``call(*args, **kwargs)``
    from it, setting ``wake`` on every event ``changed`` accepts (and after each list)."""
    version: str | None = None
    backoff = 0.0
    while not stop.is_set():
        try:
            if version is None:
                version = relist()
                wake.set()
            stream = watch.Watch()
            for event in stream.stream(
                call, *args, resource_version=version, timeout_seconds=timeout_s, **kwargs
            ):
                version = event["raw_object"]["metadata"]["resourceVersion"]
                if changed(event):
                    wake.set()
                if stop.is_set():
                    stream.stop()
            backoff = 0.0
        except client.ApiException as exc:
            if exc.status == 410:
                log.info("%s watch expired (410 Gone); listing again", what)
                metrics.errors.labels("watch_expired").inc()
                version = None
                continue
            backoff = _failed(what, exc, backoff, stop, metrics)
        except Exception as exc:  # a cut stream, an odd event: the watch starts again
            backoff = _failed(what, exc, backoff, stop, metrics)


def _failed(
    what: str, exc: Exception, backoff: float, stop: threading.Event, metrics: Metrics
) -> float:
    metrics.errors.labels("watch").inc()
    backoff = min(30.0, max(0.5, backoff * 2))
    log.warning("%s watch failed (%s); again in %.1f s", what, short(exc), backoff)
    stop.wait(backoff)
    return backoff


class NodeChanges:
    """Which node events matter to the scheduler: a node added or removed, or a change of its
    allocatable resources, readiness or cordon. Heartbeats and label edits do not wake a round
    (a large cluster's node status updates would otherwise run one every few hundred ms)."""

    def __init__(self) -> None:
        self.seen: dict[str, NodeInfo | None] = {}

    def reset(self, nodes: list[dict[str, Any]]) -> None:
        """Start from a fresh list of Node objects."""
        self.seen = {str(n["metadata"]["name"]): _info(n) for n in nodes}

    def __call__(self, event: Event) -> bool:
        obj = event["raw_object"]
        name = str(obj["metadata"]["name"])
        deleted = event["type"] == "DELETED"
        info = None if deleted else _info(obj)
        known = name in self.seen
        old = self.seen.pop(name, None)
        if not deleted:
            self.seen[name] = info
        return not known or deleted or info != old


def _info(obj: dict[str, Any]) -> NodeInfo | None:
    try:
        return parse_node(obj)
    except ObjectError:
        return None
