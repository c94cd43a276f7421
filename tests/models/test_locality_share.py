"""Every result says which speed model was in force, and the locality model's cross-server
slowdown can be switched off to see how much of a result comes from it (issue 34, point 4)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import dlsched
from dlsched.cli import app


def test_the_speed_model_is_recorded_and_the_slowdown_can_be_switched_off() -> None:
    on = dlsched.simulate("sched2", "fifo", seed=1)
    off = dlsched.simulate("sched2", "fifo", seed=1, cross_server_slowdown=False)
    assert on.summary()["speed_model"] == "locality: cross-server slowdown on (SCED² Fig. 1)"
    assert off.summary()["speed_model"] == "locality: cross-server slowdown off"
    assert off.summary()["avg_jct_s"] < 0.5 * on.summary()["avg_jct_s"]  # 7,544 vs 30,940 s


def test_other_speed_models_are_named_and_unchanged() -> None:
    on = dlsched.simulate("deeprm", "sjf", seed=3)
    off = dlsched.simulate("deeprm", "sjf", seed=3, cross_server_slowdown=False)
    assert on.summary()["speed_model"] == "fixed"
    assert [r.jct_s for r in on.records] == [r.jct_s for r in off.records]


def test_cli_option() -> None:
    args = ["simulate", "-w", "sched2", "-s", "fifo", "-o", "num_jobs=40", "--json"]
    done = CliRunner().invoke(app, [*args, "-o", "cross_server_slowdown=false"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["speed_model"] == "locality: cross-server slowdown off"


def test_cli_repack_option_is_recorded_and_off_by_default() -> None:
    args = ["simulate", "-w", "philly:ee9e8c", "-s", "fifo", "-o", "max_jobs=300", "--json"]
    runs = [CliRunner().invoke(app, [*args, *extra]) for extra in ([], ["-o", "repack=true"])]
    assert all(done.exit_code == 0 for done in runs), runs[-1].output
    off, on = (json.loads(done.stdout) for done in runs)
    assert off["repack"] == "off"
    assert on["repack"].startswith("on (") and on["repack"] != "on (0 moves)"
    assert on["avg_jct_s"] != off["avg_jct_s"]
