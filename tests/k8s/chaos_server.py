"""The fake API server with injected faults and invariants checked at every change.

`ChaosApiServer` answers requests from controllers (User-Agent ``dlsched-controller/ID``) with
seeded faults: 500s, 409s on writes, stalls (the request is held before it is served, as an
overloaded server queues it), off-spec replies to lists (an HTML page, a JSON list, a list
without ``items``); `FakeApiServer.drop_watches` cuts watches. Under the store's lock it checks,
at every write and every change:

- writers: the server fences controllers' writes (`FakeApiServer.admit`: a write of a
  controller that does not hold the lease unexpired by the server's clock is refused, 403), and
  counts, separately from that check, every write it accepted (lease writes aside):
  ``writes_past_lease`` those accepted from a controller that did not hold the lease unexpired
  at that moment, ``writes_refused`` those the fence refused; ``max_writers`` is the most
  controllers whose writes were accepted within one lease term (a term: one holder from one
  acquireTime). With ``fence=False`` nothing is refused (what a cluster without the admission
  policy does) and the counts show what got through;
- over-commit: on every node, what the placement annotations of unfinished DLJobs and the pods
  the controller does not manage take, and separately what all bound unfinished pods take, stay
  within its allocatable;
- finished jobs are never regrown (a job's grant never grows after it finished).

Orphan and duplicate pods are sampled (`ChaosApiServer.sample`): ``orphan_pods`` are pods still
running for a finished or deleted job at the final sample (never cleaned up), and
``orphan_linger_max_s`` the longest such a pod was seen before it went (while no controller
leads, during a pause, nobody deletes it); ``duplicate_pods`` counts a job's role holding more
pods than its grant for longer than ``grace_s``.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from dlsched.k8s.objects import ObjectError, parse_dljob, parse_node
from dlsched.k8s.pods import JOB_LABEL, MANAGED_LABEL, ROLE_LABEL, pod_requests
from tests.k8s.apiserver import (
    CONTROLLER_AGENT,
    ApiError,
    FakeApiServer,
    Obj,
    RawReply,
    unix_seconds,
)

LEASE = ("leases", "default", "dlsched-controller")
EPS = 1e-6
BAD_REPLIES = (
    RawReply(200, "text/html", b"<html><body>502 Bad Gateway</body></html>"),
    RawReply(200, "application/json", b'[{"kind": "DLJob"}]'),
    RawReply(200, "application/json", b'{"kind": "List", "metadata": {}}'),
    RawReply(200, "application/json", b'{"items": 5, "metadata": {"resourceVersion": "1"}}'),
    RawReply(200, "application/json", b'{"items": [1, "x", null], "metadata": {}}'),
    RawReply(200, "application/json", b'{"items": [{"metadata": '),
)


@dataclass
class Rates:
    """Chances per request of a controller (writes only for 409)."""

    error_500: float = 0.0
    conflict_409: float = 0.0
    stall: float = 0.0
    stall_s: tuple[float, float] = (0.2, 0.8)
    bad_reply: float = 0.0


@dataclass
class Tally:
    """What the checks found."""

    writes: int = 0
    writes_past_lease: int = 0
    writes_refused: int = 0
    overcommit: int = 0
    regrown: int = 0
    orphan_pods: int = 0
    orphan_linger_max_s: float = 0.0
    duplicate_pods: int = 0
    injected: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    writers_by_term: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def max_writers(self) -> int:
        return max((len(v) for v in self.writers_by_term.values()), default=0)


class ChaosApiServer(FakeApiServer):
    """A `FakeApiServer` with seeded faults and invariant checks (see the module doc);
    ``fence``: refuse writes of controllers that do not hold the lease."""

    def __init__(self, seed: int, grace_s: float = 4.0, fence: bool = True) -> None:
        self.rates = Rates()
        self.tally = Tally()
        self.grace_s = grace_s
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        self._allocatable: dict[str, tuple[float, float, float]] = {}
        self._grant_use: dict[tuple[str, str], dict[str, list[float]]] = {}
        self._pod_use: dict[tuple[str, str], dict[str, list[float]]] = {}
        self._grant_total: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
        self._pod_total: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
        self.granted: set[str] = set()
        self.finished_at: dict[str, float] = {}
        self._suspect: dict[tuple[str, ...], float] = {}
        self._counted: set[tuple[str, ...]] = set()
        super().__init__(fence=LEASE[1:] if fence else None)
        self._http.handle_error = lambda *_: None  # type: ignore[method-assign]  # resets

    # ------------------------------------------------------------------ faults

    def before(self, method: str, path: str, agent: str) -> None:
        if not agent.startswith(CONTROLLER_AGENT):
            return
        write = method != "GET"
        with self._rng_lock:
            r = self.rates
            stall = self._rng.random() < r.stall
            stall_s = self._rng.uniform(*r.stall_s)
            fail = self._rng.random() < r.error_500
            conflict = write and method in ("PUT", "PATCH") and self._rng.random() < r.conflict_409
            listing = method == "GET" and path.rsplit("/", 1)[-1] in ("nodes", "pods", "dljobs")
            bad = listing and self._rng.random() < r.bad_reply
            bad_reply = self._rng.choice(BAD_REPLIES)
        if stall:
            self.tally.injected["stall"] += 1
            time.sleep(stall_s)
        if fail:
            self.tally.injected["500"] += 1
            raise ApiError(500, "InternalError", f"injected 500 for {method} {path}")
        if conflict:
            self.tally.injected["409"] += 1
            raise ApiError(409, "Conflict", f"injected 409 for {method} {path}")
        if bad:
            self.tally.injected["bad_reply"] += 1
            raise bad_reply

    def admit(self, method: str, path: str, agent: str) -> None:
        try:
            super().admit(method, path, agent)
        except ApiError as exc:
            self.tally.writes_refused += 1
            self.tally.notes.append(f"refused: {exc.message}")
            raise

    def accepted(self, method: str, path: str, agent: str) -> None:
        if agent.startswith(CONTROLLER_AGENT) and "/leases" not in path:
            self._check_writer(agent[len(CONTROLLER_AGENT) :], method, path)

    def _check_writer(self, identity: str, method: str, path: str) -> None:
        """Count an accepted write, and whether its writer held the lease (under the lock)."""
        self.tally.writes += 1
        lease = self._objects.get(LEASE)
        spec = (lease or {}).get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        valid = unix_seconds(spec.get("renewTime")) + float(spec.get("leaseDurationSeconds") or 0)
        term = (holder, str(spec.get("acquireTime")))
        if holder != identity or self.clock() > valid:
            self.tally.writes_past_lease += 1
            self.tally.notes.append(
                f"{identity} wrote {method} {path} while the lease was {holder!r} "
                f"(valid {valid - self.clock():+.2f} s)"
            )
            term = (holder or "(none)", str(spec.get("acquireTime")))
        self.tally.writers_by_term.setdefault(term, set()).add(identity)

    # ------------------------------------------------------------------ invariants

    def changed(self, plural: str, old: Obj | None, new: Obj | None) -> None:
        if plural == "nodes":
            name = (new or old or {}).get("metadata", {}).get("name", "")
            if new is None:
                self._allocatable.pop(name, None)
            else:
                try:
                    self._allocatable[name] = parse_node(new).capacity.as_tuple()
                except ObjectError:
                    self._allocatable.pop(name, None)
            return
        if plural == "dljobs":
            self._job_changed(old, new)
        elif plural == "pods":
            self._pod_changed(old, new)

    def _job_changed(self, old: Obj | None, new: Obj | None) -> None:
        name = (new or old or {}).get("metadata", {}).get("name", "")
        before, after = _job(old), _job(new)
        if after is not None and after.workers > 0:
            self.granted.add(name)
        if after is not None and after.done:
            self.finished_at.setdefault(name, time.time())
            grew = before is not None and after.workers + after.ps > before.workers + before.ps
            if grew:
                self.tally.regrown += 1
                self.tally.notes.append(f"finished job {name} regrown")
        if new is None:
            self.finished_at.setdefault(name, time.time())
        use: dict[str, list[float]] = {}
        if after is not None and not after.done:
            for role, counts in (after.placement or {}).items():
                demand = after.spec.worker_demand if role == "workers" else after.spec.ps_demand
                for node, n in counts.items():
                    row = use.setdefault(node, [0.0, 0.0, 0.0])
                    for i, x in enumerate(demand.as_tuple()):
                        row[i] += x * n
        self._swap(self._grant_use, self._grant_total, ("job", name), use)

    def _pod_changed(self, old: Obj | None, new: Obj | None) -> None:
        pod = new or old or {}
        key = ("pod", pod.get("metadata", {}).get("name", ""))
        use: dict[str, list[float]] = {}
        node = ((new or {}).get("spec") or {}).get("nodeName")
        phase = ((new or {}).get("status") or {}).get("phase", "")
        if new is not None and node and phase not in ("Succeeded", "Failed"):
            use[node] = list(pod_requests(new).as_tuple())
        self._swap(self._pod_use, self._pod_total, key, use)
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if labels.get(MANAGED_LABEL) != "dlsched":  # other workloads: the controller's to avoid
            self._swap(self._grant_use, self._grant_total, key, use)

    def _swap(
        self,
        ledger: dict[tuple[str, str], dict[str, list[float]]],
        total: dict[str, list[float]],
        key: tuple[str, str],
        use: dict[str, list[float]],
    ) -> None:
        for node, row in ledger.pop(key, {}).items():
            for i, x in enumerate(row):
                total[node][i] -= x
        for node, row in use.items():
            for i, x in enumerate(row):
                total[node][i] += x
        if use:
            ledger[key] = use
        for node in use:
            cap = self._allocatable.get(node)
            if cap is not None and any(u > c + EPS for u, c in zip(total[node], cap, strict=True)):
                self.tally.overcommit += 1
                which = "grants" if total is self._grant_total else "pods"
                self.tally.notes.append(f"node {node} over-committed by {which}: {total[node]}")

    def sample(self, final: bool = False) -> None:
        """Note how long pods of finished or deleted jobs stay (``final``: count those left),
        and count pods beyond a job's grant once they have lasted ``grace_s``."""
        now = time.time()
        seen: set[tuple[str, ...]] = set()
        with self._lock:
            jobs = {k[2]: _job(o) for k, o in self._objects.items() if k[0] == "dljobs"}
            have: dict[tuple[str, str], int] = defaultdict(int)
            for (plural, _, name), pod in self._objects.items():
                if plural != "pods":
                    continue
                labels = pod["metadata"].get("labels") or {}
                if labels.get(MANAGED_LABEL) != "dlsched":
                    continue
                if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                    continue
                job = jobs.get(labels.get(JOB_LABEL, ""))
                if job is None or job.done:
                    seen.add(("orphan", name))
                elif (pod.get("spec") or {}).get("nodeName"):
                    have[(job.name, labels.get(ROLE_LABEL, ""))] += 1
            for (name, role), n in have.items():
                job = jobs[name]
                assert job is not None
                counts = (job.placement or {}).get("workers" if role == "worker" else "ps")
                want = sum((counts or {}).values())
                if n > want:
                    seen.add(("duplicate", name, role))
        for key in seen:
            first = self._suspect.setdefault(key, now)
            if key[0] == "orphan":
                linger = max(self.tally.orphan_linger_max_s, now - first)
                self.tally.orphan_linger_max_s = linger
                if final:
                    self.tally.orphan_pods += 1
                    self.tally.notes.append(f"{key} left at the end")
            elif now - first > self.grace_s and key not in self._counted:
                self._counted.add(key)
                self.tally.duplicate_pods += 1
                self.tally.notes.append(f"{key} lasted {now - first:.1f} s")
        for key in list(self._suspect):
            if key not in seen:
                first = self._suspect.pop(key)
                if now - first > self.grace_s:
                    self.tally.notes.append(f"{key} went after {now - first:.1f} s")

    def lease(self) -> dict[str, Any]:
        with self._lock:
            return json.loads(json.dumps(self._objects.get(LEASE) or {}))


def _job(obj: Obj | None) -> Any:
    if obj is None:
        return None
    try:
        return parse_dljob(obj)
    except ObjectError:
        return None
