"""The decision view's data (`dlsched.rl.decision_trace`): recorded for DL2 and DeepRM runs
with a report, changing no decision; the greedy policies' chosen action is their top-scored
legal one; a scheduler that is not a learned policy's loop records nothing."""

from __future__ import annotations

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


def test_a_rule_records_no_trace() -> None:
    result = dlsched.simulate("dl2", "drf", 1, num_jobs=10, record_events=True)
    assert result.decision_trace is None
