"""Issue 31, point 3: the pieces of a sweep that scales — packed results, guided chunks, a
parent that builds the first workload before its workers fork."""

from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.experiments.packing import pack, unpack
from dlsched.experiments.parallel import GUIDED_SHARE, Dispatch, RunTask
from dlsched.runner import simulate
from dlsched.sim.metrics import Timeline


def _same_fields(a: object, b: object, skip: tuple[str, ...] = ()) -> None:
    """Every field equal and of the same type (a float stays a float, an int an int)."""
    assert type(a) is type(b)
    for name in a.__dataclass_fields__:  # type: ignore[attr-defined]
        if name in skip:
            continue
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, list):
            assert [type(v) for v in x] == [type(v) for v in y], name
        assert x == y or (x != x and y != y), name  # NaN is itself


def test_a_packed_result_comes_back_equal_field_for_field() -> None:
    result = simulate("dl2", "srtf", 3, num_jobs=30, record_events=True)
    back = unpack(pickle.loads(pickle.dumps(pack(result), pickle.HIGHEST_PROTOCOL)))
    _same_fields(back, result, skip=("event_log",))  # its clock stays in the worker
    for a, b in zip(back.records, result.records, strict=True):
        _same_fields(a, b)
        assert hash(a) == hash(b) and repr(a) == repr(b)
    with pytest.raises(dataclasses.FrozenInstanceError):  # rebuilt through its slots, still frozen
        back.records[0].jct_s = 0.0  # type: ignore[misc]
    _same_fields(back.timeline, result.timeline)
    assert back.summary().keys() == result.summary().keys()
    assert back.event_log is not None and result.event_log is not None
    _same_fields(back.event_log, result.event_log, skip=("clock",))


def test_columns_that_are_not_plain_floats_or_ints_travel_unchanged() -> None:
    import numpy as np

    result = simulate("deeprm", "sjf", 1, num_jobs=5)
    first, last = result.records[0], result.records[-1]
    result.records[0] = dataclasses.replace(first, submit_s=np.float64(first.submit_s))
    result.records[-1] = dataclasses.replace(last, job_id=2**70)  # beyond 64 bits
    result.timeline = Timeline(times=[0.0, 1], running=[1, 2])  # a mixed column
    back = unpack(pickle.loads(pickle.dumps(pack(result))))
    assert type(back.records[0].submit_s) is np.float64
    assert back.records[-1].job_id == 2**70
    assert [type(t) for t in back.timeline.times] == [float, int]
    assert back.records == result.records


def _tasks(schedulers: list[str], seeds: int) -> list[RunTask]:
    return [RunTask("dl2", name, seed) for seed in range(seeds) for name in schedulers]


def _drain(dispatch: Dispatch) -> list[list[int]]:
    chunks = []
    while dispatch.left:
        chunks.append(dispatch.next_chunk())
    return chunks


@given(seeds=st.integers(0, 600), schedulers=st.integers(1, 5), workers=st.integers(1, 64))
@settings(max_examples=150, deadline=None)
def test_guided_chunks_send_every_run_once_largest_first(
    seeds: int, schedulers: int, workers: int
) -> None:
    """Without costs, the runs go out in the order given, in chunks that shrink to one run."""
    tasks = _tasks([f"s{i}" for i in range(schedulers)], seeds)
    chunks = _drain(Dispatch(tasks, workers))
    assert [i for chunk in chunks for i in chunk] == list(range(len(tasks)))
    sizes = [len(chunk) for chunk in chunks]
    assert sizes == sorted(sizes, reverse=True) and all(s >= 1 for s in sizes)
    if tasks:
        assert sizes[0] == -(-len(tasks) // (GUIDED_SHARE * workers)) and sizes[-1] == 1


def test_the_costliest_runs_go_out_first_once_their_cost_is_known() -> None:
    tasks = _tasks(["cheap", "dear", "middling", "unseen"], 10)
    dispatch = Dispatch(tasks, workers=5)
    first = dispatch.next_chunk()  # 40 runs / (2 x 5): the first of each, in order
    assert [tasks[i].scheduler for i in first] == ["cheap", "dear", "middling", "unseen"]
    for i, cost in zip(first[:3], (0.01, 1.0, 0.1), strict=True):
        dispatch.done(i, cost)
    # "unseen" has no run back yet: it counts as the costliest; then dear, middling, cheap
    order = [tasks[i].scheduler for chunk in _drain(dispatch) for i in chunk]
    assert order == ["unseen"] * 9 + ["dear"] * 9 + ["middling"] * 9 + ["cheap"] * 9


def test_the_parent_builds_the_first_workload_before_the_fork() -> None:
    """DL2's speed tables are built in the parent (once) and inherited by the forked workers;
    the parent runs nothing itself."""
    probe = (
        "from dlsched.experiments.parallel import RunTask, run_in_processes\n"
        "from dlsched.models import measured_ps\n"
        "tasks = [RunTask('dl2', 'fifo', s, {'num_jobs': 8}) for s in (1, 2)]\n"
        "results = run_in_processes(tasks, 2, start_method='fork')\n"
        "print(measured_ps._model_table.cache_info().currsize > 0, len(results))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True 2", out.stderr
