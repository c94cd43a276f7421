"""Gavel's round mechanism: the fast path (`dlsched.papers.gavel.books`) decides as the plain
one at every scheduling point, for every policy, on heterogeneous clusters in Gavel's rounds and
on a homogeneous Philly cluster scheduled at every event."""

from __future__ import annotations

import dataclasses
import functools
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.core import ClusterView, Decision
from dlsched.papers.gavel import rounds
from dlsched.papers.gavel.books import prefix
from dlsched.papers.gavel.rounds import GavelRounds
from dlsched.placement import make_placement
from dlsched.schedulers.base import BaseScheduler
from dlsched.schedulers.registry import make_scheduler
from dlsched.sim import RescaleCost, SimConfig, Simulator
from dlsched.sim.simulator import SimulationStalled
from dlsched.workloads.base import Workload

POLICIES = [f"gavel-{p}{h}" for p in ("fifo", "las", "ftf", "makespan") for h in ("", "-het")]


class _Twin(BaseScheduler):
    """Runs the fast and the plain mechanism on every view; fails where they differ."""

    preemptive = True

    def __init__(self, policy: str) -> None:
        fast, plain = make_scheduler(policy), make_scheduler(policy)
        assert isinstance(fast, GavelRounds) and isinstance(plain, GavelRounds)
        plain.plain = True
        self.fast, self.plain, self.name, self.points = fast, plain, policy, 0

    def reset(self) -> None:
        self.fast.reset()
        self.plain.reset()

    def decide(self, view: ClusterView) -> Decision:
        fast, plain = self.fast.decide(view), self.plain.decide(view)
        assert list(fast.targets.items()) == list(plain.targets.items()), (self.points, view.now_s)
        self.points += 1
        return fast


def _run(workload: Workload, policy: str, whole_order: int = rounds._WHOLE_ORDER) -> int:
    """Scheduling points of ``workload`` under both mechanisms of ``policy`` (``whole_order``:
    the fast path sorts each type's whole order up to this many active jobs, else prefixes)."""
    with mock.patch.object(rounds, "_WHOLE_ORDER", whole_order):
        return _run_twin(workload, policy)


def _run_twin(workload: Workload, policy: str) -> int:
    twin = _Twin(policy)
    sim = Simulator(
        workload.jobs,
        workload.make_cluster(),
        workload.model,
        twin,
        make_placement(workload.placement),
        SimConfig(
            interval_s=workload.interval_s,
            on_events=workload.on_events,
            rescale=workload.rescale or RescaleCost(),
        ),
    )
    try:
        while sim.next_point() is not None:
            sim.apply(twin.decide(sim.view()))
    except SimulationStalled:  # a job no type can run (both paths agreed up to here)
        pass
    except ValueError as error:  # the same, found by finish-time fairness's LP
        if "no throughput on any GPU type" not in str(error):
            raise
    return twin.points


@functools.cache
def _philly() -> Workload:
    from dlsched.workloads.registry import make_workload

    return make_workload("philly:6214e9", seed=0)


@settings(max_examples=10, deadline=None)
@given(
    policy=st.sampled_from(POLICIES),
    seed=st.integers(0, 10_000),
    jobs=st.integers(2, 30),
    cluster=st.sampled_from(["v100:2x4,k80:1x4", "v100:2x4,p100:1x4,k80:2x2", "k80:2x4"]),
    rate=st.sampled_from([6.0, 30.0, 200.0]),
    spread=st.sampled_from([0.0, 0.3]),
    every_event=st.booleans(),
    whole_order=st.sampled_from([0, rounds._WHOLE_ORDER]),
)
def test_fast_rounds_decide_as_the_plain_ones_on_heterogeneous_clusters(
    policy: str,
    seed: int,
    jobs: int,
    cluster: str,
    rate: float,
    spread: float,
    every_event: bool,
    whole_order: int,
) -> None:
    from dlsched.papers.gavel.workload import make_gavel

    workload = make_gavel(
        seed=seed,
        num_jobs=jobs,
        jobs_per_hour=rate,
        cluster=cluster,
        multi_gpu=True,
        speed_spread=spread,
    )
    if every_event:
        workload = dataclasses.replace(workload, on_events=True)
    assert _run(workload, policy, whole_order) > 0


@settings(max_examples=12, deadline=None)
@given(
    policy=st.sampled_from(POLICIES),
    start=st.integers(0, 40_000),
    jobs=st.integers(5, 120),
    servers=st.integers(1, 3),
    whole_order=st.sampled_from([0, rounds._WHOLE_ORDER]),
)
def test_fast_rounds_decide_as_the_plain_ones_on_a_homogeneous_philly_cluster(
    policy: str, start: int, jobs: int, servers: int, whole_order: int
) -> None:
    philly = _philly()
    chosen = philly.jobs[start : start + jobs]
    t0 = chosen[0].submit_time_s
    shifted = tuple(
        dataclasses.replace(j, submit_time_s=j.submit_time_s - t0, total_work=j.total_work / 50)
        for j in chosen
    )
    workload = dataclasses.replace(philly, jobs=shifted, servers=philly.servers[:servers])
    assert workload.server_types is None and workload.interval_s is None
    assert _run(workload, policy, whole_order) > 0


@settings(max_examples=200, deadline=None)
@given(
    data=st.lists(
        st.tuples(st.sampled_from([0.0, 1.0, 2.5]), st.sampled_from([-1.0, 0.0, 3.0])),
        min_size=1,
        max_size=60,
    ),
    k=st.integers(1, 70),
    mask=st.integers(0, 2**60),
)
def test_prefix_is_the_start_of_the_full_order(
    data: list[tuple[float, float]], k: int, mask: int
) -> None:
    first = np.array([a for a, _ in data])
    second = np.array([b for _, b in data])
    ids = np.arange(len(data))[::-1].copy()
    cand = np.array([i for i in range(len(data)) if mask >> i & 1], dtype=np.intp)
    keys = (first, second, ids)
    full = cand[np.lexsort((ids[cand], second[cand], first[cand]))]
    assert prefix(keys, cand, k).tolist() == full[:k].tolist()
