"""The compiled FIFO core (`dlsched.sim.fifo_core`) gives the simulator's per-job records,
totals and timeline, and so does its plain-Python reference path, on random small fixed-GPU
traces and on thousands of Philly jobs."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

import dlsched
from dlsched.core import Cluster, JobSpec, Resources
from dlsched.models.locality import Locality
from dlsched.placement.pack import Pack
from dlsched.schedulers.fifo import Fifo
from dlsched.sim import SimConfig, fifo_core_run
from dlsched.sim.fifo_core_run import run, unsupported
from dlsched.sim.simulator import Simulator
from tests.sim.test_las_core import _summary, traces


def _simulator(jobs: list[JobSpec], servers: int, **config: Any) -> Simulator:
    return Simulator(
        jobs,
        Cluster.homogeneous(servers, Resources(8.0, 32.0, 256.0)),
        Locality(gpus_per_server=8),
        Fifo(),
        Pack(),
        SimConfig(**{"on_events": True, **config}),
    )


@settings(max_examples=60, deadline=None)
@given(traces())
def test_compiled_and_plain_core_equal_the_simulator(
    trace: tuple[list[JobSpec], int, dict[str, float | None]],
) -> None:
    jobs, servers, config = trace
    assert unsupported(_simulator(jobs, servers, **config)) is None
    expected = _summary(_simulator(jobs, servers, **config).run())
    assert expected[-1][0] or config["horizon_s"]  # a timeline was sampled
    compiled = run(_simulator(jobs, servers, **config), compiled=True)
    plain = run(_simulator(jobs, servers, **config), compiled=False)
    assert compiled is not None and plain is not None
    assert _summary(compiled) == expected
    assert _summary(plain) == expected


def test_thousands_of_philly_jobs_give_the_same_records_and_timeline() -> None:
    kw = {"workload": "philly:6214e9", "scheduler": "fifo", "max_jobs": 4000}
    python = dlsched.simulate(core="python", **kw)
    compiled = dlsched.simulate(core="compiled", **kw)
    assert compiled.params["core"] == "compiled FIFO" and "core" not in python.params
    assert len(python.records) > 3000 and len(python.timeline.times) > 100
    assert _summary(compiled) == _summary(python)


def test_plain_core_equals_the_simulator_on_a_thousand_philly_jobs() -> None:
    workload = dlsched.make_workload("philly:6214e9", max_jobs=1000)
    sim = Simulator(
        workload.jobs,
        workload.make_cluster(),
        workload.model,
        Fifo(),
        Pack(),
        SimConfig(on_events=workload.on_events, interval_s=workload.interval_s),
    )
    plain = run(sim, compiled=False)
    assert plain is not None
    assert _summary(plain) == _summary(dlsched.simulate(workload, "fifo", core="python"))


def test_auto_takes_the_core_for_large_supported_runs_only(monkeypatch: pytest.MonkeyPatch) -> None:
    kw = {"workload": "philly:6214e9", "max_jobs": 120, "scheduler": "fifo"}
    assert "core" not in dlsched.simulate(**kw).params  # too small: loading costs more
    monkeypatch.setattr(fifo_core_run, "AUTO_MIN_JOBS", 100)
    monkeypatch.setattr(fifo_core_run, "AUTO_MIN_JOBS_COLD", 200)
    monkeypatch.setattr(fifo_core_run, "compiles", lambda: True)  # as on a first use
    assert "core" not in dlsched.simulate(**kw).params  # compiling would cost more than it saves
    monkeypatch.setattr(fifo_core_run, "compiles", lambda: False)  # loaded from the cache
    auto = dlsched.simulate(**kw)
    assert auto.params["core"] == "compiled FIFO"
    assert _summary(auto) == _summary(dlsched.simulate(**kw, core="python"))
    assert "core" not in dlsched.simulate(**kw, record_events=True).params  # not replayed
    assert "core" not in dlsched.simulate(**{**kw, "scheduler": "sif"}).params
    assert "core" not in dlsched.simulate(**{**kw, "placement": "load_balance"}).params
