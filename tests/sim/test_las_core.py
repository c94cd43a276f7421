"""The compiled LAS core (`dlsched.sim.las_core`) gives the simulator's per-job records,
totals and timeline, and so does its plain-Python reference, on random small fixed-GPU traces."""

from __future__ import annotations

import logging
import subprocess
import sys
from dataclasses import astuple
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.core import Arch, Cluster, JobSpec, Resources
from dlsched.models.locality import Locality
from dlsched.placement.pack import Pack
from dlsched.schedulers.las import Las
from dlsched.sim import SimConfig, las_core_run
from dlsched.sim.las_core_run import run, unsupported
from dlsched.sim.simulator import Simulator

MODELS = ("vgg-16", "alexnet", "transformer", "deepspeech")


def draw_jobs(draw: st.DrawFn, n: int, servers: int) -> list[JobSpec]:
    """``n`` fixed-size jobs of 1-16 GPUs (no more than ``servers`` 8-GPU servers hold; ties in
    submission included), in submission order of their index."""
    jobs = []
    for i in range(n):
        gpus = draw(st.sampled_from([1, 1, 2, 3, 4, 8, 16][: 5 + min(servers, 2)]))
        jobs.append(
            JobSpec(
                job_id=draw(st.integers(0, 10**6)) * 64 + i,
                submit_time_s=float(draw(st.integers(0, 30)) * 50),
                model=draw(st.sampled_from(MODELS)),
                arch=Arch.ALLREDUCE,
                total_work=float(draw(st.integers(1, 4000))) + draw(st.sampled_from([0.0, 0.25])),
                worker_demand=Resources(1.0, float(draw(st.integers(0, 4))), 0.0),
                num_workers=gpus,
                min_workers=gpus,
                max_workers=gpus,
            )
        )
    return jobs


@st.composite
def traces(draw: st.DrawFn) -> tuple[list[JobSpec], int, dict[str, Any]]:
    """Up to 40 jobs of 1-16 GPUs (ties in submission included) on 1-4 8-GPU servers, and the
    `SimConfig` keywords: a timeline spacing (s; None: the simulator's default, 600 s on these
    traces), a horizon (s; None: none; always one on 3.7 s ticks), which often stops a run with
    jobs unfinished, and scheduling on events and/or at periodic ticks (Blox's rounds: ticks
    only)."""
    servers = draw(st.integers(1, 4))
    n = draw(st.integers(1, 40))
    jobs = draw_jobs(draw, n, servers)
    interval_s = draw(st.sampled_from([None, None, 50.0, 0.1 * 37, 300.0]))
    # The simulator itself needs minutes for some long traces on 3.7 s ticks: those get a horizon.
    horizons = [900.0, 2500.0] if interval_s == 0.1 * 37 else [None, None, 900.0, 2500.0]
    config = {
        "timeline_step_s": draw(st.sampled_from([None, 1.0, 75.0])),
        "horizon_s": draw(st.sampled_from(horizons)),
        "interval_s": interval_s,
    }
    config["on_events"] = config["interval_s"] is None or draw(st.booleans())
    return jobs, servers, config


def _simulator(jobs: list[JobSpec], servers: int, **config: Any) -> Simulator:
    return Simulator(
        jobs,
        Cluster.homogeneous(servers, Resources(8.0, 32.0, 256.0)),
        Locality(gpus_per_server=8),
        Las(),
        Pack(),
        SimConfig(**{"on_events": True, **config}),
    )


