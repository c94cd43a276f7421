"""JSON requests by path through the official client's connection pool and credentials.

The controller's writes (a patch and a ``/scale`` update per change, up to thousands in the
round that starts a backlog) go through `JsonApi` rather than the generated API methods: it
uses the same `kubernetes.client.ApiClient` (its configured host, TLS, proxy, pooled
connections and, through ``update_params_for_auth``, its bearer token and refresh hook) but
skips the generated layer's per-call argument validation and body sanitizing, which cost about
as much CPU as the HTTP exchange itself (see RESULTS.md, "Kubernetes controller ... /scale").
Errors are the client's `ApiException`, so retries and conflict handling read them as usual.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client
from urllib3 import HTTPConnectionPool, ProxyManager
from urllib3.util import parse_url

MERGE_PATCH = "application/merge-patch+json"
JSON = "application/json"


class JsonApi:
    """Sends JSON to API paths (``/apis/GROUP/VERSION/namespaces/NS/PLURAL/NAME[/scale]``)."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        host = parse_url(api.configuration.host)
        self._prefix = (host.path or "").rstrip("/")
        manager = api.rest_client.pool_manager
        # Straight to the host's connection pool (what PoolManager.request looks up per call);
        # through a proxy, the manager decides how each request goes.
        self._pool: HTTPConnectionPool | None = None
        if not isinstance(manager, ProxyManager) and host.host:
            self._pool = manager.connection_from_host(host.host, port=host.port, scheme=host.scheme)

    def request(
        self, method: str, path: str, body: object = None, content_type: str = JSON
    ) -> dict[str, Any]:
        """The decoded JSON answer of ``method path`` with ``body``; `client.ApiException`
        for any answer outside 2xx (its status, reason and body as the generated calls give)."""
        headers: dict[str, str] = {
            **self.api.default_headers,
            "Accept": JSON,
            "Content-Type": content_type,
        }
        self.api.update_params_for_auth(headers, [], ["BearerToken"], path, method, body)
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        if self._pool is not None:
            answer = self._pool.urlopen(
                method, self._prefix + path, body=data, headers=headers, redirect=False
            )
        else:
            answer = self.api.rest_client.pool_manager.request(
                method, self.api.configuration.host + path, body=data, headers=headers
            )
        if not 200 <= answer.status <= 299:
            raise client.ApiException(http_resp=answer)
        decoded: dict[str, Any] = json.loads(answer.data)
        return decoded
