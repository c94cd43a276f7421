"""The live dashboard on a real live run (DRF, two jobs: a start, a shrink by hot scaling when
the second arrives, its start, the finishes): in headless Chromium every allocation the run's
event log gets shows on the page within 2 s, with no console error."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the dashboard needs dlsched[dashboard] (starlette)")
pytest.importorskip("uvicorn", reason="the dashboard needs dlsched[dashboard] (uvicorn)")

from dlsched.live.cluster import LiveCluster
from dlsched.report.dashboard import Dashboard
from dlsched.report.data import RunInput
from dlsched.schedulers.registry import make_scheduler
from dlsched.sim.event_log import KINDS
from tests.live.test_live_loop import _stream
from tests.report.conftest import browser  # noqa: F401 - the headless Chromium fixture

ALLOCATING = {KINDS.index(k) for k in ("start", "rescale", "migrate")}


def test_every_allocation_shows_within_2_s(browser: Any) -> None:  # noqa: F811
    cluster = LiveCluster(
        _stream([0.0, 1.5], steps=80), make_scheduler("drf"), slot_s=0.4, cores=2, horizon_s=60
    )
    log = cluster.event_log
    dashboard = Dashboard(lambda: RunInput("live", "drf", 0, log, {}, now_s=log.clock())).start()
    done = threading.Event()
    thread = threading.Thread(target=lambda: (cluster.run(), done.set()), daemon=True)
    try:
        browser.get(dashboard.url)
        thread.start()
        logged: list[float] = []  # wall time each allocation reached the log
        shown: list[float] = []  # wall time the page first drew it
        count = "return window.dlschedReport.run().bars.job.length"
        while not done.is_set() or len(shown) < len(logged):
            now = time.monotonic()
            allocations = sum(k in ALLOCATING for k in list(log.kind))
            logged += [now] * (allocations - len(logged))
            shown += [now] * (int(browser.execute_script(count)) - len(shown))
            if done.is_set() and now - (logged[-1] if logged else now) > 5:
                break
            time.sleep(0.05)
        thread.join(timeout=30)
        assert len(logged) >= 3  # two starts and the shrink at least
        assert len(shown) == len(logged)
        delays = [s - g for s, g in zip(shown, logged, strict=True)]
        assert max(delays) <= 2.0, delays
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        browser.get("about:blank")
        assert errors == []
    finally:
        dashboard.stop()
        cluster.close()
