"""A trained policy run outside the setting its card names logs one notice; inside, none."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import dlsched
from dlsched import runner
from dlsched.papers.deeprm.net import DeepRMPolicyNet
from dlsched.papers.deeprm.state import DeepRMShape
from dlsched.rl.checkpoint import PolicyCard, read_card, save_checkpoint
from dlsched.rl.setting import differences

PAPERS = Path(dlsched.__file__).parent / "papers"


def test_rule_numbers_ranges_exact_values_and_unknown_names() -> None:
    trained = {"workload": "deeprm", "params": {"load": 1.3, "servers": [8, 20], "mix": "a"}}
    inside = {"load": 1.4, "servers": 20, "mix": "a", "other": 5}
    assert differences(trained, "deeprm", inside) == []
    assert differences(trained, "deeprm", {"load": 1.5}) == ["load 1.5 (trained 1.3)"]
    assert differences(trained, "deeprm", {"servers": 23}) == ["servers 23 (trained 8–20)"]
    assert differences(trained, "deeprm", {"servers": 7.1, "mix": "b"}) == [
        "mix b (trained a)",
        "servers 7.1 (trained 8–20)",
    ]
    assert differences(trained, "dl2", {"load": 9.0}) == ["workload dl2 (trained deeprm)"]
    assert differences({}, "deeprm", {"load": 9.0}) == []


def _notices(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "outside the setting" in r.getMessage()]


def _policy(tmp_path: Path, setting: dict[str, object]) -> str:
    shape = DeepRMShape(ranked=True)
    card = PolicyCard(
        algorithm="deeprm",
        workload="deeprm",
        shapes=shape.shapes(),
        hyperparams={"hidden": [20], "action_selection": "greedy"},
        trained_setting=setting,
    )
    save_checkpoint(tmp_path / "p", DeepRMPolicyNet(shape).state_dict(), card)
    return f"deeprm:{tmp_path / 'p'}"


def test_notice_fires_once_out_of_setting_and_not_in_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "_WARNED_SETTING", set())
    spec = _policy(
        tmp_path, {"workload": "deeprm", "params": {"load": [0.3, 1.9], "horizon_steps": 50}}
    )
    with caplog.at_level(logging.WARNING, logger="dlsched.runner"):
        dlsched.simulate("deeprm", spec, 1, load=1.3, horizon_steps=20)  # horizon differs
        dlsched.simulate("deeprm", spec, 2, load=1.3, horizon_steps=20)  # same: said once
        dlsched.simulate("deeprm", spec, 1, load=1.9, horizon_steps=52)  # inside
        dlsched.simulate("deeprm", spec, 1, load=2.5, horizon_steps=50)  # load differs
    assert _notices(caplog) == [
        "scheduler 'deeprm' was trained for deeprm with horizon_steps 50, load 0.3–1.9; this "
        "run has horizon_steps 20 (trained 50): it runs outside the setting it was trained for",
        "scheduler 'deeprm' was trained for deeprm with horizon_steps 50, load 0.3–1.9; this "
        "run has load 2.5 (trained 0.3–1.9): it runs outside the setting it was trained for",
    ]


def test_shipped_deeprm_policies_say_their_setting(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "_WARNED_SETTING", set())
    with caplog.at_level(logging.WARNING, logger="dlsched.runner"):
        dlsched.simulate("deeprm", "deeprm", 1, load=1.7)  # default policy, paper's setting
        dlsched.simulate("deeprm", "deeprm", 1, load=1.1, num_jobs=40)  # long jobsets too
        dlsched.simulate("deeprm", "deeprm:0.7", 1, load=0.7)  # paper policy, its setting
        assert _notices(caplog) == []
        dlsched.simulate("deeprm", "deeprm:0.7", 1, load=0.7, num_jobs=100)
    [notice] = _notices(caplog)
    assert "horizon_steps" in notice and "load" not in notice.partition("this run has")[2]


def test_dl2_card_names_its_training_range() -> None:
    setting = read_card(PAPERS / "dl2" / "policies" / "dl2").trained_setting
    assert setting["workload"] == "dl2"
    assert differences(setting, "dl2", {"servers": 13, "load": 1.0}) == []
    assert differences(setting, "dl2", {"servers": 40, "load": 1.0}) != []


def test_dl2_policy_says_when_the_cluster_is_outside_its_training_range(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "_WARNED_SETTING", set())
    with caplog.at_level(logging.WARNING, logger="dlsched.runner"):
        dlsched.simulate("dl2", "dl2", 1, servers=13, num_jobs=4)
        assert _notices(caplog) == []
        dlsched.simulate("dl2", "dl2", 1, servers=40, num_jobs=4)
    [notice] = _notices(caplog)
    assert "servers 40 (trained 2–20)" in notice


def test_shipped_sched2_says_when_it_runs_outside_its_setting(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: the shipped SCED²-L policy (a rule, not a network) said nothing on another
    cluster, load or workload."""
    monkeypatch.setattr(runner, "_WARNED_SETTING", set())
    small = {"horizon_s": 1.0}  # the notice comes before the run; one simulated second is enough
    with caplog.at_level(logging.WARNING, logger="dlsched.runner"):
        dlsched.simulate("sched2", "sched2", 1, **small)  # its setting
        assert _notices(caplog) == []
        dlsched.simulate("sched2", "sched2", 1, servers=30, load=0.5, **small)
        dlsched.simulate("philly:ee9e8c", "sched2", 1, max_jobs=20, **small)
        dlsched.simulate("sched2", "sched2:paper", 1, load=0.5, **small)  # the paper's DQN
    first, second, third = _notices(caplog)
    assert "load 0.5 (trained 1.8)" in first and "servers 30 (trained 15)" in first
    assert "workload philly:ee9e8c (trained sched2)" in second
    assert "load 0.5 (trained 1.8)" in third


def test_a_policy_trained_on_one_trace_is_compared_on_that_trace_only() -> None:
    trained = {"workload": "trace:mine.csv", "params": {"split": "0.6,0.2,0.2"}}
    assert differences(trained, "trace:mine.csv", {"split": "0.6,0.2,0.2", "part": "test"}) == []
    assert differences(trained, "trace:other.csv", {}) == [
        "workload trace:other.csv (trained trace:mine.csv)"
    ]
    assert differences({"workload": "philly", "params": {}}, "philly:ee9e8c", {}) == []
