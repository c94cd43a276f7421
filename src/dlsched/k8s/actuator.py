"""`K8sActuator`: the shared executor's `Actuator` on Kubernetes.

Each validated change is written with the ``metadata.resourceVersion`` the round read as a
precondition:

- an elastic resize (a running job keeps running with another worker count and the same PS)
  goes through the kind's ``/scale`` subresource (an ``autoscaling/v1`` Scale update, as
  ``kubectl scale`` and the HorizontalPodAutoscaler resize a running workload) when its CRD
  declares one (`dlsched.k8s.kinds`), after one merge patch of the ``dlsched.io/placement``
  annotation (where the granted tasks go);
- a gang starting or being preempted (to zero), a change of a DLJob's parameter servers, and
  any change of a kind without ``/scale`` is ONE merge patch of workers, PS and placement.

Why not ``/scale`` for everything: it carries one count (``specReplicasPath``: a DLJob's
workers) and nothing else. Starting or stopping a PS gang through it takes two writes, between
which the job's operator would see half a gang (PS without workers, or workers without PS) and
start pods for it, and the issue asks for gang jobs all-or-nothing; one merge patch is atomic
and is one request instead of two (the round that starts 1,000 jobs: RESULTS.md). A resize
does need two writes (the placement moves with the count): placement first; if the scale then
fails, the annotation is put back (a patch without a version guard: the annotation is the
controller's alone). Should that fail too, the job is left with counts and placement
disagreeing, and the next round treats it as stale and scales it to zero: the books never count
a grant the cluster does not show (`dlsched.k8s.view`).

On 409 Conflict the actuator reads the job again and retries only if it is still active and
what it granted is unchanged (someone else wrote status or labels); a job that finished
meanwhile, or whose grant changed, is refused and the executor gives the old allocation back.
A change that would put a new task on a cordoned node is refused too. 5xx and 429 are retried
with back-off. Each change also gets a Kubernetes Event, up to ``max_events`` per round (one
more request per change: a round that starts 1,000 jobs would otherwise add 1,000 requests);
further changes are only logged and counted (``dlsched_events_skipped``), as client-go's event
recorder drops an event burst. With ``--bind`` a DLJob's pods follow (`dlsched.k8s.pods`).
With ``--dry-run`` nothing is written: intended changes are logged.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from kubernetes import client
from urllib3.exceptions import HTTPError

from dlsched.core import Allocation, JobRun, Status
from dlsched.k8s import events
from dlsched.k8s.kinds import ServedKind
from dlsched.k8s.metrics import Metrics
from dlsched.k8s.objects import KIND, PLACEMENT_ANNOTATION, TrainingJob
from dlsched.k8s.pods import PodBinder, check_template
from dlsched.k8s.rest import MERGE_PATCH, JsonApi
from dlsched.k8s.retry import with_retries
from dlsched.k8s.view import ClusterState, allocation_to_placement

log = logging.getLogger(__name__)

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
    """Writes each change to its job (and a DLJob's pods with ``binder``).

    Args:
        rest: JSON requests through the configured client.
        state: this round's state (the jobs the books are based on).
        metrics: where actions and errors are counted.
        kinds: kind name → how the cluster serves it (``/scale`` or not).
        dry_run: log intended changes, write nothing.
        binder: create and bind DLJob pods by placement (``--bind``), or None.
        max_events: Events recorded this round; later changes are logged and counted only.
    """

    def __init__(
        self,
        rest: JsonApi,
        state: ClusterState,
        metrics: Metrics,
        kinds: dict[str, ServedKind],
        *,
        dry_run: bool = False,
        binder: PodBinder | None = None,
        max_events: int = 100,
    ) -> None:
        self.rest = rest
        self.state = state
        self.metrics = metrics
        self.kinds = kinds
        self.dry_run = dry_run
        self.binder = binder
        self.events_left = max_events

    def change(self, run: JobRun, old: Allocation, new: Allocation) -> Status:
        """Write ``new`` to the job; a non-ok status refuses (the cluster keeps ``old``)."""
        job = self.state.jobs[run.job_id]
        action = action_of(old, new)
        return self.write(job, run, new, action)

    def write(self, job: TrainingJob, run: JobRun | None, new: Allocation, action: str) -> Status:
        """Grant ``new`` to ``job`` (``action`` names why); set ``run.allocation`` on success."""
        placement = allocation_to_placement(new, self.state.nodes)
        before, after = f"{job.workers}w/{job.ps}ps", f"{new.num_workers}w/{new.num_ps}ps"
        what = f"{action} {job.kind} {job.key}: {before} -> {after}"
        binds = self.binder is not None and job.kind == KIND
        added = _added_on(job.placement, placement, self.state.cordoned)
        if added:
            return Status.unschedulable(f"{job.kind} {job.key}: node {added} is cordoned")
        if binds and not new.is_empty:
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
            self._enact(job, new, placement)
        except client.ApiException as exc:
            self.metrics.errors.labels(f"patch_{exc.status}").inc()
            log.warning("could not %s: %s %s", what, exc.status, exc.reason)
            return Status.unschedulable(f"{job.kind} {job.key}: {exc.status} {exc.reason}")
        self.metrics.scale_actions.labels(action, "false").inc()
        log.info("%s on %s", what, _nodes(placement))
        job.workers, job.ps = new.num_workers, new.num_ps
        job.placement = placement
        if run is not None:
            run.allocation = new
        if binds:  # a failure ends the round: the next one's pass makes the pods first
            assert self.binder is not None
            self.binder.sync(job, placement)
        self.event(job, action.capitalize(), f"{what} on {_nodes(placement)}")
        return Status.success()

    # ------------------------------------------------------------------ the writes

    def _enact(
        self, job: TrainingJob, new: Allocation, placement: dict[str, dict[str, int]]
    ) -> None:
        """A running job's worker-count resize: placement by merge patch, then workers by
        ``/scale`` (the patch undone if the scale fails). Otherwise one merge patch of all."""
        served = self.kinds[job.kind]
        kind = served.kind
        note, old_note = _note(placement), _note(job.placement)
        spec: dict[str, Any] = {}
        ps_change = kind.ps_path is not None and new.num_ps != job.ps
        if kind.ps_path is not None and ps_change:
            _put(spec, kind.ps_path[1:], new.num_ps)
        scale = new.num_workers != job.workers
        resize = job.workers > 0 and new.num_workers > 0 and not ps_change
        if scale and not (resize and served.scale):  # the whole gang in one write
            _put(spec, kind.workers_path[1:], new.num_workers)
            scale = False
        patched = note != old_note or bool(spec)
        if patched:
            body: dict[str, Any] = {"metadata": {"annotations": {PLACEMENT_ANNOTATION: note}}}
            if spec:
                body["spec"] = spec
            self._patch(job, body)
        if not scale:
            return
        try:
            self._scale(job, new.num_workers, placement)
        except (client.ApiException, HTTPError, OSError):
            if patched:
                self._undo(job, {"metadata": {"annotations": {PLACEMENT_ANNOTATION: old_note}}})
            raise

    def _patch(self, job: TrainingJob, body: dict[str, Any]) -> None:
        """Merge-patch ``job`` from the version the round read; on 409 retry from the latest
        version only while the grant there is still the one read."""
        granted = (job.workers, job.ps, job.placement)
        path = self.kinds[job.kind].kind.path(job.namespace, job.name)
        rv = job.resource_version
        for attempt in range(CONFLICT_RETRIES + 1):
            body["metadata"]["resourceVersion"] = rv
            try:
                answer = with_retries(
                    lambda: self.rest.request("PATCH", path, body, MERGE_PATCH),
                    f"patch {job.kind} {job.key}",
                )
                job.resource_version = answer["metadata"]["resourceVersion"]
                return
            except client.ApiException as exc:
                if exc.status != 409 or attempt == CONFLICT_RETRIES:
                    raise
                self.metrics.errors.labels("conflict").inc()
                rv = self._unchanged(job, granted)
                log.info("%s %s changed meanwhile (not its grant): retrying", job.kind, job.key)

    def _unchanged(
        self, job: TrainingJob, granted: tuple[int, int, dict[str, dict[str, int]] | None]
    ) -> str:
        """After a 409: the job's latest resourceVersion if it is still active with the grant
        ``granted``; otherwise the 409 is raised again (the next round starts from it)."""
        latest = self._latest(job)
        if latest is None or latest.done:
            log.info("%s %s finished or went away meanwhile: not changed", job.kind, job.key)
            raise client.ApiException(409, f"{job.kind} {job.key} is finished or gone")
        if (latest.workers, latest.ps, latest.placement) != granted:
            raise client.ApiException(409, f"{job.kind} {job.key}: its grant changed meanwhile")
        log.info("%s %s changed meanwhile (not its grant): retrying", job.kind, job.key)
        return latest.resource_version

    def _scale(self, job: TrainingJob, workers: int, placement: dict[str, dict[str, int]]) -> None:
        """Set the worker count through ``/scale`` (a Scale update naming the version read);
        on 409 retry while the job is active and still holds the grant the round read."""
        path = self.kinds[job.kind].kind.path(job.namespace, job.name, "scale")
        rv = job.resource_version
        for attempt in range(CONFLICT_RETRIES + 1):
            body = {
                "apiVersion": "autoscaling/v1",
                "kind": "Scale",
                "metadata": {"name": job.name, "namespace": job.namespace, "resourceVersion": rv},
                "spec": {"replicas": workers},
            }
            try:
                answer = with_retries(
                    lambda body=body: self.rest.request("PUT", path, body),  # type: ignore[misc]
                    f"scale {job.kind} {job.key}",
                )
                job.resource_version = answer["metadata"]["resourceVersion"]
                return
            except client.ApiException as exc:
                if exc.status != 409 or attempt == CONFLICT_RETRIES:
                    raise
                self.metrics.errors.labels("conflict").inc()
                rv = self._unchanged(job, (job.workers, job.ps, placement))

    def _undo(self, job: TrainingJob, body: dict[str, Any]) -> None:
        """Put the placement (and PS) back after a failed scale (best effort)."""
        path = self.kinds[job.kind].kind.path(job.namespace, job.name)
        try:
            answer = with_retries(
                lambda: self.rest.request("PATCH", path, body, MERGE_PATCH),
                f"undo patch of {job.kind} {job.key}",
            )
            job.resource_version = answer["metadata"]["resourceVersion"]
        except (client.ApiException, HTTPError, OSError) as exc:
            self.metrics.errors.labels("undo").inc()
            log.error(
                "%s %s: scale failed and its placement could not be put back (%s); the next "
                "round scales it to zero",
                job.kind,
                job.key,
                exc,
            )

    def _latest(self, job: TrainingJob) -> TrainingJob | None:
        """The job as stored now; None if it is gone or no longer readable."""
        kind = self.kinds[job.kind].kind
        path = kind.path(job.namespace, job.name)
        try:
            obj = with_retries(lambda: self.rest.request("GET", path), f"get {job.kind} {job.key}")
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise
        try:
            return kind.parse(obj)
        except Exception:  # edited into something unreadable: not ours to overwrite
            return None

    def event(self, job: TrainingJob, reason: str, message: str, kind: str = "Normal") -> None:
        """Record a Kubernetes Event on ``job`` (best effort: failures are logged)."""
        if self.dry_run:
            return
        if self.events_left <= 0:
            self.metrics.events_skipped.inc()
            return
        self.events_left -= 1
        served = self.kinds[job.kind].kind
        ref = {
            "apiVersion": f"{served.group}/{served.version}",
            "kind": job.kind,
            "name": job.name,
            "namespace": job.namespace,
            "uid": job.uid,
        }
        events.record(self.rest, job.namespace, ref, reason, message, kind)


def _note(placement: dict[str, dict[str, int]] | None) -> str | None:
    """The placement annotation's text; None (the annotation removed) when it places nothing."""
    if placement is None or not any(n > 0 for c in placement.values() for n in c.values()):
        return None
    return json.dumps(placement, separators=(",", ":"))


def _added_on(
    old: dict[str, dict[str, int]] | None, new: dict[str, dict[str, int]], cordoned: frozenset[str]
) -> str:
    """A cordoned node on which ``new`` places more tasks of a role than ``old``, or ``""``."""
    for role, counts in new.items():
        for node, n in counts.items():
            if node in cordoned and n > ((old or {}).get(role) or {}).get(node, 0):
                return node
    return ""


def _put(target: dict[str, Any], path: tuple[str, ...], value: int) -> None:
    """Set ``target[path[0]]...[path[-1]] = value``, making the dicts on the way."""
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value


def _nodes(placement: dict[str, dict[str, int]]) -> str:
    parts = [
        f"{node}:{n}{'w' if role == 'workers' else 'ps'}"
        for role, counts in placement.items()
        for node, n in counts.items()
    ]
    return ",".join(parts) or "no nodes"
