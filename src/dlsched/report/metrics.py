"""Prometheus metrics of a run read from its event log, with ``prometheus_client`` as the
Kubernetes controller's (`dlsched.k8s.metrics`): ``live run --metrics-port`` serves them on
their own port, the dashboard at its ``/metrics``.

The values are computed at each scrape from the log as it stands (a collector, nothing hooked
into the run): events by kind, jobs holding tasks and jobs waiting, GPUs held, and whatever
counts the run adds (the live runtime: jobs finished and failed, repairs, steps redone).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, generate_latest, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from dlsched.report.data import RunInput, snapshot
from dlsched.sim.event_log import FAIL, FINISH, KINDS, SERVER, SUBMIT, EventLog

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The Prometheus text exposition format's media type."""


def holdings(log: EventLog) -> tuple[int, int, int]:
    """(jobs holding tasks, jobs submitted and holding none, GPUs held) after ``log``'s last
    event; finished and failed jobs count in neither."""
    held: dict[int, tuple[int, int]] = {}  # job → (tasks, GPUs) it holds; (0, 0): waiting
    for kind, job, gpus, workers, ps in zip(
        log.kind, log.job_id, log.gpus, log.workers, log.ps, strict=False
    ):
        if kind == SERVER:
            continue
        if kind in (FINISH, FAIL):
            held.pop(job, None)
        else:  # submit, start, rescale, migrate, preempt: the job holds what the row says
            held[job] = (0, 0) if kind == SUBMIT else (workers + ps, gpus)
    running = sum(1 for tasks, _ in held.values() if tasks > 0)
    return running, len(held) - running, sum(g for _, g in held.values())


class RunCollector(Collector):
    """Collects the metrics of the run ``source`` returns, at each scrape.

    Args:
        source: the run as it stands now (its `RunInput`, whose log the run appends to).
        counts: more counters of the run (name → count so far), each exported as
            ``dlsched_<name>_total``; None: none.
    """

    def __init__(
        self,
        source: Callable[[], RunInput],
        counts: Callable[[], Mapping[str, int]] | None = None,
    ) -> None:
        self.source = source
        self.counts = counts

    def collect(self) -> Iterator[Metric]:
        log = snapshot(self.source().log)
        by_kind = [0] * len(KINDS)
        for kind in log.kind:
            by_kind[kind] += 1
        events = CounterMetricFamily(
            "dlsched_events", "Events of the run's event log, by kind.", labels=["kind"]
        )
        for code, name in enumerate(KINDS):
            events.add_metric([name], by_kind[code])
        yield events
        running, pending, gpus = holdings(log)
        yield GaugeMetricFamily("dlsched_running_jobs", "Jobs holding tasks.", value=running)
        yield GaugeMetricFamily(
            "dlsched_pending_jobs", "Jobs submitted and holding nothing.", value=pending
        )
        yield GaugeMetricFamily("dlsched_gpus_held", "GPUs the jobs hold.", value=gpus)
        for name, count in (self.counts() if self.counts is not None else {}).items():
            yield CounterMetricFamily(f"dlsched_{name}", f"{name} so far.", value=count)


def registry(
    source: Callable[[], RunInput], counts: Callable[[], Mapping[str, int]] | None = None
) -> CollectorRegistry:
    """A registry of its own holding the `RunCollector` of ``source`` (and ``counts``)."""
    reg = CollectorRegistry()
    reg.register(RunCollector(source, counts))
    return reg


def exposition(reg: CollectorRegistry) -> str:
    """The metrics of ``reg`` as Prometheus text."""
    return generate_latest(reg).decode()


def serve(reg: CollectorRegistry, port: int, address: str = "127.0.0.1") -> WSGIServer:
    """Serve ``reg`` on ``http://ADDRESS:PORT/metrics`` from a daemon thread (port 0: a free
    one, ``server_address`` says which); ``shutdown()`` and ``server_close()`` stop it.
    `ValueError` naming ``--metrics-port`` if it cannot listen there."""
    try:
        server, _thread = start_http_server(port, addr=address, registry=reg)
    except OSError as exc:
        raise ValueError(
            f"--metrics-port: cannot listen on {address}:{port}: {exc.strerror or exc}"
        ) from None
    return server
