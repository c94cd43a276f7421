"""Every registered scheduler on random small workloads of its setting.

Invariants: no server is ever over-allocated, every job finishes exactly once, the same seed gives
identical per-job results (the same scheduler instance run twice: `reset` must clear its state),
and a scheduler not labelled an oracle never reads true speeds (its views carry a spy oracle).

The registry is iterated, so schedulers registered later are covered automatically; a learned
scheduler whose factory fails for want of a checkpoint is skipped, saying so, and one whose
policy was made for another cluster size is run on its workload's default cluster instead of
the small one.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.core import Allocation, JobSpec
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import make_scheduler, schedulers
from dlsched.workloads.base import Workload
from dlsched.workloads.hetero import with_types
from dlsched.workloads.registry import make_workload
from tests.schedulers.helpers import checked_run

GENERATED = ("dl2", "deeprm", "sched2", "kubeflow", "pollux", "gavel")
"""Generated workloads a scheduler's setting can name (traces are tested elsewhere)."""

SMALL = {
    "dl2": {"servers": 2, "num_jobs": 12},
    "deeprm": {"num_jobs": 20},
    "sched2": {"servers": 2, "num_jobs": 25},
    "kubeflow": {"servers": 2, "num_jobs": 20},
    "pollux": {"servers": 2, "num_jobs": 12},
    "gavel": {
        "servers": 1,
        "num_jobs": 12,
        "cluster": "v100:1x4,p100:1x4,k80:1x4",
        "round_s": 7200,
    },
}


NO_CHECKPOINT = re.compile(r"checkpoint|shipped polic|no (trained )?polic", re.IGNORECASE)
"""How a learned scheduler's factory says it has no trained policy to load."""


CLUSTER_SHAPE = re.compile(r"servers|cluster", re.IGNORECASE)
"""How a learned policy says it was made for another cluster size."""


def workloads_for(setting: str) -> list[str]:
    """The generated workloads a setting names; every one for ``any`` or when none is named."""
    named = [w for w in GENERATED if re.search(rf"\b{w}\b", setting)]
    if not named or re.search(r"\bany\b", setting):
        return list(GENERATED)
    return named


SLOW_CASES = {"offline-rl-dl2", "pollux-pollux"}
"""The costliest cases (several seconds each): marked slow, so `make test` runs them and the unit
tier (`make test-fast`) does not."""

CASES = [
    pytest.param(
        name,
        workload,
        id=f"{name}-{workload}",
        marks=[pytest.mark.slow] if f"{name}-{workload}" in SLOW_CASES else [],
    )
    for name, entry in schedulers().items()
    for workload in workloads_for(entry.setting)
]


def build(name: str) -> Scheduler:
    try:
        return make_scheduler(name)
    except (OSError, ValueError) as err:
        if NO_CHECKPOINT.search(str(err)):
            pytest.skip(f"{name}: no checkpoint ({err})")
        raise


def spy(calls: list[int]):
    def speed(spec: JobSpec, alloc: Allocation) -> float:
        calls.append(spec.job_id)
        return 1.0

    return speed


def test_every_setting_maps_to_a_workload():
    assert workloads_for("elastic PS (dl2); fixed-GPU (sched2, philly, trace)") == ["dl2", "sched2"]
    assert workloads_for("any") == list(GENERATED)
    assert len(CASES) >= len(schedulers())


@pytest.mark.parametrize(("name", "workload_name"), CASES)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), load=st.sampled_from([0.5, 1.0, 2.0]))
def test_scheduler_keeps_invariants_on_random_small_workloads(name, workload_name, seed, load):
    scheduler = build(name)
    workload: Workload = make_workload(workload_name, seed=seed, load=load, **SMALL[workload_name])
    oracle = bool(getattr(scheduler, "is_oracle", False))
    calls: list[int] = []
    try:
        first, finished = checked_run(workload, scheduler, seed, oracle_for_all=spy(calls))
    except ValueError as err:
        # a learned policy may be built for one cluster shape: rerun on the workload's own size
        learned = not type(scheduler).__module__.startswith("dlsched.schedulers.")
        if not (learned and CLUSTER_SHAPE.search(str(err))):
            raise
        size = {"num_jobs": SMALL[workload_name]["num_jobs"]}
        workload = make_workload(workload_name, seed=seed, load=load, **size)
        scheduler = build(name)
        calls.clear()
        first, finished = checked_run(workload, scheduler, seed, oracle_for_all=spy(calls))
    if not oracle:
        assert not calls, f"{name} read true speeds but is not labelled an oracle"
    assert sorted(finished) == sorted(j.job_id for j in workload.jobs)
    assert first.num_jobs == len(first.records) == len(workload.jobs)
    again, _ = checked_run(workload, scheduler, seed, oracle_for_all=spy([]))
    assert again.records == first.records, f"{name} is not deterministic under a seed"


HETERO_TYPES = ("v100", "k80")


@pytest.mark.parametrize(
    ("name", "workload_name"),
    [case for case in CASES if f"{case.values[0]}-{case.values[1]}" not in SLOW_CASES],
)
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000))
def test_scheduler_keeps_invariants_on_a_heterogeneous_cluster(name, workload_name, seed):
    """The same invariants with the workload's servers alternately V100 and K80 servers: every
    policy runs there (type-agnostic unless taught otherwise), reading no true speed."""
    scheduler = build(name)
    workload = make_workload(workload_name, seed=seed, **SMALL[workload_name])
    if workload.server_types is None:
        types = [HETERO_TYPES[i % 2] for i in range(len(workload.servers))]
        workload = with_types(workload, types, seed=seed)
    oracle = bool(getattr(scheduler, "is_oracle", False))
    calls: list[int] = []
    try:
        result, finished = checked_run(workload, scheduler, seed, oracle_for_all=spy(calls))
    except ValueError as err:
        if type(scheduler).__module__.startswith("dlsched.schedulers.") or not (
            CLUSTER_SHAPE.search(str(err))
        ):
            raise
        pytest.skip(f"{name}: a learned policy made for another cluster ({err})")
    if not oracle:
        assert not calls, f"{name} read true speeds but is not labelled an oracle"
    assert sorted(finished) == sorted(j.job_id for j in workload.jobs)
    assert result.num_jobs == len(result.records) == len(workload.jobs)
