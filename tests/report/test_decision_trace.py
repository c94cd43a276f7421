"""The decision view's data (`dlsched.rl.decision_trace`): recorded for DL2, DeepRM and SCED²'s
Q-network runs with a report, changing no decision; the greedy policies' chosen action is their
top-scored legal one; a scheduler that is not a learned policy's loop records nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

import dlsched


def _records(result: dlsched.sim.Result) -> list[tuple[float, ...]]:
    return [(r.job_id, r.start_s, r.finish_s, r.rescales) for r in result.records]


@pytest.mark.parametrize(("workload", "scheduler"), [("dl2", "dl2"), ("deeprm", "deeprm")])
def test_trace_is_kept_and_changes_no_decision(workload: str, scheduler: str) -> None:
    plain = dlsched.simulate(workload, scheduler, 2, num_jobs=30)
    traced = dlsched.simulate(workload, scheduler, 2, num_jobs=30, record_events=True)
    assert _records(plain) == _records(traced)
    assert plain.decision_trace is None
    trace = traced.decision_trace
    assert trace is not None and trace["points"]
    steps = [s for p in trace["points"] for s in p["steps"]]
    assert steps and all(s["chosen"] == s["actions"][0] for s in steps)  # greedy: the arg-max
    assert all(abs(sum(s["p"]) - 1) < 0.02 or len(s["p"]) == trace["top"] for s in steps)
    if scheduler == "dl2":
        assert any(s["chosen"].startswith("job ") for s in steps)


def test_sched2_q_network_records_its_q_values() -> None:
    from dlsched.papers import sched2

    dqn = Path(sched2.__file__).parent / "policies" / "sched2_dqn"
    plain = dlsched.simulate("sched2", f"sched2:{dqn}", 1, num_jobs=40)
    traced = dlsched.simulate("sched2", f"sched2:{dqn}", 1, num_jobs=40, record_events=True)
    assert _records(plain) == _records(traced)
    trace = traced.decision_trace
    assert trace is not None
    steps = [s for p in trace["points"] for s in p["steps"]]
    assert any(s["chosen"].startswith("slot ") for s in steps)
    assert all(s["chosen"] == s["actions"][0] for s in steps)  # greedy on its Q-values


def test_a_rule_records_no_trace() -> None:
    result = dlsched.simulate("dl2", "drf", 1, num_jobs=10, record_events=True)
    assert result.decision_trace is None
