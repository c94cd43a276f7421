"""One number per result (issue 34): the restart cost is the workload's, ``simulate`` (library and
CLI) and ``reproduce pollux`` run the same thing, makespans are last completions, and a scheduler
on its own workload family is not warned about."""

from __future__ import annotations

import json
import logging

import pytest
from typer.testing import CliRunner

from dlsched import runner
from dlsched.api import simulate
from dlsched.cli import app
from dlsched.experiments.pollux import run_one
from dlsched.sim import RescaleCost
from dlsched.workloads.pollux import RESCALE, make_pollux


def _avg_jct(**kwargs: object) -> float:
    w = make_pollux(number=1, load=0.1, seed=0)
    return float(simulate(w, "pollux", **kwargs).summary()["avg_jct_s"])  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_workloads_restart_cost_is_used_and_an_option_sets_it() -> None:
    assert make_pollux(number=1).rescale == RESCALE
    default = _avg_jct()
    assert default == _avg_jct(rescale=RESCALE) == _avg_jct(restart_s=30.0)
    assert default > _avg_jct(rescale=RescaleCost())  # 1 s hot resizes: what the CLI charged
    assert default > _avg_jct(restart_s=0.0)
    with pytest.raises(ValueError, match="restart_s"):
        _avg_jct(restart_s=-1.0)


def _cli(*extra: str) -> dict[str, float]:
    args = ["simulate", "-w", "pollux", "-o", "number=1", "--load", "0.1", "-s", "pollux"]
    done = CliRunner().invoke(app, [*args, "--json", *extra], catch_exceptions=False)
    return json.loads(done.stdout)


@pytest.mark.slow
def test_cli_and_reproduce_print_the_same_number() -> None:
    row = run_one("Pollux", "pollux", "adaptive", 1, 0.1)
    summary = _cli()
    assert summary["avg_jct_s"] == pytest.approx(row["avg_jct_s"], rel=1e-12)
    assert summary["makespan_s"] == pytest.approx(row["makespan_s"], rel=1e-12)
    assert _cli("-o", "restart_s=60")["avg_jct_s"] > summary["avg_jct_s"]


def test_makespan_is_the_last_completion_not_the_simulators_end() -> None:
    w = make_pollux(number=1, jobs="tuned", load=0.1, seed=0)
    result = simulate(w, "tiresias")
    row = run_one("Tiresias", "tiresias", "tuned", 1, 0.1)
    finish, submit = result.column("finish_s"), result.column("submit_s")
    assert row["makespan_s"] == pytest.approx(float(finish.max() - submit.min()))
    assert row["makespan_s"] <= result.end_s


def test_own_workload_family_is_not_warned_about(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "_WARNED", set())
    with caplog.at_level(logging.WARNING, logger="dlsched.runner"):
        for name in ("pollux-6", "pollux-6-tuned", "pollux-6-tuned-batch", "philly:6214e9"):
            for scheduler in ("pollux", "tiresias", "optimus-oracle-allreduce"):
                runner.warn_if_not_made_for(scheduler, name)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2 and all("not 'philly'" in m for m in warned)  # pollux's two only
    assert runner.in_family("pollux-6", frozenset({"pollux"}))
    assert not runner.in_family("polluxish", frozenset({"pollux"}))
    assert runner.in_family("trace:/tmp/a.csv", frozenset({"philly", "trace"}))
