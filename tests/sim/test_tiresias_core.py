"""The compiled core replays Tiresias (`dlsched.sim.las_core`, ``tiresias=True``): the same
per-job records, totals and timeline as the simulator with `schedulers.tiresias.Tiresias`, by
the compiled kernel and by its plain-Python reference, on random small fixed-GPU traces with
thresholds and promotion knobs that make jobs cross queues and be promoted, and on Philly."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.core import Cluster, JobSpec, Resources
from dlsched.models.locality import Locality
from dlsched.placement.pack import Pack
from dlsched.schedulers.tiresias import Tiresias
from dlsched.sim import SimConfig, las_core_run
from dlsched.sim.las_core_run import run, unsupported
from dlsched.sim.simulator import Simulator
from tests.sim.test_las_core import _summary, traces


def _simulator(jobs: list[JobSpec], servers: int, scheduler: Tiresias, **config: Any) -> Simulator:
    return Simulator(
        jobs,
        Cluster.homogeneous(servers, Resources(8.0, 32.0, 256.0)),
        Locality(gpus_per_server=8),
        scheduler,
        Pack(),
        SimConfig(**{"on_events": True, **config}),
    )


# (thresholds GPU-s, promotion knob): the default, and queues and knobs small enough for the
# traces' jobs (up to 4,000 s of work on 1-16 GPUs) to cross several thresholds and be promoted
POLICIES = [((3600.0,), 8.0), ((200.0, 2000.0, 9000.0), 0.5), ((50.0,), 2.0), ((), 1.0)]


@settings(max_examples=40, deadline=None)
@given(traces(), st.sampled_from(POLICIES))
def test_compiled_and_plain_tiresias_equal_the_simulator(
    trace: tuple[list[JobSpec], int, dict[str, Any]],
    policy: tuple[tuple[float, ...], float],
) -> None:
    jobs, servers, config = trace
    if config["interval_s"] is not None and config["horizon_s"] is None:
        # short ticks with a small knob preempt and promote for a long simulated time: the
        # simulator would take minutes on some draws
        config = {**config, "horizon_s": 20_000.0}

    def sim() -> Simulator:
        return _simulator(jobs, servers, Tiresias(*policy), **config)

    assert unsupported(sim()) is None
    expected = _summary(sim().run())
    compiled = run(sim(), compiled=True)
    plain = run(sim(), compiled=False)
    assert compiled is not None and plain is not None
    assert _summary(compiled) == expected
    assert _summary(plain) == expected


def test_tiresias_on_philly_record_for_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """1,500 jobs of all of Philly (promotions and demotions among them), simulator against
    the compiled core, and 300 against the plain-Python path."""
    scheduler = Tiresias()
    kw: dict[str, Any] = {"workload": "philly", "max_jobs": 1500}
    python = dlsched.simulate(scheduler=scheduler, core="python", **kw)
    assert len(scheduler._service_offset) > 20  # jobs were promoted
    assert any(r.num_gpus * r.ideal_s > 3600.0 for r in python.records)  # and demoted
    compiled = dlsched.simulate(scheduler="tiresias", core="compiled", **kw)
    assert compiled.params["core"] == "compiled Tiresias"
    assert _summary(compiled) == _summary(python)
    kw["max_jobs"] = 300
    kernel = las_core_run.run
    monkeypatch.setattr(las_core_run, "run", lambda sim: kernel(sim, compiled=False))
    plain = dlsched.simulate(scheduler="tiresias", core="compiled", **kw)
    assert plain.params["core"] == "compiled Tiresias"
    assert _summary(plain) == _summary(dlsched.simulate(scheduler="tiresias", core="python", **kw))
