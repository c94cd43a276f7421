"""The choosing walk by counting tasks (`dlsched.schedulers.count_walk`) against the placing
walk of `dlsched.schedulers.ordered` (`FreeTracker` on a scratch copy), step for step."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from dlsched.core import Cluster, JobRun, JobSpec, Resources
from dlsched.schedulers.common import FreeTracker
from dlsched.schedulers.count_walk import (
    UniformTasks,
    count_walk,
    count_walk_merged,
    count_walk_split,
    tasks_free,
)
from dlsched.schedulers.srtf import Srtf
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


@settings(max_examples=300, deadline=None)
@given(
    jobs=st.lists(
        st.tuples(st.integers(0, 8), st.booleans(), st.sampled_from([0, 1, 2])),
        max_size=40,
    ),
    order=st.randoms(use_true_random=False),
    tasks=st.integers(0, 40),
)
def test_merged_walk_takes_the_steps_of_the_merge(
    jobs: list[tuple[int, bool, int]], order: Any, tasks: int
) -> None:
    """Waiting lanes and running jobs (unique keys, shapes shared between them) merged in key
    order, shapes marked dead skipped: `count_walk_merged` chooses as `count_walk` does."""
    keys = list(range(len(jobs)))
    order.shuffle(keys)
    shapes = {
        (n, kind): ((1.0, 0.0, 0.0), (0.0, 0.0, 0.0), n, kind)
        for n in range(9)
        for kind in range(3)
    }
    items = [
        (key, f"job{i}", shapes[(n, kind)], running)
        for i, ((n, running, kind), key) in enumerate(zip(jobs, keys, strict=True))
    ]
    running = sorted((key, job, shape) for key, job, shape, is_running in items if is_running)
    lanes: dict[Any, tuple[list[int], list[str]]] = {}
    for key, job, shape, is_running in sorted(items):
        if not is_running:
            lane = lanes.setdefault(shape, ([], []))
            lane[0].append(key)
            lane[1].append(job)
    merged = [(job, shape) for _, job, shape, _ in sorted(items)]
    dead: set[Any] = set()
    expected = count_walk(_walk(merged, dead), dead, tasks)
    lanes_list = [(shape, lane_keys, runs) for shape, (lane_keys, runs) in lanes.items()]
    assert count_walk_merged(lanes_list, running, tasks) == expected
    # the same walk told as changes: waiting jobs chosen, running jobs left out (by key)
    chosen = {job for job, _ in expected}
    waiting_ids = {job for _, job, _, is_running in items if not is_running}
    starting = [job for job, _ in expected if job in waiting_ids]
    left_out = [job for _, job, _ in running if job not in chosen]
    assert count_walk_split(lanes_list, running, tasks) == (starting, left_out)


_time = st.sampled_from([0.0, -0.0, 1.0, 5.0, 10.0]) | st.floats(0.0, 20.0)


@settings(max_examples=300, deadline=None)
@given(
    fields=st.lists(
        st.tuples(_time, _time, _time, st.sampled_from([0.0, 0.5, 1.0, 3.0]), _time),
        min_size=1,
        max_size=6,
    ),
    now=_time,
)
def test_srtf_keys_all_running_jobs_as_one_by_one(
    fields: list[tuple[float, float, float, float, float]], now: float
) -> None:
    """SRTF's running jobs keyed at once (builtins written out) equal `Srtf._key` bit for bit."""
    runs = [
        JobRun(
            gpu_job(i, 0.0, 10.0, 1),
            progress_s=progress,
            progress_time_s=since,
            paused_until_s=paused,
            rate=rate,
        )
        for i, (progress, since, paused, rate, _) in enumerate(fields)
    ]
    srtf = Srtf()
    expected = [srtf._key(run, now) for run in runs]
    assert [repr(k) for k in srtf._running_keys(runs, now)] == [repr(k) for k in expected]
