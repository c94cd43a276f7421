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
from dlsched.experiments.parallel import CHUNK_CPU_S, GUIDED_SHARE, Dispatch, RunTask
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
def test_without_costs_every_run_goes_out_once_alone_in_order(
    seeds: int, schedulers: int, workers: int
) -> None:
    """A run of unknown cost may be long: it goes out in a chunk of its own, in the order given."""
    tasks = _tasks([f"s{i}" for i in range(schedulers)], seeds)
    assert _drain(Dispatch(tasks, workers)) == [[i] for i in range(len(tasks))]


@given(
    seeds=st.integers(1, 300),
    workers=st.integers(1, 64),
    costs=st.lists(st.floats(1e-4, 2.0), min_size=3, max_size=3),
)
@settings(max_examples=150, deadline=None)
def test_known_short_runs_share_chunks_that_shrink_and_stay_short(
    seeds: int, workers: int, costs: list[float]
) -> None:
    """Once every group's cost is known, chunks hold at most the guided count (the last: one
    run), and only runs shorter than `CHUNK_CPU_S` share one (the run that reaches it ends it)."""
    tasks = _tasks(["a", "b", "c"], seeds + 1)
    dispatch = Dispatch(tasks, workers)
    first = [dispatch.next_chunk() for _ in range(3)]
    assert first == [[0], [1], [2]]
    for i, cost in enumerate(costs):
        dispatch.done(i, cost)
    chunks = []
    while dispatch.left:
        guided = -(-dispatch.left // (GUIDED_SHARE * workers))
        chunks.append(chunk := dispatch.next_chunk())
        assert 1 <= len(chunk) <= guided
        expected = [costs[i % 3] for i in chunk]
        assert sum(expected[:-1]) < CHUNK_CPU_S
    assert sorted(i for chunk in chunks for i in chunk) == list(range(3, len(tasks)))
    assert len(chunks[-1]) == 1


def test_the_costliest_runs_go_out_first_once_their_cost_is_known() -> None:
    tasks = _tasks(["cheap", "dear", "middling", "unseen"], 10)
    dispatch = Dispatch(tasks, workers=1)
    first = [dispatch.next_chunk() for _ in range(4)]  # one by one, in the order given
    assert [tasks[i].scheduler for [i] in first] == ["cheap", "dear", "middling", "unseen"]
    for [i], cost in zip(first[:3], (0.01, 1.0, 0.1), strict=True):
        dispatch.done(i, cost)
    # "unseen" has no run back yet: it counts as the costliest; then dear, middling, cheap
    chunks = _drain(dispatch)
    order = [tasks[i].scheduler for chunk in chunks for i in chunk]
    assert order == ["unseen"] * 9 + ["dear"] * 9 + ["middling"] * 9 + ["cheap"] * 9
    # every run of 0.1 s or more (or of unknown cost) alone; 0.01 s runs two to a chunk
    assert [len(c) for c in chunks if tasks[c[0]].scheduler != "cheap"] == [1] * 27
    assert next(len(c) for c in chunks if tasks[c[0]].scheduler == "cheap") == 2


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
