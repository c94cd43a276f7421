"""A stateful fake Kubernetes API server for tests: real HTTP on 127.0.0.1, a free port.

It serves what the dlsched controller and the official ``kubernetes`` client use:

- ``/api/v1/nodes``: list, get, create, merge-patch, delete, watch;
- ``/apis/apiextensions.k8s.io/v1/customresourcedefinitions``: CRDs; storing one serves its
  kind (first served version) as the real server does. By default the DLJob CRD of
  ``deploy/crd.yaml`` and a Kubeflow PyTorchJob CRD (``pytorchjob-crd.yaml``) are installed;
- ``/apis/GROUP/VERSION/namespaces/NS/PLURAL`` of an installed CRD: create, get, list (with
  ``resourceVersion`` and ``labelSelector``), ``?watch=true`` (JSON lines, one HTTP chunk
  per event as the real server streams them; ``labelSelector`` applies), replace,
  merge-patch, delete, and, where the CRD declares them, the ``/status`` subresource (then the
  main resource ignores status changes) and the ``/scale`` subresource: GET, PUT and
  merge-PATCH of an ``autoscaling/v1`` Scale of the CRD's ``specReplicasPath`` (and
  ``statusReplicasPath``), 409 Conflict on a stale ``metadata.resourceVersion``, 404 for a CRD
  without it;
- ``/api/v1/namespaces/NS/pods``: create, list (``labelSelector`` of ``k=v`` terms), get,
  delete, and the ``/binding`` subresource (sets ``spec.nodeName``);
- ``/api/v1/namespaces/NS/events``: create, list;
- ``/apis/coordination.k8s.io/v1/namespaces/NS/leases``: create, get, replace.

Every write bumps one global resource version. An update that names a
``metadata.resourceVersion`` other than the stored one gets 409 Conflict, as the real server's
optimistic concurrency. Faults are injected with `FakeApiServer.fail_next` (any status on the
next matching requests) and `FakeApiServer.expire_watches` (watches and lists from an old
resource version get 410 Gone). Errors are ``kind: Status`` bodies, as the real server's.
Subclasses (``chaos_server.py``) see every request first (`FakeApiServer.before`: it may
sleep, raise an `ApiError`, or a `RawReply` sent as is), every write admitted
(`FakeApiServer.accepted`) and every change of the store (`FakeApiServer.changed`), and
`FakeApiServer.drop_watches` cuts open watch streams.

Fencing (``fence=(namespace, lease name)``, off by default): a write of a controller (User-Agent
``dlsched-controller/IDENTITY``; its Lease writes aside) is admitted only if that Lease names
IDENTITY as holder and has not expired (``renewTime + leaseDurationSeconds`` by the server's
``clock``), checked under the store's lock with the write itself; any other is refused with 403
Forbidden, as ``deploy/fence-policy.yaml`` refuses it on a real cluster (which checks the
holder but not expiry; see ``dlsched.k8s.lease``). A controller paused between its own lease
check and its send therefore cannot write once another controller took the lease over.
"""

from __future__ import annotations

import copy
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import yaml

Obj = dict[str, Any]

HERE = Path(__file__).resolve().parent
DEFAULT_CRDS = (
    HERE.parents[1] / "src" / "dlsched" / "k8s" / "manifests" / "crd.yaml",
    HERE / "pytorchjob-crd.yaml",
)


@dataclass(frozen=True)
class _Kind:
    """How one resource is served: its apiVersion, kind, scope and subresources."""

    api_version: str
    kind: str
    namespaced: bool
    status: bool = False
    scale: tuple[str, str] | None = None  # (specReplicasPath, statusReplicasPath)


_BUILT_IN = {
    # plural -> how it is served
    "nodes": _Kind("v1", "Node", False),
    "pods": _Kind("v1", "Pod", True),
    "events": _Kind("v1", "Event", True),
    "leases": _Kind("coordination.k8s.io/v1", "Lease", True),
    "customresourcedefinitions": _Kind(
        "apiextensions.k8s.io/v1", "CustomResourceDefinition", False
    ),
}
_PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[a-z0-9.-]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>status|scale|binding))?$"
)
HISTORY = 10_000
"""Watch events kept; a watch from before the oldest kept one gets 410 Gone."""
CONTROLLER_AGENT = "dlsched-controller/"
"""User-Agent prefix of the controller's requests (the identity follows it)."""


