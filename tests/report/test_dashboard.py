"""The live dashboard (`dlsched.report.dashboard`) over an event log a test writes to as a run
would: its routes, and in headless Chromium that a job's allocation change shows on the page
within 2 s of being logged."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the dashboard needs dlsched[dashboard] (starlette)")
pytest.importorskip("uvicorn", reason="the dashboard needs dlsched[dashboard] (uvicorn)")

from dlsched.core import Allocation, JobRun
from dlsched.report.dashboard import Dashboard, parse_address
from dlsched.report.data import RunInput
from dlsched.sim.event_log import EventLog
from tests.helpers import gpu_job

pytestmark = pytest.mark.integration  # a real server (and a real browser)


class FakeRun:
    """A run that a test moves on by hand: two 4-GPU servers, jobs 0 and 1 submitted, job 0
    started on 2 GPUs."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.log = EventLog(lambda: time.monotonic() - self.t0)
        self.log.cluster([4, 4])
        self.runs = {j: JobRun(gpu_job(j, 0.0, 100.0, 2)) for j in (0, 1)}
        for j in self.runs:
            self.log.submit(j)
        self.move(0, Allocation.of([(0, 2)]))

    def move(self, job: int, new: Allocation) -> None:
        run = self.runs[job]
        self.log.change(run, run.allocation, new)
        run.allocation = new

    def source(self) -> RunInput:
        return RunInput("fake", "fifo", 0, self.log, {}, now_s=self.log.clock())


@pytest.fixture
def served() -> Iterator[tuple[FakeRun, Dashboard]]:
    fake = FakeRun()
    dashboard = Dashboard(fake.source).start()
    try:
        yield fake, dashboard
    finally:
        dashboard.stop()


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def test_routes(served: tuple[FakeRun, Dashboard]) -> None:
    fake, dashboard = served
    assert dashboard.host == "127.0.0.1" and dashboard.port > 0
    time.sleep(0.2)  # times are rounded to 0.1 s: "now" past job 0's start
    data = json.loads(_get(dashboard.url + "data"))
    assert data["bars"]["job"] == [0]
    assert data["bars"]["t1"][0] == data["end_s"] > data["bars"]["t0"][0]  # held till now
    fake.move(1, Allocation.of([(1, 2)]))
    assert json.loads(_get(dashboard.url + "data"))["bars"]["job"] == [0, 1]
    metrics = _get(dashboard.url + "metrics")
    assert 'dlsched_events_total{kind="start"} 2.0' in metrics
    assert "dlsched_running_jobs 2.0" in metrics and "dlsched_gpus_held 4.0" in metrics
    assert "connect-src 'self'" in _get(dashboard.url)


def test_address_parsing() -> None:
    assert parse_address("8050") == ("127.0.0.1", 8050)
    assert parse_address("0.0.0.0:0") == ("0.0.0.0", 0)
    with pytest.raises(ValueError, match="--dashboard"):
        parse_address("localhost:http")


def test_an_allocation_change_shows_within_2_s(
    served: tuple[FakeRun, Dashboard], browser: Any
) -> None:
    fake, dashboard = served
    browser.get(dashboard.url)
    bars = "return window.dlschedReport.run().bars.gpus.slice(-1)[0]"
    updates = "return Number(document.body.dataset.updates || 0)"
    deadline = time.monotonic() + 10
    while browser.execute_script(updates) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)  # the stream's first message: the run so far
    assert browser.execute_script(bars) == 2
    fake.move(0, Allocation.of([(0, 4)]))  # job 0 grows to 4 GPUs
    changed = time.monotonic()
    while browser.execute_script(bars) != 4 and time.monotonic() - changed < 5:
        time.sleep(0.05)
    shown_after_s = time.monotonic() - changed
    assert browser.execute_script(bars) == 4
    assert shown_after_s <= 2.0
    assert browser.execute_script("return window.dlschedReport.run().bars.job.length") == 2
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    browser.get("about:blank")  # closes the event stream before the server stops
    assert errors == []
