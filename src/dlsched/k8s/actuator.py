"""`K8sActuator`: the shared executor's `Actuator` on Kubernetes.

Each validated change becomes ONE merge patch of the DLJob: ``spec.workers``, ``spec.ps`` and
the placement annotation together, guarded by the ``metadata.resourceVersion`` the round read.
One write makes the gang all-or-nothing (workers and parameter servers change together or not
at all), and the annotation is what a restarted controller rebuilds its books from. (The CRD's
``/scale`` subresource carries one count, workers, for ``kubectl scale``; a PS job's change
through it would take two writes.) Preemption is a scale to zero. On 409 Conflict the actuator
reads the job again and retries only if what it granted is unchanged (someone else wrote status
or labels); otherwise it refuses and the executor gives the old allocation back. 5xx and 429 are
retried with back-off. Each change also gets a Kubernetes Event, up to ``max_events`` per round
(a second request per change: a round that starts 1,000 jobs would otherwise double its
requests); further changes are only logged and counted (``dlsched_events_skipped``), as
client-go's event recorder drops an event burst. With ``--bind`` the job's pods follow
(`dlsched.k8s.pods`). With ``--dry-run`` nothing is written: intended changes are logged.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from typing import Any

from kubernetes import client

from dlsched.core import Allocation, JobRun, Status
from dlsched.k8s.metrics import Metrics
from dlsched.k8s.objects import (
    GROUP,
    KIND,
    PLACEMENT_ANNOTATION,
    PLURAL,
    VERSION,
    DLJob,
    parse_dljob,
)
from dlsched.k8s.pods import PodBinder, check_template
from dlsched.k8s.retry import with_retries
from dlsched.k8s.view import ClusterState, allocation_to_placement

log = logging.getLogger(__name__)

COMPONENT = "dlsched-controller"
CONFLICT_RETRIES = 3
"""Re-reads after a 409 before the change is refused."""


def action_of(old: Allocation, new: Allocation) -> str:
    """``start``, ``preempt``, ``grow`` or ``shrink`` (an event's reason, a metric's label)."""
    if old.is_empty:
        return "start"
    if new.is_empty:
        return "preempt"
    if new.num_workers + new.num_ps >= old.num_workers + old.num_ps:
        return "grow"
    return "shrink"


class K8sActuator:
    """Writes each change to its DLJob (and pods with ``binder``).

    Args:
        custom: the CustomObjects API.
        core: the CoreV1 API (events).
        state: this round's state (the DLJobs the books are based on).
        metrics: where actions and errors are counted.
        dry_run: log intended changes, write nothing.
        binder: create and bind pods by placement (``--bind``), or None.
        max_events: Events recorded this round; later changes are logged and counted only.
    """

    def __init__(
        self,
        custom: client.CustomObjectsApi,
        core: client.CoreV1Api,
        state: ClusterState,
        metrics: Metrics,
        *,
        dry_run: bool = False,
        binder: PodBinder | None = None,
        max_events: int = 100,
    ) -> None:
        self.custom = custom
        self.core = core
        self.state = state
        self.metrics = metrics
        self.dry_run = dry_run
        self.binder = binder
        self.events_left = max_events

    def change(self, run: JobRun, old: Allocation, new: Allocation) -> Status:
        """Patch the job to hold ``new``; a non-ok status refuses (nothing written)."""
        job = self.state.jobs[run.job_id]
        action = action_of(old, new)
        return self.write(job, run, new, action)

    def write(self, job: DLJob, run: JobRun | None, new: Allocation, action: str) -> Status:
        """Grant ``new`` to ``job`` (``action`` names why); set ``run.allocation`` on success."""
        placement = allocation_to_placement(new, self.state.nodes)
        before, after = f"{job.workers}w/{job.ps}ps", f"{new.num_workers}w/{new.num_ps}ps"
        what = f"{action} DLJob {job.key}: {before} -> {after}"
        if self.binder is not None and not new.is_empty:
            why = check_template(job)
            if why:
                self.metrics.errors.labels("invalid").inc()
                return Status.invalid(why)
        if self.dry_run:
            log.info("dry-run: would %s on %s", what, _nodes(placement))
            self.metrics.scale_actions.labels(action, "true").inc()
            if run is not None:
                run.allocation = new
            return Status.success()
        try:
            self._patch(job, new, placement)
        except client.ApiException as exc:
            self.metrics.errors.labels(f"patch_{exc.status}").inc()
            log.warning("could not %s: %s %s", what, exc.status, exc.reason)
            return Status.unschedulable(f"DLJob {job.key}: {exc.status} {exc.reason}")
        self.metrics.scale_actions.labels(action, "false").inc()
        log.info("%s on %s", what, _nodes(placement))
        job.workers, job.ps = new.num_workers, new.num_ps
        job.placement = placement
        if run is not None:
            run.allocation = new
        if self.binder is not None:
            try:
                self.binder.sync(job, placement)
            except client.ApiException as exc:  # the next round's pass makes the pods again
                self.metrics.errors.labels(f"pods_{exc.status}").inc()
                log.warning("pods of DLJob %s: %s %s", job.key, exc.status, exc.reason)
        self.event(job, action.capitalize(), f"{what} on {_nodes(placement)}")
        return Status.success()

    def _patch(self, job: DLJob, new: Allocation, placement: dict[str, dict[str, int]]) -> None:
        granted = (job.workers, job.ps, job.placement)
        rv = job.resource_version
        for attempt in range(CONFLICT_RETRIES + 1):
            body = {
                "metadata": {
                    "resourceVersion": rv,
                    "annotations": {
                        PLACEMENT_ANNOTATION: None if new.is_empty else json.dumps(placement)
                    },
                },
                "spec": {"workers": new.num_workers, "ps": new.num_ps},
            }
            try:
                raw: Any = with_retries(
                    lambda body=body: self.custom.patch_namespaced_custom_object(  # type: ignore[misc]
                        GROUP,
                        VERSION,
                        job.namespace,
                        PLURAL,
                        job.name,
                        body,
                        _content_type="application/merge-patch+json",
                        _preload_content=False,
                    ),
                    f"patch DLJob {job.key}",
                )
                job.resource_version = json.loads(raw.data)["metadata"]["resourceVersion"]
                return
            except client.ApiException as exc:
                if exc.status != 409 or attempt == CONFLICT_RETRIES:
                    raise
                self.metrics.errors.labels("conflict").inc()
                latest = self._latest(job)
                if latest is None or (latest.workers, latest.ps, latest.placement) != granted:
                    raise  # someone else changed the grant: the next round starts from it
                rv = latest.resource_version
                log.info("DLJob %s changed meanwhile (status only): retrying the patch", job.key)

    def _latest(self, job: DLJob) -> DLJob | None:
        try:
            obj: Any = with_retries(
                lambda: self.custom.get_namespaced_custom_object(
                    GROUP, VERSION, job.namespace, PLURAL, job.name
                ),
                f"get DLJob {job.key}",
            )
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return parse_dljob(obj)

    def event(self, job: DLJob, reason: str, message: str, kind: str = "Normal") -> None:
        """Record a Kubernetes Event on ``job`` (best effort: failures are logged)."""
        if self.dry_run:
            return
        if self.events_left <= 0:
            self.metrics.events_skipped.inc()
            return
        self.events_left -= 1
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        body: Any = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{job.name}.", "namespace": job.namespace},
            "involvedObject": {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": KIND,
                "name": job.name,
                "namespace": job.namespace,
                "uid": job.uid,
            },
            "reason": reason,
            "message": message,
            "type": kind,
            "source": {"component": COMPONENT},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            raw: Any = self.core.create_namespaced_event(
                job.namespace, body, _preload_content=False
            )
            raw.drain_conn()  # the answer read: only then does the connection go back to the pool
        except (client.ApiException, OSError) as exc:
            log.warning("event on DLJob %s not recorded: %s", job.key, exc)


def _nodes(placement: dict[str, dict[str, int]]) -> str:
    parts = [
        f"{node}:{n}{'w' if role == 'workers' else 'ps'}"
        for role, counts in placement.items()
        for node, n in counts.items()
    ]
    return ",".join(parts) or "no nodes"
