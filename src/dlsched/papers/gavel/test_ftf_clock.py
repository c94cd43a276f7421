"""Finish-time fairness's per-job books on arrays (`ftf_clock`) against the plain references
(a dict per job, a call per run)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.core import Arch, JobSpec, Resources
from dlsched.papers.gavel import ftf_clock
from dlsched.papers.gavel.ftf_clock import IsolatedClock, PlainIsolatedClock, job_arrays


@st.composite
def recomputes(draw: st.DrawFn) -> list[tuple[list[int], list[float], list[float], bool]]:
    """Up to 12 recomputes, each: the active jobs' ids (from a pool of 12, any order, jobs
    leaving and coming back), their remaining work and isolated throughputs, and whether the
    allocation got as far as remembering them (False: it raised in between)."""
    steps = []
    for _ in range(draw(st.integers(1, 12))):
        ids = draw(st.lists(st.integers(0, 11), unique=True, max_size=12))
        work = st.floats(0.0, 1e7, allow_subnormal=False)
        left = [draw(work) for _ in ids]
        iso = [draw(st.floats(1e-6, 10.0)) for _ in ids]
        steps.append((ids, left, iso, draw(st.integers(0, 5)) > 0))
    return steps


@settings(max_examples=200, deadline=None)
@given(steps=recomputes())
def test_isolated_clock_gives_the_plain_clocks_floats(
    steps: list[tuple[list[int], list[float], list[float], bool]],
) -> None:
    plain, fast = PlainIsolatedClock(), IsolatedClock()
    for ids, left, iso, remembered in steps:
        keys = np.array(ids, dtype=np.int64)
        remaining, rates = np.array(left, dtype=np.float64), np.array(iso, dtype=np.float64)
        with np.errstate(all="ignore"):
            want, got = plain.advance(keys, remaining), fast.advance(keys, remaining)
        assert want.tobytes() == got.tobytes()  # bit for bit, signs of zeros included
        if remembered:
            plain.remember(keys, remaining, rates)
            fast.remember(keys, remaining, rates)


def test_isolated_clock_adds_the_work_done_over_the_last_isolated_rate() -> None:
    clock = IsolatedClock()
    ids = np.array([7, 3], dtype=np.int64)
    assert clock.advance(ids, np.array([10.0, 4.0])).tolist() == [0.0, 0.0]
    clock.remember(ids, np.array([10.0, 4.0]), np.array([2.0, 0.5]))
    later = np.array([3, 9, 7], dtype=np.int64)  # 9 arrives; 7 and 3 did 4 and 1 units
    assert clock.advance(later, np.array([3.0, 5.0, 6.0])).tolist() == [2.0, 0.0, 2.0]


def test_job_arrays_reads_run_by_run_without_a_fast_path() -> None:
    class Spec:
        def __init__(self, submit: float) -> None:
            self.submit_time_s = submit

    class Run:
        def __init__(self, job_id: int, submit: float, left: float) -> None:
            self.job_id, self.spec, self._left = job_id, Spec(submit), left

        def remaining_work(self, now_s: float) -> float:
            return self._left

    runs = [Run(5, 10.0, 3.0), Run(2, 40.0, 0.0)]
    ids, remaining, since = job_arrays(runs, 100.0)  # type: ignore[arg-type]
    assert (ids.tolist(), remaining.tolist(), since.tolist()) == ([5, 2], [3.0, 0.0], [90.0, 60.0])


def test_job_arrays_of_the_cores_runs_are_each_runs() -> None:
    from dlsched.sim import gavel_core as core
    from dlsched.sim.gavel_core_run import _Runs

    specs = [
        JobSpec(40 + i, 10.0 * i, "m", Arch.ALLREDUCE, 500.0, Resources(1.0)) for i in range(4)
    ]
    jf = np.zeros((12, 4))
    jf[core.PROGRESS], jf[core.RATE] = [0.0, 100.0, 499.0, 3.0], [1.0, 0.0, 2.0, 0.5]
    jid = np.array([s.job_id for s in specs], dtype=np.int64)
    submit = np.array([s.submit_time_s for s in specs])
    total = np.array([s.total_work for s in specs])
    runs: Any = _Runs(specs, np.array([3, 0, 2]), jf, total, jid, submit)  # reads as JobRuns
    fast = job_arrays(runs, np.float64(50.0))
    plain = job_arrays(runs, np.float64(50.0), plain=True)
    assert [a.tobytes() for a in fast] == [a.tobytes() for a in plain]
    assert fast[0].tolist() == [43, 40, 42] and fast[2].tolist() == [20.0, 50.0, 30.0]


@settings(max_examples=100, deadline=None)
@given(
    known=st.lists(st.integers(0, 60), unique=True, max_size=30),
    ids=st.lists(st.integers(0, 60), unique=True, max_size=30),
    offset=st.sampled_from([0, 10**9]),
)
def test_match_by_table_is_match_by_sorting(known: list[int], ids: list[int], offset: int) -> None:
    """The id table (small ids) and the sorted search (ids far above their number) agree."""
    a, b = np.array(known, dtype=np.int64) + offset, np.array(ids, dtype=np.int64) + offset
    if not len(a):
        return
    table = ftf_clock._dense_match(a, b)
    assert (table is None) == (offset > 0)
    order = np.argsort(a, kind="stable")
    at = np.searchsorted(a[order], b)
    at[at == len(a)] = 0
    found = order[at]
    was = a[found] == b
    got = ftf_clock._match(a, b)
    assert got[0].tolist() == was.tolist() and got[1].tolist() == found[was].tolist()
    if table is not None:
        assert table[0].tolist() == was.tolist() and table[1].tolist() == found[was].tolist()
