"""`hetero-score`'s bounds on the running jobs' scores (issue 31): at every scheduling point of
runs on clusters of one GPU type, for any finite weights, each running job's exact score (the
plain rule's floats) lies within its bounds, the bounds follow the order they are listed in,
and the bounded jobs and those scored exactly are the running jobs."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.core import ClusterView, Decision
from dlsched.papers.hetero.features import FEATURES
from dlsched.papers.hetero.policy import TypeScore
from dlsched.papers.hetero.walk import Walk
from dlsched.runner import simulate
from dlsched.workloads.registry import make_workload

WAIT = FEATURES.index("log_wait_s")
WEIGHTS = st.lists(st.floats(-3.0, 3.0), min_size=len(FEATURES), max_size=len(FEATURES)).map(
    lambda w: [-abs(x) if i == WAIT else x for i, x in enumerate(w)]
)


class Bounded(TypeScore):
    """Checks the running jobs' bounds against their exact scores at every point."""

    def __init__(self, weights: list[float]) -> None:
        super().__init__(weights)
        self.checked = 0  # running jobs checked

    def decide(self, view: ClusterView) -> Decision:
        ranked = self.ranked
        assert ranked is not None
        if ranked.update(view) and ranked.bounds is not None:
            mean = np.zeros(1) if ranked.active is None else ranked.active.mean()
            walk = Walk(ranked, view, [0], mean)
            bounds = ranked.bounds
            bounds.sync(list(view.running), ranked.jobs)
            bounded = set(bounds.rows)
            assert bounded | set(bounds.irregular) == {run.job_id for run in view.running}
            assert not bounded & set(bounds.irregular)
            if bounded:
                offset = -ranked.w[2] * float(walk.mean[0])
                order = bounds.ranked(view.now_s, offset)
                lowest = order.lowest()
                order.sort()
                jobs = [bounds.jobs[r] for r in order.rows]
                assert {job.key[1] for job in jobs if job is not None} == bounded
                exact = ranked._exact(view, jobs, walk.mean)  # type: ignore[arg-type]
                margin = order.margin
                for i, row in enumerate(exact):
                    score = -order.neg[i]
                    assert score - margin <= row[0] <= score + margin, view.now_s
                assert order.neg == sorted(order.neg)
                assert lowest == -order.neg[-1] - margin  # free rows (+inf) not the lowest
                assert order.needs()[-1] == bounds.total_need == sum(j.need for j in jobs if j)
                self.checked += len(exact)
        return super().decide(view)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(weights=WEIGHTS, jobs=st.integers(200, 400), start=st.sampled_from([0, 6_000, 20_000]))
def test_the_running_bounds_hold_the_exact_scores_on_a_philly_cluster(
    weights: list[float], jobs: int, start: int
) -> None:
    workload = make_workload("philly:6214e9", seed=0)
    workload = dataclasses.replace(workload, jobs=workload.jobs[start : start + jobs])
    checked = Bounded(weights)
    simulate(workload, checked, seed=0)
    assert checked.checked > 0


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(weights=WEIGHTS, seed=st.integers(0, 10_000), multi_gpu=st.booleans())
def test_the_running_bounds_hold_the_exact_scores_on_a_one_type_gavel_cluster(
    weights: list[float], seed: int, multi_gpu: bool
) -> None:
    checked = Bounded(weights)
    run = simulate(
        "gavel", checked, seed, num_jobs=60, cluster="v100:2x4", jobs_per_hour=30.0,
        multi_gpu=multi_gpu,
    )  # fmt: skip
    assert run.summary()["finished"] == 60 and checked.checked > 0
