"""``k8s run --dashboard`` in headless Chromium: against the fake API server, the controller's
dashboard loads with no console error and shows its allocations (each job's current bar holds
the GPUs its DLJob was granted, under the job's namespace/name), and a later round's change
within 2 s."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from kubernetes import client

pytest.importorskip("starlette", reason="the dashboard needs dlsched[dashboard] (starlette)")
pytest.importorskip("uvicorn", reason="the dashboard needs dlsched[dashboard] (uvicorn)")

from dlsched.commands.k8s import ControllerOptions, _event_outputs
from tests.k8s.apiserver import FakeApiServer
from tests.k8s.k8s_helpers import NS, controller, finish, jobs
from tests.k8s.test_k8s_event_log import _cluster
from tests.report.conftest import browser  # noqa: F401 - the headless Chromium fixture

SHOWN = """
const d = window.dlschedReport.run(), out = {};
d.bars.job.forEach((row, i) => {
  if (d.bars.end[i] < 0) out[d.jobs.id[row]] = d.bars.gpus[i];
});
return out;
"""
"""Job namespace/name → GPUs of its bar still open (closed by no event; a bar that closed at
the page's latest time, as j0's does when j2 starts in the same instant, is not)."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _granted(server: FakeApiServer) -> dict[str, int]:
    """Job namespace/name → GPUs its unfinished DLJob holds (one a worker in `_cluster`'s
    jobs)."""
    return {f"{NS}/{j.name}": j.workers for j in jobs(server) if j.workers > 0 and not j.done}


def _wait_shown(browser: Any, want: dict[str, int], within_s: float) -> float:  # noqa: F811
    """Seconds until the page shows ``want`` (fails after ``within_s``)."""
    t0 = time.monotonic()
    while (shown := browser.execute_script(SHOWN)) != want:
        assert time.monotonic() - t0 < within_s, (shown, want)
        time.sleep(0.05)
    return time.monotonic() - t0


def test_k8s_dashboard_shows_the_controllers_allocations(
    server: FakeApiServer,
    api_client: client.ApiClient,
    browser: Any,  # noqa: F811
) -> None:
    _cluster(server)  # 8 GPUs: j0 and j1 start, j2 waits until j0 finishes
    ctl = controller(api_client, "fifo")
    port = _free_port()
    on_exit = _event_outputs(ctl, ControllerOptions(dashboard=f"127.0.0.1:{port}"))
    try:
        ctl.reconcile()
        first = _granted(server)
        assert sorted(first) == [f"{NS}/j0", f"{NS}/j1"]
        browser.get(f"http://127.0.0.1:{port}/")
        _wait_shown(browser, first, within_s=10)
        table = browser.find_element("id", "jobs").text
        assert all(f"{NS}/j{i}" in table for i in range(3))  # j2 listed, waiting
        finish(server, "j0")
        ctl.reconcile()
        second = _granted(server)
        assert f"{NS}/j2" in second and f"{NS}/j0" not in second
        assert _wait_shown(browser, second, within_s=5) <= 2.0
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        browser.get("about:blank")  # closes the event stream before the server stops
        assert errors == []
    finally:
        on_exit()