class RawReply(Exception):
    """An answer sent as it is (an HTML page from a proxy, a JSON list, ...)."""

    def __init__(self, code: int, content_type: str, data: bytes) -> None:
        super().__init__(f"raw {code} {content_type}")
        self.code, self.content_type, self.data = code, content_type, data


class DroppedWatch(Exception):
    """A watch stream cut by `FakeApiServer.drop_watches`."""


class ApiError(Exception):
    """An error answer: HTTP code, Kubernetes reason and message."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def status(self) -> Obj:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (``null`` deletes a key)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    code: int
    left: int


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def unix_seconds(text: object) -> float:
    """Unix seconds of an RFC 3339 time (``renewTime``); 0 if it is not one."""
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


class FakeApiServer:
    """The store, the event history and the HTTP server around them.

    Use as a context manager (starts and stops the server); `url` is its address.

    Args:
        crds: CRDs installed at start.
        fence: ``(namespace, name)`` of the Lease that fences controllers' writes (module doc).
        clock: Unix seconds, against which the fence's Lease expires (tests pass a fake).

    Attributes:
        requests: ``(method, path)`` of every request served, in order.
    """

    def __init__(
        self,
        crds: tuple[Path | Obj, ...] = DEFAULT_CRDS,
        fence: tuple[str, str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.fence = fence
        self.clock = clock
        self._lock = threading.Condition()
        self._kinds: dict[str, _Kind] = dict(_BUILT_IN)
        self._objects: dict[tuple[str, str, str], Obj] = {}
        self._events: list[tuple[int, str, str, str, Obj]] = []  # rv, plural, ns, type, obj
        self._rv = 0
        self._oldest_rv = 0
        self._faults: list[_Fault] = []
        self._stopping = False
        self._watch_epoch = 0
        self.requests: list[tuple[str, str]] = []
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._http.daemon_threads = True
        self._thread: threading.Thread | None = None
        for crd in crds:
            self.put(
                "customresourcedefinitions",
                "",
                yaml.safe_load(crd.read_text()) if isinstance(crd, Path) else crd,
            )

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeApiServer:
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
        self._http.shutdown()
        self._http.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ test controls

    def fail_next(self, method: str, path_regex: str, code: int, times: int = 1) -> None:
        """Answer the next ``times`` requests of ``method`` whose path matches with ``code``."""
        with self._lock:
            self._faults.append(_Fault(method.upper(), re.compile(path_regex), code, times))

    def drop_watches(self) -> None:
        """Cut every open watch stream mid-way (no end chunk: the client sees a broken
        connection, as when a load balancer drops it)."""
        with self._lock:
            self._watch_epoch += 1
            self._lock.notify_all()

    def before(self, method: str, path: str, agent: str) -> None:
        """Called for every request before it is served (without the lock): subclasses inject
        faults here."""

    def changed(self, plural: str, old: Obj | None, new: Obj | None) -> None:
        """Called under the lock after every change of the store (None: created/deleted)."""

    def admit(self, method: str, path: str, agent: str) -> None:
        """Called under the lock before a write is served: with ``fence`` set, a controller's
        write is refused (403) unless it holds the fence's Lease unexpired (module doc)."""
        if self.fence is None or not agent.startswith(CONTROLLER_AGENT) or "/leases" in path:
            return
        identity = agent[len(CONTROLLER_AGENT) :]
        lease = self._objects.get(("leases", *self.fence))
        spec = (lease or {}).get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        left = unix_seconds(spec.get("renewTime")) + float(spec.get("leaseDurationSeconds") or 0)
        left -= self.clock()
        if holder != identity or left <= 0:
            raise ApiError(
                403,
                "Forbidden",
                f"{method} {path} denied: {identity!r} does not hold lease "
                f"{'/'.join(self.fence)} (holder {holder!r}, {left:+.2f} s left)",
            )

    def accepted(self, method: str, path: str, agent: str) -> None:
        """Called under the lock after a write was served (2xx)."""

    def expire_watches(self) -> None:
        """Forget the event history: open watches end with 410 Gone, as do new watches and
        lists from any older resource version (etcd compaction)."""
        with self._lock:
            self._rv += 1
            self._oldest_rv = self._rv
            self._events.clear()
            self._lock.notify_all()

    def count(self, method: str, fragment: str) -> int:
        """Requests served of ``method`` whose path contains ``fragment``."""
        return sum(1 for m, p in list(self.requests) if m == method and fragment in p)

    def objects(self, plural: str, namespace: str = "") -> list[Obj]:
        """Copies of the stored objects of one kind (all namespaces if none given)."""
        with self._lock:
            return [
                copy.deepcopy(o)
                for (p, ns, _), o in sorted(self._objects.items())
                if p == plural and (not namespace or ns == namespace)
            ]

    def get(self, plural: str, namespace: str, name: str) -> Obj:
        with self._lock:
            return copy.deepcopy(self._objects[(plural, namespace, name)])

    def put(self, plural: str, namespace: str, body: Obj) -> Obj:
        """Create or overwrite an object directly (as another client would)."""
        with self._lock:
            key = (plural, namespace, body["metadata"]["name"])
            kind = "MODIFIED" if key in self._objects else "ADDED"
            old = self._objects.get(key)
            obj = self._stamp(plural, namespace, copy.deepcopy(body), old)
            self._store(key, kind, obj)
            return copy.deepcopy(obj)

    def delete(self, plural: str, namespace: str, name: str) -> None:
        with self._lock:
            self._remove((plural, namespace, name))

    # ------------------------------------------------------------------ store

    def _kind(self, plural: str) -> _Kind:
        kind = self._kinds.get(plural)
        if kind is None:
            raise ApiError(404, "NotFound", f"the server could not find the resource {plural}")
        return kind

    def _stamp(self, plural: str, namespace: str, obj: Obj, old: Obj | None) -> Obj:
        kind = self._kind(plural)
        obj["apiVersion"], obj["kind"] = kind.api_version, kind.kind
        meta = obj.setdefault("metadata", {})
        if kind.namespaced:
            meta["namespace"] = namespace
        if old is None:
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = meta.get("creationTimestamp") or _now()
            meta["generation"] = 1
        else:
            for key in ("uid", "creationTimestamp", "generation"):
                meta[key] = old["metadata"][key]
            if obj.get("spec") != old.get("spec"):
                meta["generation"] += 1
        self._rv += 1
        meta["resourceVersion"] = str(self._rv)
        return obj

    def _store(self, key: tuple[str, str, str], kind: str, obj: Obj) -> None:
        old = self._objects.get(key)
        self._objects[key] = obj
        self.changed(key[0], old, obj)
        self._record(key[0], key[1], kind, obj)
        if key[0] == "customresourcedefinitions":
            self._serve_crd(obj)

    def _serve_crd(self, crd: Obj) -> None:
        """Serve the CRD's kind in its first served version, with its subresources."""
        spec = crd["spec"]
        version = next(v for v in spec["versions"] if v.get("served", True))
        sub = version.get("subresources") or {}
        scale = sub.get("scale")
        self._kinds[spec["names"]["plural"]] = _Kind(
            f"{spec['group']}/{version['name']}",
            spec["names"]["kind"],
            spec.get("scope", "Namespaced") == "Namespaced",
            status="status" in sub,
            scale=None
            if scale is None
            else (scale["specReplicasPath"], scale.get("statusReplicasPath", "")),
        )

    def _remove(self, key: tuple[str, str, str]) -> Obj:
        obj = self._objects.pop(key, None)
        if obj is None:
            raise ApiError(404, "NotFound", f'{key[0]} "{key[2]}" not found')
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        self._record(key[0], key[1], "DELETED", obj)
        self.changed(key[0], obj, None)
        return obj

    def _record(self, plural: str, ns: str, kind: str, obj: Obj) -> None:
        self._events.append((self._rv, plural, ns, kind, copy.deepcopy(obj)))
        if len(self._events) > HISTORY:
            dropped = self._events.pop(0)
            self._oldest_rv = dropped[0]
        self._lock.notify_all()

    # ------------------------------------------------------------------ request handling

    def handle(
        self, method: str, raw_path: str, body: Obj | None, agent: str = ""
    ) -> tuple[int, Obj]:
        """One request's status code and JSON answer (watches are served by `watch`)."""
        path = urlparse(raw_path).path
        self.before(method, path, agent)
        if path == "/version":
            return 200, {"major": "1", "minor": "30", "gitVersion": "v1.30.0-fake"}
        with self._lock:
            self.requests.append((method, path))
            for fault in self._faults:
                if fault.left > 0 and fault.method == method and fault.pattern.search(path):
                    fault.left -= 1
                    reason = {409: "Conflict", 410: "Expired", 429: "TooManyRequests"}
                    raise ApiError(
                        fault.code,
                        reason.get(fault.code, "InternalError"),
                        f"injected {fault.code} for {method} {path}",
                    )
        match = self._route(path)
        query = {k: v[-1] for k, v in parse_qs(urlparse(raw_path).query).items()}
        with self._lock:
            if method == "GET":
                return self._dispatch(method, path, match, query, body)
            self.admit(method, path, agent)  # under the lock: no change between check and write
            answer = self._dispatch(method, path, match, query, body)
            self.accepted(method, path, agent)
            return answer

    def _dispatch(
        self, method: str, path: str, match: re.Match[str], query: dict[str, str], body: Obj | None
    ) -> tuple[int, Obj]:
        """The answer to one request, under the lock."""
        plural, ns, name, sub = match["plural"], match["ns"] or "", match["name"], match["sub"]
        if name is None:
            if method == "GET":
                return 200, self._list(plural, ns, query)
            if method == "POST":
                return 201, self._create(plural, ns, body or {})
        elif sub is None:
            return self._item(method, (plural, ns, name), body)
        elif sub == "binding" and method == "POST" and plural == "pods":
            return 201, self._bind((plural, ns, name), body or {})
        elif sub == "status" and self._kinds[plural].status:
            return self._status(method, (plural, ns, name), body)
        elif sub == "scale" and self._kinds[plural].scale is not None:
            return self._scale(method, (plural, ns, name), body)
        elif sub is not None:
            raise ApiError(404, "NotFound", f"the server could not find {path}")
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on {path}")

    def _route(self, path: str) -> re.Match[str]:
        """The path's parts, if it names a served resource in its API group and version."""
        match = _PATH.match(path)
        with self._lock:
            kind = self._kinds.get(match["plural"]) if match else None
        if match is None or kind is None:
            raise ApiError(404, "NotFound", f"the server could not find {path}")
        group_version = "v1" if match["core"] else f"{match['group']}/{match['version']}"
        if group_version != kind.api_version:
            raise ApiError(404, "NotFound", f"the server could not find {path}")
        return match

    def _list(self, plural: str, ns: str, query: dict[str, str]) -> Obj:
        since = query.get("resourceVersion")
        if since and since != "0" and int(since) < self._oldest_rv:
            raise ApiError(410, "Expired", f"too old resource version: {since}")
        selector = _selector(query.get("labelSelector", ""))
        items = [
            copy.deepcopy(o)
            for (p, n, _), o in sorted(self._objects.items())
            if p == plural and (not ns or n == ns) and _matches(o, selector)
        ]
        kind = self._kind(plural)
        return {
            "apiVersion": kind.api_version,
            "kind": f"{kind.kind}List",
            "metadata": {"resourceVersion": str(self._rv)},
            "items": items,
        }

    def _create(self, plural: str, ns: str, body: Obj) -> Obj:
        meta = body.get("metadata") or {}
        name = meta.get("name")
        if not name and meta.get("generateName"):
            name = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
            meta["name"] = name
        if not name:
            raise ApiError(422, "Invalid", "metadata.name: Required value")
        key = (plural, ns, name)
        if key in self._objects:
            raise ApiError(409, "AlreadyExists", f'{plural} "{name}" already exists')
        meta.pop("resourceVersion", None)
        obj = self._stamp(plural, ns, body, None)
        self._store(key, "ADDED", obj)
        return copy.deepcopy(obj)

    def _existing(self, key: tuple[str, str, str]) -> Obj:
        obj = self._objects.get(key)
        if obj is None:
            raise ApiError(404, "NotFound", f'{key[0]} "{key[2]}" not found')
        return obj

    def _update(self, key: tuple[str, str, str], new: Obj, want_rv: str | None) -> Obj:
        old = self._existing(key)
        if want_rv and want_rv != old["metadata"]["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {key[0]} "{key[2]}": the object has been '
                "modified; please apply your changes to the latest version and try again",
            )
        obj = self._stamp(key[0], key[1], new, old)
        self._store(key, "MODIFIED", obj)
        return copy.deepcopy(obj)

    def _item(self, method: str, key: tuple[str, str, str], body: Obj | None) -> tuple[int, Obj]:
        if method == "GET":
            return 200, copy.deepcopy(self._existing(key))
        if method == "DELETE":
            return 200, self._remove(key)
        body = body or {}
        want = (body.get("metadata") or {}).get("resourceVersion")
        if method == "PUT":
            return 200, self._update(key, copy.deepcopy(body), want)
        if method == "PATCH":
            old = self._existing(key)
            new = merge_patch(old, body)
            if self._kinds[key[0]].status:  # status changes only through /status
                new["status"] = old.get("status")
            return 200, self._update(key, new, want)
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported")

    def _status(self, method: str, key: tuple[str, str, str], body: Obj | None) -> tuple[int, Obj]:
        old = self._existing(key)
        body = body or {}
        want = (body.get("metadata") or {}).get("resourceVersion")
        if method == "GET":
            return 200, copy.deepcopy(old)
        if method == "PUT":
            status = body.get("status")
        elif method == "PATCH":
            status = merge_patch(old.get("status") or {}, body.get("status") or {})
        else:
            raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on status")
        new = copy.deepcopy(old)
        new["status"] = status
        return 200, self._update(key, new, want)

    def _scale(self, method: str, key: tuple[str, str, str], body: Obj | None) -> tuple[int, Obj]:
        """The Scale of ``key`` (GET), or set its replicas (PUT, merge-PATCH) at the CRD's
        ``specReplicasPath``; a stale resourceVersion in the body is a 409."""
        paths = self._kinds[key[0]].scale
        assert paths is not None
        old = self._existing(key)
        body = body or {}
        if method == "GET":
            return 200, _scale(old, paths)
        if method == "PUT":
            scale = body
        elif method == "PATCH":
            scale = merge_patch(_scale(old, paths), body)
        else:
            raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on scale")
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise ApiError(422, "Invalid", f"spec.replicas: Invalid value: {replicas!r}")
        want = (scale.get("metadata") or {}).get("resourceVersion")
        new = copy.deepcopy(old)
        _set_path(new, paths[0], replicas)
        return 200, _scale(self._update(key, new, want), paths)

    def _bind(self, key: tuple[str, str, str], body: Obj) -> Obj:
        pod = self._existing(key)
        if pod.get("spec", {}).get("nodeName"):
            raise ApiError(409, "Conflict", f"pod {key[2]} is already assigned to a node")
        node = (body.get("target") or {}).get("name")
        if ("nodes", "", node) not in self._objects:
            raise ApiError(404, "NotFound", f'nodes "{node}" not found')
        new = copy.deepcopy(pod)
        new.setdefault("spec", {})["nodeName"] = node
        self._update(key, new, None)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}

    def watch(self, plural: str, ns: str, query: dict[str, str]) -> Iterator[Obj]:
        """Events after ``resourceVersion`` until ``timeoutSeconds``; an ERROR 410 event if that
        version is older than the kept history (or the history is expired while watching)."""
        since = int(query.get("resourceVersion") or self._rv)
        selector = _selector(query.get("labelSelector", ""))
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 30)
        expired_at = self._oldest_rv
        epoch = self._watch_epoch
        while True:
            with self._lock:
                if self._watch_epoch != epoch:
                    raise DroppedWatch(plural)
                if since < self._oldest_rv or self._oldest_rv != expired_at:
                    yield {
                        "type": "ERROR",
                        "object": ApiError(410, "Expired", "too old resource version").status(),
                    }
                    return
                batch = [
                    {"type": kind, "object": copy.deepcopy(obj)}
                    for rv, p, n, kind, obj in self._events
                    if rv > since
                    and p == plural
                    and (not ns or n == ns)
                    and _matches(obj, selector)
                ]
                if self._events:
                    since = max(since, self._events[-1][0])
                if not batch:
                    left = deadline - time.monotonic()
                    if left <= 0 or self._stopping:
                        return
                    self._lock.wait(min(left, 0.5))
                    continue
            yield from batch


