"""The reconcile loop: any dlsched scheduler sizing a Kubernetes cluster's training jobs.

Level-triggered and idempotent: every round reads which job kinds the cluster serves (their
CRDs, `dlsched.k8s.kinds`: DLJobs and opted-in elastic Kubeflow PyTorchJobs), lists the nodes
and the jobs, builds the `ClusterView` the simulator would give (`dlsched.k8s.view`), first
scales stale grants to zero (jobs on lost nodes), then asks the scheduler and enacts its
decision through the one executor (`dlsched.sim.executor`) with `K8sActuator`. Nothing is kept
that the cluster does not hold, so a restarted controller continues from the cluster as it is.
Watches on nodes and on each job kind (`dlsched.k8s.watches`) wake a round early when jobs
change or a node comes, goes or changes what it offers; rounds also run every ``interval_s``.

One writer: a Lease makes one controller act at a time, and every write of a round first asks
the lease's fence (`dlsched.k8s.lease`), which renews it during a long round and abandons the
round (`NotLeading`) once it cannot be renewed in time, or when the controller is stopping. A
write the server refuses (403: fenced, it does not hold the lease; or 409) makes it read the
lease again and stand down if another controller holds it (`NotLeading`, no retry).
Nothing from outside stops the loop: an object the controller cannot read is skipped (logged
once, a Warning Event ``Invalid`` on it, ``dlsched_errors{kind="invalid_object"}``), and a reply
that is not what the API serves, like any other failure, fails the round, retried with back-off.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from kubernetes import client

from dlsched.core import Allocation, JobRun, Status
from dlsched.k8s import events
from dlsched.k8s.actuator import K8sActuator
from dlsched.k8s.event_record import ControllerLog
from dlsched.k8s.kinds import KINDS, JobKind, ServedKind, discover
from dlsched.k8s.lease import LeaderLease, NotLeading
from dlsched.k8s.metrics import Metrics
from dlsched.k8s.objects import KIND, NodeInfo, ObjectError, TrainingJob, parse_node
from dlsched.k8s.pods import PodBinder, other_usage
from dlsched.k8s.rest import JsonApi, items, list_version
from dlsched.k8s.retry import short, with_retries
from dlsched.k8s.view import ClusterState, build_state
from dlsched.k8s.watches import NodeChanges, watch_loop
from dlsched.placement import make_placement
from dlsched.schedulers.base import Scheduler, check_scheduler
from dlsched.sim.executor import Executor

log = logging.getLogger(__name__)


@dataclass(slots=True)
class RoundReport:
    """What one reconcile round did.

    Attributes:
        decision_s: wall time of ``scheduler.decide``, seconds (0 if no decision was made).
        enactment_s: wall time to apply it through the API, seconds.
        reclaimed: stale grants scaled to zero before deciding.
        refused: job id → status of targets the executor could not enact.
        skipped: why no decision was made (``""`` if one was).
    """

    decision_s: float = 0.0
    enactment_s: float = 0.0
    reclaimed: int = 0
    refused: dict[int, Status] = field(default_factory=dict)
    skipped: str = ""


class Controller:
    """Schedules the training jobs of one namespace with ``scheduler``.

    Args:
        api: a configured `kubernetes.client.ApiClient`.
        scheduler: any registered non-oracle scheduler.
        namespace: where the jobs (and, with ``bind``, DLJobs' pods) are.
        kinds: job kinds to schedule (``dljob``, ``pytorchjob``), where their CRD is installed.
        interval_s: seconds between rounds when nothing changes.
        dry_run: log the changes a round would make; write nothing.
        bind: create each granted DLJob's pods and bind them to the placement's nodes.
        placement: placement policy name (``load_balance``, ``pack``, ``gang``).
        identity: this controller's name in the Lease (default: host name and pid).
        lease_duration_s: seconds another controller waits before taking over.
        max_events: Kubernetes Events recorded per round (one per change); 0: none.
        watch_timeout_s: seconds one watch request stays open before it is renewed.
        clock: Unix seconds (the view's ``now_s``).

    Raises:
        ValueError: an oracle scheduler, a non-positive interval, a negative ``max_events``,
            an unknown placement or job kind.
    """

    def __init__(
        self,
        api: client.ApiClient,
        scheduler: Scheduler,
        *,
        namespace: str = "default",
        kinds: Iterable[str] = tuple(KINDS),
        interval_s: float = 10.0,
        dry_run: bool = False,
        bind: bool = False,
        placement: str = "load_balance",
        identity: str | None = None,
        lease_name: str = "dlsched-controller",
        lease_duration_s: float = 15.0,
        watch_timeout_s: int = 60,
        metrics: Metrics | None = None,
        max_events: int = 100,
        clock: Callable[[], float] = time.time,
    ) -> None:
        check_scheduler(scheduler)
        if scheduler.is_oracle:
            raise ValueError(
                f"scheduler {scheduler.name!r} is an oracle; a cluster has no true speeds"
            )
        if max_events < 0:
            raise ValueError(f"--max-events must be >= 0, got {max_events}")
        if not interval_s > 0:
            raise ValueError(f"--interval must be > 0 seconds, got {interval_s}")
        kinds = list(kinds)
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown:
            raise ValueError(f"--kinds: unknown {', '.join(unknown)} (known: {', '.join(KINDS)})")
        self.wanted: list[JobKind] = [KINDS[k] for k in dict.fromkeys(kinds)]
        self.kinds: dict[str, ServedKind] = {}
        self.scheduler = scheduler
        self.namespace = namespace
        self.interval_s = interval_s
        self.dry_run = dry_run
        self.placement = make_placement(placement)
        identity = identity or f"{socket.gethostname()}-{os.getpid()}"
        api.user_agent = f"dlsched-controller/{identity}"
        self.api = api
        self.stopping = threading.Event()
        self.rest = JsonApi(api, guard=self._fence, refused=self._refused)
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.binder = PodBinder(self.rest, namespace) if bind else None
        self.metrics = metrics or Metrics()
        self.clock = clock
        self.watch_timeout_s = watch_timeout_s
        self.max_events = max_events
        self.lease = LeaderLease(
            client.CoordinationV1Api(api),
            namespace,
            lease_name,
            identity,
            max(lease_duration_s, 2 * interval_s),
            clock,
        )
        self.runs: dict[int, JobRun] = {}
        self.event_log: ControllerLog | None = None
        """Set to record the rounds' events (`dlsched.k8s.event_record`); None: not kept."""
        self._unreadable: set[str] = set()
        self.last_status: dict[int, Status] = {}
        self._bad: set[tuple[str, str]] = set()
        self.scheduler.reset()

    # ------------------------------------------------------------------ one round

    def _fence(self) -> None:
        """Before every write: `NotLeading` when stopping or no longer safely leading."""
        if self.stopping.is_set():
            raise NotLeading("stopping")
        self.lease.fence()

    def _refused(self, error: client.ApiException, method: str, path: str) -> None:
        """A write answered 403 or 409: `NotLeading` (stand down) unless the lease, read
        again, is still this controller's; otherwise the error is handled as before."""
        why = self.lease.recheck()
        if why:
            self.metrics.errors.labels("fenced").inc()
            raise NotLeading(f"{method} {path} refused ({error.status} {error.reason}); {why}")

    def _list(self, call: Callable[..., Any], what: str, *args: Any) -> dict[str, Any]:
        data: dict[str, Any] = with_retries(lambda: call(*args), f"list {what}")
        return data

    def _list_kind(self, kind: JobKind) -> dict[str, Any]:
        path = kind.path(self.namespace)
        if kind.label_selector:
            path += f"?labelSelector={quote(kind.label_selector)}"
        return self._list(self.rest.request, kind.plural, "GET", path)

    def observe(self) -> ClusterState:
        """Read which kinds are served, list nodes, jobs and pods, and build this round's state
        (no view if no node is Ready). Objects that cannot be read are skipped."""
        self.kinds = discover(self.api, self.wanted)
        nodes = items(self._list(self.rest.request, "nodes", "GET", "/api/v1/nodes"), "nodes")
        jobs: list[TrainingJob] = []
        unreadable: set[str] = set()
        for served in self.kinds.values():
            for obj in items(self._list_kind(served.kind), served.kind.plural):
                job = self._parse(served.kind.parse, obj)
                if isinstance(job, TrainingJob):
                    jobs.append(job)
                elif served.kind.kind == KIND and isinstance(job, str):
                    unreadable.add(job)
        pods = items(self._list(self.rest.request, "pods", "GET", "/api/v1/pods"), "pods")
        parsed_nodes = [self._parse(parse_node, obj) for obj in nodes]
        active = {(j.kind, j.namespace, j.name): j.uid for j in jobs if not j.done}
        if self.binder is not None:
            self.binder.load(pods)
            self._unreadable = unreadable
        return build_state(
            [n for n in parsed_nodes if isinstance(n, NodeInfo)],
            jobs,
            self.runs,
            now_s=self.clock(),
            interval_s=self.interval_s,
            last_status=self.last_status,
            other=other_usage(pods, lambda pod: _owned_by(pod, active)),
        )

    def _parse(self, parse: Callable[[Any], Any], obj: Any) -> Any:
        """``parse(obj)``, or, for an object that cannot be read, its name (``""`` if it has
        none) after reporting it."""
        try:
            return parse(obj)
        except Exception as exc:  # any object, any shape: skipped, never raised
            why = str(exc) if isinstance(exc, ObjectError) else f"{type(exc).__name__}: {exc}"
            ref = events.involved(obj, self.namespace)
            self._report_bad(obj, ref, why)
            return ref["name"] if ref else ""

    def _report_bad(self, obj: Any, ref: dict[str, Any] | None, why: str) -> None:
        """Count a malformed object; log it and record a Warning Event on it once per version."""
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        key = (str(meta.get("uid")), str(meta.get("resourceVersion")))
        self.metrics.errors.labels("invalid_object").inc()
        if key in self._bad:
            return
        self._bad.add(key)
        log.error("skipping %s", why)
        if ref is not None and self.lease.leading and not self.dry_run:
            namespace = ref.get("namespace", self.namespace)
            events.record(self.rest, namespace, ref, "Invalid", why[:1000], "Warning")

    def reconcile(self) -> RoundReport:
        """One round: observe, reclaim stale grants, decide, enact (with no usable node, only
        reclaim: nothing can start)."""
        report = RoundReport()
        if not self.dry_run and not self.lease.acquire():  # a dry run writes nothing
            self.kinds = discover(self.api, self.wanted)
            report.skipped = "another controller holds the lease"
            return report
        state = self.observe()
        actuator = K8sActuator(
            self.rest,
            state,
            self.metrics,
            self.kinds,
            dry_run=self.dry_run,
            binder=self.binder,
            max_events=self.max_events,
        )
        for job, why in state.stale:
            log.warning("%s %s: %s; scaling it to zero", job.kind, job.key, why)
            status = actuator.write(job, None, Allocation.EMPTY, "reclaim")
            if not status.ok:
                report.skipped = f"could not reclaim {job.kind} {job.key}: {status.reason}"
                log.warning("no decision: %s", report.skipped)
                return report
            report.reclaimed += 1
        if state.view is None:
            report.skipped = "no node is Ready"
            log.warning("no decision: %s", report.skipped)
            return report
        if self.binder is not None and not self.dry_run:
            self._sync_pods(state)
        view = state.view
        t0 = time.perf_counter()
        decision = self.scheduler.decide(view)
        t1 = time.perf_counter()
        executor = Executor(state.cluster, self.placement)
        if self.event_log is not None:
            self.event_log.round(state, executor)
        refused = executor.apply(
            decision,
            active=lambda job_id: self.runs.get(job_id) if job_id in state.jobs else None,
            running=list(view.running),
            preemptive=self.scheduler.preemptive,
            actuator=actuator,
            source=self.scheduler.name,
        )
        t2 = time.perf_counter()
        report.decision_s, report.enactment_s, report.refused = t1 - t0, t2 - t1, refused
        self.last_status = refused
        self.metrics.decisions.inc()
        self.metrics.decision_seconds.observe(report.decision_s)
        self.metrics.enactment_seconds.observe(report.enactment_s)
        for job_id, status in refused.items():
            self.metrics.errors.labels(status.code.value).inc()
            log.info("not enacted: %s", status.reason or job_id)
        running = sum(1 for job_id in state.jobs if self.runs[job_id].running)
        self.metrics.running_jobs.set(running)
        self.metrics.pending_jobs.set(len(state.jobs) - running)
        return report

    def _sync_pods(self, state: ClusterState) -> None:
        """Delete the pods of finished and deleted DLJobs and make every active DLJob's pods
        match its grant (after a crash or a failed round); a failure fails the round, so no
        new pod is bound beside pods that should have gone."""
        assert self.binder is not None
        active = {job.name: job.uid for job in state.jobs.values() if job.kind == KIND}
        self.binder.collect(active, self._unreadable)
        for job in state.jobs.values():
            if job.kind == KIND:  # a PyTorchJob's pods are its training operator's
                self.binder.sync(job, job.placement or {})

    # ------------------------------------------------------------------ the loop

    def run(self, stop: threading.Event) -> None:
        """Lead (or stand by) and reconcile until ``stop`` is set, then give the lease up.
        Nodes are watched from the start, each served job kind from the first round that finds
        it. No failure ends the loop: a failed round is retried with back-off (0.5 s doubling
        to 30 s)."""
        wake = threading.Event()
        watchers = {
            "Node": threading.Thread(
                target=self.watch_nodes, args=(stop, wake), name="node-watch", daemon=True
            )
        }
        watchers["Node"].start()
        stopper = threading.Thread(target=self._stop_on, args=(stop,), daemon=True)
        stopper.start()
        backoff = 0.0
        try:
            while not stop.is_set():
                try:
                    self.reconcile()
                    backoff = 0.0
                except NotLeading as exc:
                    self.metrics.errors.labels("not_leading").inc()
                    log.warning("round abandoned, nothing more written: %s", exc)
                except Exception as exc:  # whatever a round meets, the controller stays up
                    self.metrics.errors.labels("round").inc()
                    backoff = min(30.0, max(0.5, backoff * 2))
                    log.error("round failed (%s); next in %.1f s", short(exc), backoff)
                    stop.wait(backoff)
                    continue
                for name, served in self.kinds.items():
                    if name not in watchers:
                        watchers[name] = threading.Thread(
                            target=self.watch_jobs,
                            args=(served.kind, stop, wake),
                            name=f"{served.kind.plural}-watch",
                            daemon=True,
                        )
                        watchers[name].start()
                if wake.wait(self.interval_s):
                    stop.wait(min(0.2, self.interval_s))  # let a burst of changes settle
                wake.clear()
        finally:
            stop.set()
            self.stopping.set()
            self.lease.release()

    def _stop_on(self, stop: threading.Event) -> None:
        """Make writes of a round in progress stop as soon as ``stop`` is set."""
        stop.wait()
        self.stopping.set()

    def watch_jobs(self, kind: JobKind, stop: threading.Event, wake: threading.Event) -> None:
        """Wake rounds on every change of ``kind``'s jobs (`dlsched.k8s.watches`)."""
        watch_loop(
            kind.kind,
            lambda: list_version(self._list_kind(kind), kind.plural),
            self.custom.list_namespaced_custom_object,
            (kind.group, kind.version, self.namespace, kind.plural),
            {"label_selector": kind.label_selector} if kind.label_selector else {},
            lambda _event: True,
            stop=stop,
            wake=wake,
            metrics=self.metrics,
            timeout_s=self.watch_timeout_s,
        )

    def watch_nodes(self, stop: threading.Event, wake: threading.Event) -> None:
        """Wake rounds when a node comes or goes or its allocatable, readiness or cordon
        changes (not on heartbeats)."""
        changes = NodeChanges()

        def relist() -> str:
            nodes = self._list(self.rest.request, "nodes", "GET", "/api/v1/nodes")
            changes.reset(items(nodes, "nodes"))
            return list_version(nodes, "nodes")

        watch_loop(
            "Node",
            relist,
            self.core.list_node,
            (),
            {},
            changes,
            stop=stop,
            wake=wake,
            metrics=self.metrics,
            timeout_s=self.watch_timeout_s,
        )


def _owned_by(pod: dict[str, Any], active: dict[tuple[str, str, str], str]) -> bool:
    """Whether ``pod`` belongs to an active job (its grant is in the books), not leaving."""
    meta = pod.get("metadata")
    if not isinstance(meta, dict) or meta.get("deletionTimestamp"):
        return False
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            key = (str(ref.get("kind")), str(meta.get("namespace", "")), str(ref.get("name")))
            return active.get(key) == ref.get("uid")
    return False
