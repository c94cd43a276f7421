"""`dlsched.report.metrics`: jobs running and waiting and GPUs held, replayed from an event log
(preemption, finish and failure included)."""

from __future__ import annotations

import pytest

pytest.importorskip("prometheus_client", reason="the run's metrics need prometheus-client")

from prometheus_client.parser import text_string_to_metric_families

from dlsched.core import Allocation, JobRun
from dlsched.report.data import RunInput
from dlsched.report.metrics import exposition, holdings, registry
from dlsched.sim.event_log import EventLog
from tests.helpers import gpu_job


def test_holdings_follow_the_log_and_the_exposition_says_them() -> None:
    clock = [0.0]
    log = EventLog(lambda: clock[0])
    log.cluster([4, 4])
    runs = {j: JobRun(gpu_job(j, 0.0, 100.0, 2)) for j in range(4)}

    def move(job: int, new: Allocation) -> None:
        log.change(runs[job], runs[job].allocation, new)
        runs[job].allocation = new

    for j in runs:
        log.submit(j)
    assert holdings(log) == (0, 4, 0)
    move(0, Allocation.of([(0, 2)]))
    move(1, Allocation.of([(1, 3)]))
    move(2, Allocation.of([(0, 2)]))
    assert holdings(log) == (3, 1, 7)
    move(1, Allocation.of([]))  # preempted: waiting again
    log.finish(0)
    move(2, Allocation.of([]))
    log.fail(2)
    assert holdings(log) == (0, 2, 0)  # jobs 1 (preempted) and 3 (never started)
    text = exposition(registry(lambda: RunInput("t", "fifo", 0, log, {}), lambda: {"repairs": 3}))
    samples = {
        (s.name, s.labels.get("kind", "")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("dlsched_events_total", "preempt")] == 2
    assert samples[("dlsched_events_total", "submit")] == 4
    assert samples[("dlsched_pending_jobs", "")] == 2
    assert samples[("dlsched_repairs_total", "")] == 3
