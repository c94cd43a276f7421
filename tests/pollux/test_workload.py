"""The pollux workload: the artifact's traces, seeded load variants, deterministic runs."""

from __future__ import annotations

import pytest

from dlsched.api import simulate
from dlsched.workloads.pollux import RESCALE, make_pollux
from dlsched.workloads.registry import make_workload


def test_trace_six_has_160_jobs_on_64_gpus() -> None:
    w = make_workload("pollux", number=6, jobs="tuned")
    assert len(w.jobs) == 160
    assert sum(s.gpu for s in w.servers) == 64
    first = w.jobs[0]  # cifar10-0,53,cifar10,6,2048
    assert (first.submit_time_s, first.model, first.num_workers) == (53.0, "cifar10@2048", 6)
    adaptive = make_pollux(number=6)
    assert adaptive.jobs[0].model == "cifar10" and adaptive.jobs[0].num_workers == 1


def test_load_variants_are_seeded() -> None:
    a = make_pollux(number=2, load=0.5, seed=3)
    b = make_pollux(number=2, load=0.5, seed=3)
    c = make_pollux(number=2, load=0.5, seed=4)
    assert len(a.jobs) == 80 and len(make_pollux(load=2.0).jobs) == 320
    assert a.jobs == b.jobs and a.jobs != c.jobs


@pytest.mark.parametrize("bad", [{"number": 9}, {"jobs": "auto"}, {"load": 0.0}])
def test_bad_options_say_what(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"pollux|load"):
        make_pollux(**bad)  # type: ignore[arg-type]


def test_same_seed_same_result() -> None:
    w = make_pollux(number=1, jobs="tuned", load=0.25, seed=1)
    runs = [simulate(w, "tiresias", rescale=RESCALE, seed=1) for _ in range(2)]
    assert [r.jct_s for r in runs[0].records] == [r.jct_s for r in runs[1].records]
    assert all(r.jct_s > 0 for r in runs[0].records)
