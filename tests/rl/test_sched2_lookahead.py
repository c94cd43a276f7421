"""SCED²-L (`dlsched.papers.sched2.lookahead`): every job runs once without over-allocation for
any parameters, it sees estimates rather than true speeds, its reservation protects a starving
big job, checkpoints round-trip, and a short cross-entropy search improves its validation
objective."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.api import simulate
from dlsched.papers.sched2.lookahead import LookaheadParams, LookaheadScheduler
from dlsched.papers.sched2.lookahead_train import (
    INIT_MEAN,
    CemConfig,
    CrossEntropySearch,
    LookaheadLearner,
    evaluate,
    references,
)
from dlsched.papers.sched2.policy import (
    load_lookahead,
    load_scheduler,
    lookahead_files,
    save_lookahead,
)
from dlsched.rl.training import RunSettings, train
from dlsched.workloads.registry import make_workload
from tests.schedulers.helpers import checked_run

PARAMS = st.builds(
    LookaheadParams,
    gpu_exp=st.floats(0.0, 2.0),
    aging=st.floats(0.0, 2.0),
    slow_tol=st.floats(0.0, 1.0),
    patience=st.floats(0.0, 5.0),
    reserve_after_h=st.floats(0.0, 10.0),
    backfill=st.floats(0.0, 2.0),
    match=st.floats(0.0, 3.0),
    open_cost=st.floats(0.0, 2.0),
    promote_after=st.floats(0.0, 20.0),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=PARAMS, seed=st.integers(0, 10_000), servers=st.integers(1, 4))
def test_every_job_runs_once_without_over_allocation(params, seed, servers):
    workload = make_workload("sched2", seed=seed, num_jobs=40, load=3.0, servers=servers)
    result, finished = checked_run(workload, LookaheadScheduler(params), seed)
    assert sorted(finished) == sorted(j.job_id for j in workload.jobs)
    assert len(result.records) == len(workload.jobs)


def test_decisions_follow_the_measured_profiles():
    """The profiler's measurement noise changes decisions: the rule reads measured profiles (a
    different noise seed gives other estimates); that it never asks the oracle for true speeds is
    checked for every registered scheduler in ``tests/schedulers/test_every_scheduler.py``."""
    workload = make_workload("sched2", seed=5, num_jobs=150, load=2.5, servers=3)
    params = LookaheadParams(slow_tol=0.05, patience=0.5, match=1.0)

    def outcome(profile_seed: int) -> tuple[float, float]:
        s = simulate(workload, LookaheadScheduler(params, profile_seed=profile_seed)).summary()
        return s["avg_jct_s"], s["makespan_s"]

    assert outcome(0) == outcome(0)
    assert outcome(0) != outcome(1)


def test_reservation_lets_a_starving_big_job_start_sooner():
    """On a busy 3-server cluster, a 16-GPU job waits behind a stream of small jobs; reserving
    servers for it (after 0 h of waiting) starts it sooner than never reserving."""
    workload = make_workload("sched2", seed=0, num_jobs=300, load=3.0, servers=3)
    big = [j.job_id for j in workload.jobs if j.num_gpus >= 16]
    assert big, "the check needs a 16-GPU job"

    def wait_of_big(reserve_after_h: float) -> float:
        params = LookaheadParams(reserve_after_h=reserve_after_h, backfill=1.0)
        result = simulate(workload, LookaheadScheduler(params))
        waits = {r.job_id: r.wait_s for r in result.records}
        return sum(waits[j] for j in big) / len(big)

    assert wait_of_big(0.0) < 0.8 * wait_of_big(1e6)


def test_checkpoint_round_trip(tmp_path):
    params = LookaheadParams(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    save_lookahead(
        tmp_path,
        params,
        gpus_per_server=8,
        workload="sched2",
        workload_params={"load": 1.8, "num_jobs": 1000},
        seeds={"train": [0], "validation": [1]},
        steps=3,
        validation={"objective": 2.9},
        hyperparams={"iterations": 1},
    )
    loaded, m, card = load_lookahead(tmp_path)
    assert loaded == params and m == 8
    assert card.trained_setting == {
        "workload": "sched2",
        "params": {"load": 1.8, "num_jobs": 1000},
    }
    scheduler, _ = load_scheduler(tmp_path)
    assert isinstance(scheduler, LookaheadScheduler) and scheduler.params == params


@pytest.mark.slow
def test_short_search_improves_the_validation_objective(tmp_path):
    options = {"servers": 2, "num_jobs": 60, "load": 2.5}

    def traces(seed: int):
        return make_workload("sched2", seed=seed, **options)

    validation = [traces(s) for s in (501, 502)]
    config = CemConfig(seed=0, iterations=3, population=8, elite=2, traces_per_iter=2)
    start = LookaheadParams.from_vector(list(INIT_MEAN))
    before, _ = evaluate(start, [(w, references(w)) for w in validation], config.frag_weight)

    def files(params, metrics, iterations):
        return lookahead_files(
            params,
            gpus_per_server=8,
            workload="sched2",
            workload_params=options,
            seeds={},
            steps=iterations,
            validation=metrics,
            hyperparams={},
        )

    learner = LookaheadLearner(CrossEntropySearch(traces, config), validation, files)
    settings = RunSettings(tmp_path, steps=config.iterations, validate_first=True)
    result = train(lambda budget: learner, settings)
    params, _, card = load_lookahead(tmp_path)
    assert result.steps == 3 and learner.search.iterations == 3
    assert card.validation["objective"] < before - 0.02, (before, card.validation)
    assert params != start
