"""JSON requests by path through the official client's connection pool and credentials.

The controller's writes (a patch and a ``/scale`` update per change, up to thousands in the
round that starts a backlog) go through `JsonApi` rather than the generated API methods: it
uses the same `kubernetes.client.ApiClient` (its configured host, TLS, proxy, pooled
connections and, through ``update_params_for_auth``, its bearer token and refresh hook) but
skips the generated layer's per-call argument validation and body sanitizing, which cost about
as much CPU as the HTTP exchange itself (see RESULTS.md, "Kubernetes controller ... /scale").
Errors are the client's `ApiException`, so retries and conflict handling read them as usual;
an answer that is not a JSON object (an HTML page from a proxy, a list, cut text) is a
`BadReply`. Every request has a deadline (a stalled server never hangs the controller), every
write first calls ``guard`` (the leader lease's fence: `dlsched.k8s.lease`), and a write the
server refuses with 403 or 409 is shown to ``refused`` before it is raised (the controller
re-checks its lease there: a fenced write means another controller leads).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kubernetes import client
from urllib3 import HTTPConnectionPool, ProxyManager, Timeout
from urllib3.util import parse_url

MERGE_PATCH = "application/merge-patch+json"
JSON = "application/json"
READ_TIMEOUT = Timeout(connect=5.0, read=60.0)
"""Deadline of a read (a list of thousands of objects takes seconds on a real cluster)."""
WRITE_TIMEOUT = Timeout(connect=2.0, read=4.0)
"""Deadline of a write: shorter than the lease's margin, so that a write the controller gave
up on is not left pending at the server for long."""


class BadReply(Exception):
    """An answer that is not what the API serves (not JSON, not an object, no ``items``)."""


class JsonApi:
    """Sends JSON to API paths (``/apis/GROUP/VERSION/namespaces/NS/PLURAL/NAME[/scale]``)."""

    def __init__(
        self,
        api: client.ApiClient,
        guard: Callable[[], None] | None = None,
        refused: Callable[[client.ApiException, str, str], None] | None = None,
    ) -> None:
        self.api = api
        self.guard = guard
        self.refused = refused
        host = parse_url(api.configuration.host)
        self._prefix = (host.path or "").rstrip("/")
        manager = api.rest_client.pool_manager
        # Straight to the host's connection pool (what PoolManager.request looks up per call);
        # through a proxy, the manager decides how each request goes.
        self._pool: HTTPConnectionPool | None = None
        if not isinstance(manager, ProxyManager) and host.host:
            self._pool = manager.connection_from_host(host.host, port=host.port, scheme=host.scheme)

    def request(
        self,
        method: str,
        path: str,
        body: object = None,
        content_type: str = JSON,
        timeout: float | Timeout | None = None,
    ) -> dict[str, Any]:
        """The decoded JSON answer of ``method path`` with ``body``; `client.ApiException`
        for any answer outside 2xx (its status, reason and body as the generated calls give),
        `BadReply` for a 2xx answer that is not a JSON object. A write calls ``guard`` just
        before it is sent, and is not retried here (`dlsched.k8s.retry` retries it, guarded);
        a write answered 403 or 409 is passed to ``refused`` first."""
        write = method != "GET"
        if timeout is None:
            timeout = WRITE_TIMEOUT if write else READ_TIMEOUT
        headers: dict[str, str] = {
            **self.api.default_headers,
            "Accept": JSON,
            "Content-Type": content_type,
        }
        self.api.update_params_for_auth(headers, [], ["BearerToken"], path, method, body)
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        if write and self.guard is not None:  # last, so that little runs between it and the send
            self.guard()
        if self._pool is not None:
            answer = self._pool.urlopen(
                method,
                self._prefix + path,
                body=data,
                headers=headers,
                redirect=False,
                timeout=timeout,
                retries=False if write else None,  # a write is retried through the guard
            )
        else:
            answer = self.api.rest_client.pool_manager.request(
                method,
                self.api.configuration.host + path,
                body=data,
                headers=headers,
                timeout=timeout,
                retries=False if write else None,
            )
        if not 200 <= answer.status <= 299:
            error = client.ApiException(http_resp=answer)
            if write and answer.status in (403, 409) and self.refused is not None:
                self.refused(error, method, path)  # may raise NotLeading instead
            raise error
        return decode(answer.data, f"{method} {path}")


def decode(data: bytes, what: str) -> dict[str, Any]:
    """``data`` as a JSON object; `BadReply` naming ``what`` otherwise."""
    try:
        decoded = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise BadReply(f"{what}: the answer is not JSON ({data[:40]!r})") from None
    if not isinstance(decoded, dict):
        raise BadReply(f"{what}: the answer is a JSON {type(decoded).__name__}, not an object")
    return decoded


def items(reply: dict[str, Any], what: str) -> list[Any]:
    """A list reply's ``items`` (each object still to be checked by its parser); `BadReply`
    if the reply has no list of items or an item is not an object."""
    found = reply.get("items")
    if not isinstance(found, list):
        raise BadReply(f"list {what}: the answer has no items list")
    if not all(isinstance(item, dict) for item in found):
        raise BadReply(f"list {what}: an item of the answer is not an object")
    return found


def list_version(reply: dict[str, Any], what: str) -> str:
    """A list reply's ``metadata.resourceVersion``; `BadReply` if it has none."""
    meta = reply.get("metadata")
    version = meta.get("resourceVersion") if isinstance(meta, dict) else None
    if not isinstance(version, str) or not version:
        raise BadReply(f"list {what}: the answer has no metadata.resourceVersion")
    return version
