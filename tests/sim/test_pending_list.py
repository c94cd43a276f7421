"""The simulator's pending list against a plain sorted list (issue 18).

`PendingList` keeps started jobs before its head for a while (starting the head must not shift
a queue of tens of thousands of jobs), so the list schedulers see, `ReadOnlyList` with a start
offset, must read exactly like ``list(queue)`` whatever the offset.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched.sim.pending as pending_module
from dlsched.core import JobRun
from dlsched.core.view import ReadOnlyList
from dlsched.sim.pending import PendingList
from tests.helpers import gpu_job

SPECS = [gpu_job(i, float(i), 10.0, 1) for i in range(40)]


def _check_reads_like(view: ReadOnlyList, expected: list[JobRun]) -> None:
    assert len(view) == len(expected)
    assert list(view) == expected
    assert list(reversed(view)) == expected[::-1]
    assert view == expected
    for i in range(-len(expected) - 2, len(expected) + 2):
        if -len(expected) <= i < len(expected):
            assert view[i] is expected[i]
        else:
            try:
                view[i]
            except IndexError:
                pass
            else:
                raise AssertionError(f"index {i} of {len(expected)} did not raise")
    for sl in (
        slice(None),
        slice(1, None),
        slice(None, -1),
        slice(2, 5),
        slice(None, None, -1),
        slice(None, None, 2),
        slice(-3, None),
        slice(5, 2),
        slice(None, 0, -1),
    ):
        assert view[sl] == expected[sl], sl
    for run in expected:
        assert run in view
    outside = JobRun(gpu_job(999, 0.0, 1.0, 1))
    assert outside not in view


@settings(max_examples=150, deadline=None)
@given(
    ops=st.lists(st.tuples(st.booleans(), st.integers(0, 39), st.booleans()), max_size=120),
    compact_at=st.integers(1, 6),
)
def test_pending_list_reads_like_a_sorted_list(
    ops: list[tuple[bool, int, bool]], compact_at: int
) -> None:
    old = pending_module._COMPACT_AT
    pending_module._COMPACT_AT = compact_at  # compact often: every offset and compaction path
    try:
        queue = PendingList(SPECS)
        runs = {spec.job_id: JobRun(spec) for spec in SPECS}
        model: list[JobRun] = []
        logged: list[tuple[JobRun, bool]] = []
        for add, job_id, from_head in ops:
            if add:
                run = runs[job_id]
                if run in model:
                    continue
                queue.add(run)
                logged.append((run, True))
                model.append(run)
                model.sort(key=lambda r: r.job_id)
            elif model:
                run = model[0] if from_head else model[job_id % len(model)]
                queue.remove(run)
                logged.append((run, False))
                model.remove(run)
            assert list(queue) == model
            assert len(queue) == len(model)
            if model:
                assert queue[0] is model[0]
            _check_reads_like(queue.view(), model)
        assert queue.changes().log == tuple(logged)
    finally:
        pending_module._COMPACT_AT = old


def test_read_only_list_without_offset_is_the_list() -> None:
    runs = [JobRun(spec) for spec in SPECS[:5]]
    _check_reads_like(ReadOnlyList(runs), runs)
    _check_reads_like(ReadOnlyList(runs, 2), runs[2:])
    _check_reads_like(ReadOnlyList(runs, 5), [])
