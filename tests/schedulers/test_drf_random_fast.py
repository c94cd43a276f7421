"""DRF's and Random's fast paths decide exactly as their plain paths, at every point.

`Drf` walks a kept arrival-order queue (counting tasks where that is exact) when no active job
can grow, and `RandomOrder` walks its permutation by shapes (`PendingShapes`); each keeps its
plain path (``fast=False``: DRF's share heap over every active job, Random's visit of every
job). `Twin` asks both at every point of one run, on the same view, and fails on the first
point where they differ; the run goes on with the plain decision. The workloads keep long
queues on a small cluster (tens of jobs waiting), with fixed-size GPU jobs, CPU-heavy workers
(where tasks sit decides what fits), fractional demands (no exact count), fixed and elastic PS
jobs, ties in submission times, slotted and event-driven points, and a driver that skips points
or tells no changes at some (the kept state must then be rebuilt from the view).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.core import Arch, ClusterView, Decision, JobSpec, Resources
from dlsched.core.decision import is_suspension
from dlsched.placement import make_placement
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.drf import Drf
from dlsched.schedulers.random_policy import RandomOrder
from dlsched.sim import SimConfig, Simulator
from tests.helpers import LinearModel, gpu_job, small_cluster


def _starts(decision: Decision, running: set[int]) -> list[tuple[int, Any]]:
    """The targets of jobs not running now, in decision order (the order they are placed)."""
    return [(job, t) for job, t in decision.targets.items() if job not in running]


def same_decision(fast: Decision, plain: Decision, view: ClusterView) -> bool:
    """Whether the engine does the same with both: the same whole desired state, and the jobs
    that start placed in the same order."""
    running = {run.job_id for run in view.running}
    whole = fast.whole(view.running)
    starts = [(j, t) for j, t in _starts(fast, running) if not is_suspension(t)]
    return whole.targets == plain.targets and starts == _starts(plain, running)


class Twin(BaseScheduler):
    """Asks the fast and the plain scheduler at every point and checks they agree."""

    preemptive: ClassVar[bool] = False

    def __init__(self, fast: Scheduler, plain: Scheduler, skip: int = 0) -> None:
        self.fast, self.plain, self.skip = fast, plain, skip
        self.name = plain.name
        self.preemptive = plain.preemptive  # type: ignore[misc]
        self.points = 0
        self.compared = 0

    def reset(self) -> None:
        self.fast.reset()
        self.plain.reset()
        self.points = 0

    def decide(self, view: ClusterView) -> Decision:
        self.points += 1
        plain = self.plain.decide(view)
        if self.skip and self.points % self.skip == 0:
            # the fast one misses this point and its queue changes (Random's draw still made)
            if isinstance(self.fast, RandomOrder) and view.pending:
                self.fast.rng.permutation(len(view.pending))
            return plain
        if self.skip and self.points % self.skip == 1:
            view = dataclasses.replace(view, changes=None)  # a backend that tells no changes
        fast = self.fast.decide(view)
        assert same_decision(fast, plain, view), (
            f"point {self.points} at {view.now_s} s: fast {fast.targets} "
            f"(changes only: {fast.changes_only}), plain {plain.targets}"
        )
        self.compared += 1
        return plain


def _jobs(seed: int, n: int, kind: str) -> list[JobSpec]:
    """Random jobs, many submitted at the same few times (long queues)."""
    rng = np.random.default_rng(seed)
    jobs: list[JobSpec] = []
    for i in range(n):
        submit = float(rng.integers(0, 6)) * 200.0
        duration = float(rng.choice([50.0, 100.0, 300.0, 1000.0]))
        job = gpu_job(i, submit, duration, int(rng.choice([1, 1, 1, 2, 3, 4, 8])))
        roll = rng.random()
        if kind == "cpu-heavy" and job.num_workers <= 4 and roll < 0.5:
            job = dataclasses.replace(job, worker_demand=Resources(gpu=1, cpu=6, mem=4))
        elif kind == "fractional" and roll < 0.5:
            job = dataclasses.replace(job, worker_demand=Resources(gpu=1, cpu=1.5, mem=4.25))
        elif kind in ("fixed-ps", "elastic-ps") and roll < 0.3:
            workers, ps = int(rng.integers(1, 4)), int(rng.integers(1, 3))
            ps = 1 if kind == "fixed-ps" else ps  # DRF's first bundle has one PS
            job = JobSpec(
                i,
                submit,
                "toy",
                Arch.PS,
                float(rng.integers(1, 4)) * 5,
                Resources(gpu=1, cpu=2, mem=8),
                Resources(cpu=2, mem=8),
                num_workers=workers,
                num_ps=ps,
                min_workers=workers,
                max_workers=workers if kind == "fixed-ps" else 8,
                max_ps=1 if kind == "fixed-ps" else 4,
            )
        jobs.append(job)
    return jobs


def _run(jobs: list[JobSpec], twin: Twin, servers: int, **config: Any) -> list[tuple[Any, ...]]:
    sim = Simulator(
        jobs,
        small_cluster(servers),
        LinearModel(),
        twin,
        make_placement("pack"),
        SimConfig(max_idle_retries=20, **config),
    )
    return [dataclasses.astuple(r) for r in sim.run().records]


def _pair(policy: str, seed: int) -> tuple[Scheduler, Scheduler]:
    if policy == "drf":
        return Drf(), Drf(fast=False)
    return RandomOrder(seed), RandomOrder(seed, fast=False)


KINDS = ["gpu", "cpu-heavy", "fractional", "fixed-ps", "elastic-ps"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=st.sampled_from(["drf", "random"]),
    seed=st.integers(0, 10_000),
    n=st.integers(1, 120),
    servers=st.integers(2, 3),
    kind=st.sampled_from(KINDS),
    slotted=st.booleans(),
    skip=st.sampled_from([0, 0, 3]),
)
def test_fast_path_decides_as_the_plain_one_at_every_point(
    policy: str, seed: int, n: int, servers: int, kind: str, slotted: bool, skip: int
) -> None:
    fast, plain = _pair(policy, seed)
    twin = Twin(fast, plain, skip)
    config: dict[str, Any] = {"interval_s": 150.0} if slotted else {}
    _run(_jobs(seed, n, kind), twin, servers, **config)
    assert twin.compared > 0


@pytest.mark.parametrize("policy", ["drf", "random"])
def test_fast_path_is_taken_and_the_run_is_the_plain_run(policy: str) -> None:
    """On a long queue of fixed-size jobs the fast paths really run (DRF by counting tasks,
    Random following the queue's changes without rebuilding), and a whole run with the fast
    scheduler alone gives the plain run's records."""
    jobs = _jobs(7, 300, "gpu")
    fast, plain = _pair(policy, 7)
    twin = Twin(fast, plain)
    records = _run(jobs, twin, 2)
    assert twin.compared > 100
    if isinstance(fast, Drf):
        assert fast.queue.counted is not None  # the counted walk was used
    else:
        assert isinstance(fast, RandomOrder)
        assert fast.shapes.rebuilds == 1  # the first point only
    alone, _ = _pair(policy, 7)
    assert _run(jobs, Twin(alone, _pair(policy, 7)[1]), 2) == records


@pytest.mark.parametrize("policy", ["drf", "random"])
def test_fast_path_on_the_busiest_stretch_of_a_philly_virtual_cluster(policy: str) -> None:
    """Philly's 1-GPU-heavy mix with hundreds of jobs waiting on 48 GPUs (``philly:6214e9``
    up to the first part of its burst of arrivals)."""
    from dlsched.runner import simulate

    fast, plain = _pair(policy, 0)
    twin = Twin(fast, plain)
    simulate("philly:6214e9", twin, seed=0, horizon_s=2.33e6)
    assert twin.compared > 1000