def _summary(result: dlsched.Result) -> tuple[object, ...]:
    return (
        [astuple(r) for r in result.records],
        result.queued_s,
        result.events,
        result.decisions,
        result.end_s,
        result.gpu_util,
        result.cpu_util,
        result.jct_bound_s,
        astuple(result.timeline),
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


def test_simulate_uses_the_core_only_where_asked_and_supported() -> None:
    kw = {"workload": "philly:6214e9", "max_jobs": 120}
    python = dlsched.simulate(scheduler="las", core="python", **kw)
    auto = dlsched.simulate(scheduler="las", **kw)  # default: too small for the core
    compiled = dlsched.simulate(scheduler="las", core="compiled", **kw)
    assert "core" not in python.params and "core" not in auto.params
    assert compiled.params["core"] == "compiled LAS"
    assert _summary(compiled) == _summary(python) == _summary(auto)
    other = dlsched.simulate(scheduler="srtf", core="compiled", **kw)
    assert other.params["core"] == "python"
    with pytest.raises(ValueError, match="core must be"):
        dlsched.simulate(scheduler="las", core="numba", **kw)


def test_auto_takes_the_core_for_large_supported_runs_only(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    kw = {"workload": "philly:6214e9", "max_jobs": 120, "scheduler": "las"}
    monkeypatch.setattr(las_core_run, "AUTO_MIN_JOBS", 100)
    monkeypatch.setattr(las_core_run, "AUTO_MIN_JOBS_COLD", 200)
    monkeypatch.setattr(las_core_run, "compiles", lambda: True)  # as on a first use
    assert "core" not in dlsched.simulate(**kw).params  # compiling would cost more than it saves
    monkeypatch.setattr(las_core_run, "AUTO_MIN_JOBS_COLD", 100)
    with caplog.at_level(logging.INFO, logger="dlsched.sim.las_core_run"):
        auto = dlsched.simulate(**kw)
    assert auto.params["core"] == "compiled LAS"
    assert [r.message for r in caplog.records if "compiling the LAS core" in r.message]
    assert _summary(auto) == _summary(dlsched.simulate(**kw, core="python"))
    assert "core" not in dlsched.simulate(**kw, record_events=True).params  # not replayed
    assert "core" not in dlsched.simulate(**{**kw, "scheduler": "srtf"}).params


def test_cli_core_option_runs_the_compiled_core_and_says_so() -> None:
    import json

    from typer.testing import CliRunner

    from dlsched.cli import app

    base = ["simulate", "-w", "philly:6214e9", "-o", "max_jobs=120", "--json"]
    out = {}
    for scheduler, core in (
        ("las", "python"),
        ("las", "auto"),
        ("las", "compiled"),
        ("srtf", "compiled"),
    ):
        done = CliRunner().invoke(app, [*base, "-s", scheduler, "-o", f"core={core}"])
        assert done.exit_code == 0, done.output
        out[scheduler, core] = json.loads(done.output[done.output.index("{") :])
    assert out["las", "compiled"]["core"] == "compiled LAS"  # the progress display did not stop it
    assert out["las", "compiled"]["avg_jct_s"] == out["las", "python"]["avg_jct_s"]
    assert "core" not in out["las", "python"] and "core" not in out["las", "auto"]
    assert out["srtf", "compiled"]["core"] == "python"  # not replayed there, and said so


def test_compiles_says_when_the_next_run_would_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    def kernel(signatures: list[str], cache: object) -> None:
        fake = SimpleNamespace(signatures=signatures, _cache=cache)
        monkeypatch.setattr(las_core_run, "compiled_replay", lambda: fake)

    kernel(["loaded"], object())
    assert not las_core_run.compiles()  # already compiled in this process
    kernel([], object())  # numba's NullCache: no cache directory was writable
    assert las_core_run.compiles()
    for index in ({}, {"sig": "entry"}):  # numba's index: empty once the source changed
        kernel([], SimpleNamespace(_cache_file=SimpleNamespace(_load_index=lambda i=index: i)))
        assert las_core_run.compiles() == (not index)


def test_the_cores_are_imported_only_for_schedulers_they_replay() -> None:
    from dlsched import runner
    from dlsched.schedulers.fifo import Fifo

    modules = {module for module, _ in las_core_run._POLICIES}  # the classes the cores replay
    assert modules | {Fifo.__module__} == runner._CORE_MODULES
    code = (
        "import sys, dlsched\n"
        "dlsched.simulate('philly:6214e9', 'srtf', max_jobs=20)\n"
        "assert 'dlsched.sim.las_core_run' not in sys.modules, 'imported for srtf'\n"
        "gavel = dlsched.make_workload('gavel', num_jobs=12)  # Gavel's FIFO: no core\n"
        "dlsched.simulate(gavel, 'gavel-fifo-het')\n"
        "assert 'dlsched.sim.gavel_core_run' not in sys.modules, 'imported for gavel-fifo'\n"
        "dlsched.simulate('philly:6214e9', 'las', max_jobs=20)\n"
        "assert 'dlsched.sim.las_core_run' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
