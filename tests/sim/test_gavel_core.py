"""The compiled core of Gavel's round mechanism (`dlsched.sim.gavel_core`) gives the simulator's
per-job records, totals and timeline for every Gavel LP policy on one GPU type and on several,
and so does its plain-Python reference, on random small fixed-GPU traces."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.core import Arch, Cluster, JobSpec, Resources
from dlsched.models.fixed import FixedDuration
from dlsched.models.locality import Locality
from dlsched.models.typed import TypedSpeed
from dlsched.placement.pack import Pack
from dlsched.schedulers.registry import make_scheduler
from dlsched.sim import SimConfig, gavel_core_run
from dlsched.sim.gavel_core_run import run, unsupported
from dlsched.sim.simulator import SimulationStalled, Simulator
from tests.sim.test_las_core import _summary, draw_jobs

POLICIES = (
    "gavel-las",
    "gavel-las-het",
    "gavel-ftf",
    "gavel-ftf-het",
    "gavel-makespan",
    "gavel-makespan-het",
)


@st.composite
def traces(draw: st.DrawFn) -> tuple[list[JobSpec], int, dict[str, Any], str, float]:
    """Up to 30 jobs of 1-16 GPUs (ties in submission included) on 1-4 or 10 8-GPU servers, the
    `SimConfig` keywords (timeline spacing, a horizon or none, events and/or ticks), a policy
    and the least time between its allocation resets (s; Gavel's 1,920 s, or short, so that
    these short traces reset often)."""
    servers = draw(st.sampled_from([1, 2, 3, 4, 4, 10]))  # 10: more GPUs than the walk's 64
    n = draw(st.integers(1, 30))
    jobs = draw_jobs(draw, n, servers)
    interval_s = draw(st.sampled_from([None, None, 50.0, 300.0]))
    config = {
        "timeline_step_s": draw(st.sampled_from([None, 1.0, 75.0])),
        "horizon_s": draw(st.sampled_from([None, None, 900.0, 2500.0])),
        "interval_s": interval_s,
    }
    config["on_events"] = config["interval_s"] is None or draw(st.booleans())
    policy = draw(st.sampled_from(POLICIES))
    reset_every = draw(st.sampled_from([1920.0, 200.0, 0.0]))
    return jobs, servers, config, policy, reset_every


def _simulator(
    jobs: list[JobSpec], servers: int, policy: str, reset_every: float, **config: Any
) -> Simulator:
    scheduler: Any = make_scheduler(policy)
    scheduler.reset_every_s = reset_every
    return Simulator(
        jobs,
        Cluster.homogeneous(servers, Resources(8.0, 32.0, 256.0)),
        Locality(gpus_per_server=8),
        scheduler,
        Pack(),
        SimConfig(**{"on_events": True, **config}),
    )


@settings(max_examples=60, deadline=None)
@given(traces())
def test_compiled_and_plain_core_equal_the_simulator(
    trace: tuple[list[JobSpec], int, dict[str, Any], str, float],
) -> None:
    jobs, servers, config, policy, reset_every = trace
    made = (jobs, servers, policy, reset_every)
    assert unsupported(_simulator(*made, **config)) is None
    expected = _summary(_simulator(*made, **config).run())
    compiled = run(_simulator(*made, **config), compiled=True)
    plain = run(_simulator(*made, **config), compiled=False)
    assert compiled is not None and plain is not None
    assert _summary(compiled) == expected
    assert _summary(plain) == expected


def test_simulate_uses_the_core_only_where_asked_and_supported() -> None:
    kw = {"workload": "philly:6214e9", "max_jobs": 150}
    python = dlsched.simulate(scheduler="gavel-las", core="python", **kw)
    auto = dlsched.simulate(scheduler="gavel-las", **kw)  # default: too small for the core
    compiled = dlsched.simulate(scheduler="gavel-las", core="compiled", **kw)
    assert "core" not in python.params and "core" not in auto.params
    assert compiled.params["core"] == "compiled Gavel LAS"
    assert _summary(compiled) == _summary(python) == _summary(auto)
    fifo = dlsched.simulate(scheduler="gavel-fifo", core="compiled", **kw)
    assert fifo.params["core"] == "python"  # zero priority skipped: not replayed


TYPES = ("v100", "p100", "k80", "a100")  # a100: a type Gavel's fixed order does not name


@st.composite
def typed_traces(draw: st.DrawFn) -> tuple[Simulator, Simulator, Simulator]:
    """Three simulators of one drawn run on several GPU types: 1-3 types (in any order, the
    servers of each in any positions), 1-3 servers of 4 or 8 GPUs each (the first type 8), up
    to 30 jobs of 1-8 GPUs under `TypedSpeed` (`Locality` or `FixedDuration` inside) with true
    rates per type and estimates that differ from them (some 0: a type the job may not run on,
    never the first), and `traces`' configurations, policies and reset intervals."""
    kinds = draw(st.permutations(TYPES))[: draw(st.integers(1, 3))]
    sizes = [8.0] + [draw(st.sampled_from([4.0, 8.0])) for _ in kinds[1:]]
    servers = [
        (t, g) for t, g in zip(kinds, sizes, strict=True) for _ in range(draw(st.integers(1, 3)))
    ]
    servers = draw(st.permutations(servers))
    n = draw(st.integers(1, 30))
    jobs = draw_jobs(draw, n, 1)  # (at most 8 GPUs: the first type holds every job)
    speeds = st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0])
    rates = {j.job_id: {t: draw(speeds) for t in kinds} for j in jobs}
    estimated = {
        j.job_id: {
            t: draw(st.sampled_from([rates[j.job_id][t], draw(speeds)] + [0.0] * (t != kinds[0])))
            for t in kinds
        }
        for j in jobs
    }
    inner = draw(st.sampled_from([Locality(gpus_per_server=8), FixedDuration()]))
    types = [t for t, _ in servers]
    _, _, config, policy, reset_every = draw(traces())

    def made() -> Simulator:
        scheduler: Any = make_scheduler(policy)
        scheduler.reset_every_s = reset_every
        return Simulator(
            jobs,
            Cluster([Resources(g, 32.0, 256.0) for _, g in servers], types),
            TypedSpeed(inner, types, rates, estimated),
            scheduler,
            Pack(),
            SimConfig(**{"on_events": True, **config}),
        )

    return made(), made(), made()


