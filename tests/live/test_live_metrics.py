"""``live run --metrics-port``: the live runtime's Prometheus metrics (prometheus_client, as the
Kubernetes controller's), scraped over HTTP during and after a real live run (DRF, two jobs),
checked against the run's event log; the server stops with the run."""

from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("prometheus_client", reason="--metrics-port needs prometheus-client")

from prometheus_client.parser import text_string_to_metric_families

from dlsched.commands.live import _metrics_server
from dlsched.live.cluster import LiveCluster
from dlsched.schedulers.registry import make_scheduler
from dlsched.sim.event_log import KINDS
from tests.live.test_live_loop import _stream


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _scrape(port: int) -> dict[tuple[str, str], float]:
    """(sample name, its kind label or "") → value, from http://127.0.0.1:PORT/metrics."""
    url = f"http://127.0.0.1:{port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, s.labels.get("kind", "")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_live_metrics_scraped_over_http_during_and_after_a_run() -> None:
    cluster = LiveCluster(
        _stream([0.0, 1.0], steps=40), make_scheduler("drf"), slot_s=0.4, cores=2, horizon_s=60
    )
    port = _free_port()
    server = _metrics_server(cluster, port)
    assert server is not None and server.server_address[:2] == ("127.0.0.1", port)
    thread = threading.Thread(target=cluster.run, daemon=True)
    try:
        assert _scrape(port)[("dlsched_events_total", "start")] == 0
        thread.start()
        running_seen = 0.0
        deadline = time.monotonic() + 60
        while thread.is_alive() and time.monotonic() < deadline:
            running_seen = max(running_seen, _scrape(port)[("dlsched_running_jobs", "")])
            time.sleep(0.1)
        thread.join(timeout=30)
        assert running_seen >= 1  # seen while the jobs trained
        after = _scrape(port)
        log = cluster.event_log
        for code, kind in enumerate(KINDS):
            assert after[("dlsched_events_total", kind)] == sum(k == code for k in log.kind)
        assert after[("dlsched_events_total", "start")] >= 2
        assert after[("dlsched_finished_total", "")] == 2
        assert after[("dlsched_failed_total", "")] == 0
        assert after[("dlsched_running_jobs", "")] == 0
        assert after[("dlsched_pending_jobs", "")] == 0
        assert after[("dlsched_gpus_held", "")] == 0
    finally:
        server.shutdown()
        server.server_close()
        cluster.close()
    with pytest.raises(urllib.error.URLError):
        _scrape(port)  # stopped with the run


def test_metrics_port_zero_is_off() -> None:
    assert _metrics_server(None, 0) is None  # type: ignore[arg-type]
