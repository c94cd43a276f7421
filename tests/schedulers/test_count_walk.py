"""The choosing walk by counting tasks (`dlsched.schedulers.count_walk`) against the placing
walk of `dlsched.schedulers.ordered` (`FreeTracker` on a scratch copy), step for step."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from dlsched.core import Cluster, JobSpec, Resources
from dlsched.schedulers.common import FreeTracker
from dlsched.schedulers.count_walk import UniformTasks, count_walk, tasks_free
from tests.helpers import gpu_job


def _walk(items: list[tuple[int, Any]], dead: set[Any]) -> Iterator[tuple[int, Any]]:
    """``items`` in order, skipping shapes the loop marks dead (as the queue's merge does)."""
    for index, shape in items:
        if shape not in dead:
            yield index, shape


def _placing_walk(
    rows: list[tuple[float, float, float]], spec: JobSpec, items: list[tuple[int, Any]]
) -> tuple[list[int], set[Any]]:
    """`ordered._choose_with_memo`'s steps without the memo: exceeds, else take, else no room."""
    cluster = Cluster.homogeneous(len(rows), Resources(gpu=1, cpu=1, mem=1))
    tracker = FreeTracker.from_rows(cluster, rows)
    free = [sum(column) for column in zip(*rows, strict=True)]
    wd = spec.worker_demand.as_tuple()
    chosen: list[int] = []
    dead: set[Any] = set()
    for index, shape in _walk(items, dead):
        n = shape[2]
        need = (wd[0] * n, wd[1] * n, wd[2] * n)
        if any(need[r] > free[r] + 1e-9 for r in range(3)):
            dead.add(shape)
        elif tracker.take(spec, n, 0):
            chosen.append(index)
            free = [free[r] - need[r] for r in range(3)]
        else:
            dead.add(shape)
    return chosen, dead


_whole = st.integers(0, 64).map(float)
_odd = st.sampled_from([0.5, 1.5, 2.25, 7.999999, 1e-12, 2.0**31, 2.0**40 + 1])
_row = st.tuples(_whole, _whole, _whole) | st.tuples(_whole | _odd, _whole | _odd, _whole | _odd)


@settings(max_examples=400, deadline=None)
@given(
    rows=st.lists(_row, min_size=1, max_size=6),
    need=st.tuples(
        st.sampled_from([0.0, 1.0, 1.0, 2.0, 3.0, 0.5]),
        st.sampled_from([0.0, 1.0, 4.0, 3.0, 3.0, 0.25]),
        st.sampled_from([0.0, 8.0, 5.0, 5.0, 5.0, 2.0**21]),
    ),
    sizes=st.lists(st.integers(0, 20), max_size=30),
)
def test_counting_walk_chooses_as_the_placing_walk(
    rows: list[tuple[float, float, float]], need: tuple[float, float, float], sizes: list[int]
) -> None:
    spec = gpu_job(0, 0.0, 1.0, 1)
    spec = (
        JobSpec(
            0,
            0.0,
            "toy",
            spec.arch,
            1.0,
            Resources(*need),
            num_workers=1,
            min_workers=1,
            max_workers=1,
        )
        if any(x > 0 for x in need)
        else spec
    )
    need = spec.worker_demand.as_tuple()
    shapes = {n: (need, (0.0, 0.0, 0.0), n, 0) for n in set(sizes)}
    items = [(i, shapes[n]) for i, n in enumerate(sizes)]
    uniform = UniformTasks()
    for shape in shapes.values():
        uniform.note(shape)
    tasks = tasks_free(rows, need) if uniform.need is not None else None
    if tasks is None:
        return  # no exact count: the placing walk runs
    event("counted")
    dead: set[Any] = set()
    counted = [index for index, _ in count_walk(_walk(items, dead), dead, tasks)]
    assert (counted, dead) == _placing_walk(rows, spec, items)


def test_the_count_is_refused_where_it_would_not_be_exact() -> None:
    need = (1.0, 4.0, 32.0)
    assert tasks_free([(8.0, 32.0, 256.0), (3.0, 32.0, 64.0)], need) == 8 + 2
    assert tasks_free([(8.0, 31.5, 256.0)], need) is None  # fractional: placements decide
    assert tasks_free([(8.0, 32.0, 2.0**31)], need) is None  # too large for the proof
    assert tasks_free([(8.5, 32.0, 256.0)], (0.0, 4.0, 32.0)) == 8  # unused resource


def test_uniform_tasks_need_one_demand_and_no_ps() -> None:
    need = (1.0, 4.0, 32.0)
    uniform = UniformTasks()
    assert uniform.need is None  # nothing noted
    uniform.note((need, (0.0, 0.0, 0.0), 4, 0))
    uniform.note((need, (0.0, 0.0, 0.0), 1, 0))
    assert uniform.need == need
    uniform.note((need, (1.0, 0.0, 0.0), 1, 1))  # a PS
    assert uniform.need is None
    uniform.note((need, (0.0, 0.0, 0.0), 1, 0))
    assert uniform.need is None  # for good, until cleared
    for other in [(1.0, 4.0, 16.0), (0.5, 4.0, 32.0), (0.0, 0.0, 0.0)]:
        uniform.clear()
        uniform.note((need, (0.0, 0.0, 0.0), 1, 0))
        uniform.note((other, (0.0, 0.0, 0.0), 1, 0))
        assert uniform.need is None
