"""Prometheus metrics of the controller, in a registry of its own (served by `serve`)."""

from __future__ import annotations

from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

_LATENCY_BUCKETS_S = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """What the controller counts.

    Attributes:
        decisions: scheduler decisions made.
        decision_seconds: wall time of one ``scheduler.decide`` call, seconds.
        enactment_seconds: wall time to enact one decision (patches, pods, events), seconds.
        scale_actions: replica changes written, by action (start, grow, shrink, preempt,
            zero-stale); dry-run changes are counted under ``dry_run="true"``.
        pending_jobs, running_jobs: jobs waiting and holding replicas after the last round.
        errors: failed API calls and refused targets, by kind.
        events_skipped: changes whose Event was not recorded (over a round's event budget).
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.decisions = Counter("dlsched_decisions", "Scheduler decisions made.", registry=r)
        self.decision_seconds = Histogram(
            "dlsched_decision_seconds",
            "Wall time of one scheduler decision, seconds.",
            buckets=_LATENCY_BUCKETS_S,
            registry=r,
        )
        self.enactment_seconds = Histogram(
            "dlsched_enactment_seconds",
            "Wall time to enact one decision through the API, seconds.",
            buckets=_LATENCY_BUCKETS_S,
            registry=r,
        )
        self.scale_actions = Counter(
            "dlsched_scale_actions",
            "Replica changes written to DLJobs.",
            ["action", "dry_run"],
            registry=r,
        )
        self.pending_jobs = Gauge("dlsched_pending_jobs", "Jobs holding no replicas.", registry=r)
        self.running_jobs = Gauge("dlsched_running_jobs", "Jobs holding replicas.", registry=r)
        self.events_skipped = Counter(
            "dlsched_events_skipped",
            "Changes whose Event was not recorded (over a round's budget).",
            registry=r,
        )
        self.errors = Counter(
            "dlsched_errors", "Failed API calls and refused targets.", ["kind"], registry=r
        )


def serve(metrics: Metrics, port: int, address: str = "0.0.0.0") -> WSGIServer:
    """Serve ``metrics`` on ``http://ADDRESS:PORT/metrics`` from a daemon thread (port 0: a
    free one, ``server_address`` says which); ``shutdown()`` and ``server_close()`` stop it."""
    server, _thread = start_http_server(port, addr=address, registry=metrics.registry)
    return server
