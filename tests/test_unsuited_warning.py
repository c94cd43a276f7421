"""A registered scheduler run on a workload it was not made for: one warning, once."""

from __future__ import annotations

import logging

import pytest

import dlsched
from dlsched import runner
from dlsched.schedulers.registry import made_for


def test_made_for_reads_the_registry_setting() -> None:
    assert made_for("sjf") == {"deeprm"}
    assert made_for("srtf") == {"dl2", "sched2", "philly", "trace"}
    assert made_for("fifo") is None  # "any"
    with pytest.raises(ValueError, match="unknown scheduler 'nope'"):
        made_for("nope")


def test_warns_once_for_a_scheduler_on_a_foreign_workload(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "_WARNED", set())
    with caplog.at_level(logging.WARNING, logger="dlsched.runner"):
        for seed in (1, 2):
            dlsched.simulate("deeprm", "tetris", seed=seed, load=0.3, num_jobs=5)
        dlsched.simulate("deeprm", "sjf", seed=1, load=0.3, num_jobs=5)
        dlsched.simulate("deeprm", "fifo", seed=1, load=0.3, num_jobs=5)
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "scheduler 'tetris' was made for the dl2 workload, not 'deeprm': "
        "its decisions may mean little here"
    ]