def _get_path(obj: Obj, path: str) -> Any:
    """The value at a JSON path like ``.spec.workers`` (None if absent)."""
    value: Any = obj
    for part in path.strip(".").split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _set_path(obj: Obj, path: str, value: Any) -> None:
    parts = path.strip(".").split(".")
    for part in parts[:-1]:
        obj = obj.setdefault(part, {})
    obj[parts[-1]] = value


def _scale(obj: Obj, paths: tuple[str, str]) -> Obj:
    """The ``autoscaling/v1`` Scale of ``obj`` (replicas at the CRD's paths, 0 if absent)."""
    meta = obj["metadata"]
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace", ""),
            "resourceVersion": meta["resourceVersion"],
            "uid": meta["uid"],
        },
        "spec": {"replicas": _get_path(obj, paths[0]) or 0},
        "status": {"replicas": (_get_path(obj, paths[1]) if paths[1] else 0) or 0},
    }


def _selector(text: str) -> dict[str, str]:
    terms = [t for t in text.split(",") if t]
    return dict(t.split("=", 1) for t in terms)


def _matches(obj: Obj, selector: dict[str, str]) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def _handler(server: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # as Go's net/http: no 40 ms stalls on kept-alive links

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _send(self, code: int, body: Obj) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
                parsed = urlparse(self.path)
                query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
                if method == "GET" and query.get("watch") in ("true", "1"):
                    self._watch(parsed.path, query)
                    return
                agent = self.headers.get("User-Agent") or ""
                code, answer = server.handle(method, self.path, body, agent)
            except RawReply as raw:
                self.send_response(raw.code)
                self.send_header("Content-Type", raw.content_type)
                self.send_header("Content-Length", str(len(raw.data)))
                self.end_headers()
                self.wfile.write(raw.data)
                return
            except ApiError as exc:
                code, answer = exc.code, exc.status()
            except json.JSONDecodeError as exc:
                code, answer = 400, ApiError(400, "BadRequest", str(exc)).status()
            self._send(code, answer)

        def _watch(self, path: str, query: dict[str, str]) -> None:
            match = server._route(path)
            if match["name"] is not None:
                raise ApiError(404, "NotFound", f"cannot watch {path}")
            with server._lock:
                server.requests.append(("WATCH", path))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            # one chunk per event, as the real server streams them: a client reading the
            # stream gets each event when it is sent, not when the watch ends
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                for event in server.watch(match["plural"], match["ns"] or "", query):
                    data = json.dumps(event).encode() + b"\n"
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except DroppedWatch:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
            except (BrokenPipeError, ConnectionResetError, OSError):
                return

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_PUT(self) -> None:
            self._serve("PUT")

        def do_PATCH(self) -> None:
            self._serve("PATCH")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

    return Handler


@contextmanager
def running_server() -> Iterator[FakeApiServer]:
    """A started server, stopped on exit."""
    with FakeApiServer() as server:
        yield server