@settings(max_examples=80, deadline=None)
@given(typed_traces())
def test_compiled_and_plain_core_equal_the_simulator_on_several_gpu_types(
    sims: tuple[Simulator, Simulator, Simulator],
) -> None:
    simulator, compiled_sim, plain_sim = sims
    if unsupported(simulator) is not None:  # aware, two types Gavel's order does not name
        return
    try:
        expected = _summary(simulator.run())
    except SimulationStalled:
        assert run(compiled_sim, compiled=True) is None
        return
    except ValueError as error:  # the policy refuses the drawn estimates (agnostic FTF: a job
        with pytest.raises(ValueError, match=re.escape(str(error))):  # with no V100 estimate)
            run(compiled_sim, compiled=True)  # the core, running the policy's code, too
        return
    compiled = run(compiled_sim, compiled=True)
    plain = run(plain_sim, compiled=False)
    if compiled is None or plain is None:  # an idle round without ticks: the simulator retries
        # later, the core hands the run back (`simulate` then runs the simulator itself)
        assert compiled is None and plain is None and simulator.config.interval_s is None
        return
    assert _summary(compiled) == expected
    assert _summary(plain) == expected


def test_heterogeneous_clusters_take_the_core_unless_the_type_order_needs_the_jobs() -> None:
    kw = {"num_jobs": 40, "cluster": "v100:1x4,p100:1x4,k80:1x4", "seed": 2}
    for policy in ("gavel-las-het", "gavel-las"):
        result = dlsched.simulate("gavel", policy, core="compiled", **kw)
        assert result.params["core"] == "compiled Gavel LAS"
        assert _summary(result) == _summary(dlsched.simulate("gavel", policy, **kw))
    types = ["v100", "a100", "h100"]  # two types Gavel's order does not name
    job = JobSpec(0, 0.0, "m", Arch.ALLREDUCE, 10.0, Resources(1.0, 0.0, 0.0))
    for policy, supported in (("gavel-las-het", False), ("gavel-las", True)):
        sim = Simulator(
            [job],
            Cluster([Resources(4.0, 32.0, 256.0)] * 3, types),
            TypedSpeed(FixedDuration(), types, {0: dict.fromkeys(types, 1.0)}),
            make_scheduler(policy),
            Pack(),
            SimConfig(interval_s=360.0),
        )
        why = unsupported(sim)
        assert why is None if supported else "Gavel's order does not name" in str(why)


def test_auto_takes_the_core_for_large_supported_runs_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kw = {"workload": "philly:6214e9", "max_jobs": 120, "scheduler": "gavel-ftf"}
    monkeypatch.setattr(gavel_core_run, "AUTO_MIN_JOBS", 100)
    monkeypatch.setattr(gavel_core_run, "AUTO_MIN_JOBS_COLD", 200)
    monkeypatch.setattr(gavel_core_run, "compiles", lambda kernel: True)  # as on a first use
    assert "core" not in dlsched.simulate(**kw).params  # compiling would cost more than it saves
    monkeypatch.setattr(gavel_core_run, "AUTO_MIN_JOBS_COLD", 100)
    auto = dlsched.simulate(**kw)
    assert auto.params["core"] == "compiled Gavel FTF"
    assert _summary(auto) == _summary(dlsched.simulate(**kw, core="python"))
    assert "core" not in dlsched.simulate(**kw, record_events=True).params  # not replayed


_TIMES = st.sampled_from([0.0, 1.0, 2.5, 100.0, 1e6 / 3])


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.1, 7.0, 49.9, 50.0, 1e3 / 7]),  # progress
            _TIMES,  # since
            _TIMES,  # paused until
            st.sampled_from([0.0, -0.0, 1e-3, 0.3, 2.0]),  # rate
            st.sampled_from([0.0, 50.0, 1e3 / 7, 1e4]),  # total work
        ),
        min_size=1,
        max_size=12,
    ),
    now=_TIMES,
)
def test_the_runs_remaining_works_are_each_runs_remaining_work(
    rows: list[tuple[float, float, float, float, float]], now: float
) -> None:
    """`_Runs.remaining_works` gives `_Run.remaining_work`'s floats, bit for bit (work done
    past the total, paused later than the last progress, no rate, no time elapsed)."""
    from dlsched.papers.gavel.books import remaining_works
    from dlsched.sim import gavel_core as core

    n = len(rows)
    jf = np.zeros((12, n))
    for name, k in (("PROGRESS", 0), ("PTIME", 1), ("PAUSED", 2), ("RATE", 3)):
        jf[getattr(core, name)] = [row[k] for row in rows]
    total = np.array([row[4] for row in rows])
    specs = [
        JobSpec(i, 0.0, "A3C", Arch.ALLREDUCE, float(total[i]), Resources(1.0)) for i in range(n)
    ]
    idx = np.arange(n)[::-1].copy()  # not in index order
    runs = gavel_core_run._Runs(specs, idx, jf, total)
    got = remaining_works(runs, now)
    want = np.array([r.remaining_work(now) for r in runs])
    assert got.tobytes() == want.tobytes()
