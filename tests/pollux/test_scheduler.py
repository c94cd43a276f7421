"""The Pollux scheduler's parts: online fit, exact allocation, placement rules."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from dlsched.core import Allocation
from dlsched.models.goodput import profile
from dlsched.schedulers.pollux import _place, best_split, candidate_counts
from dlsched.schedulers.pollux_model import (
    _LOWER,
    _UPPER,
    JobGoodputModel,
    _objective,
    predict_step_s,
)


@pytest.mark.parametrize("app", ["cifar10", "bert", "imagenet"])
def test_fit_converges_to_the_profile_on_a_noiseless_job(app: str) -> None:
    prof = profile(app)
    model = JobGoodputModel(prof.init_bsz, prof.max_bsz, prof.min_local_bsz, prof.max_local_bsz)
    configs = [((1,), 1), ((2,), 1), ((4,), 1), ((4, 4), 1), ((4, 4, 4, 4), 1)]
    bsz = [prof.min_local_bsz, 2 * prof.min_local_bsz]
    for (placement, _), b in itertools.product(configs, bsz):
        step, sync = prof.step_sync_s(placement, float(b))
        model.observe(len(placement), sum(placement), b, step, sync)
    assert model.params is not None
    errors = []
    for (placement, _), b in itertools.product(configs, bsz):
        step, _sync = prof.step_sync_s(placement, float(b))
        n, r = np.array([len(placement)], float), np.array([sum(placement)], float)
        pred = predict_step_s(model.params, n, r, np.array([float(b)]), np.array([0.0]))[0]
        errors.append(abs(pred - step) / step)
    # bert's measured 2-node steps are slower than its 4-node ones, which the 7-parameter model
    # cannot follow: the fit is at the loss optimum (below) but off by up to 22 % there
    assert max(errors) < 0.25, errors
    assert np.median(errors) < 0.1
    keys = np.array(list(model.profile), dtype=float)
    vals = np.array(list(model.profile.values()))
    x = (keys[:, 0], keys[:, 1], keys[:, 2])
    acc, step = vals[:, 0] - vals[:, 1], vals[:, 0]
    reference = minimize(
        _objective,
        np.array([1e-1, 1e-2] * 3 + [1.001]),
        args=(x, acc, step),
        jac=True,
        method="L-BFGS-B",
        bounds=list(zip(_LOWER, _UPPER, strict=True)),
    )
    assert _objective(model.params, x, acc, step)[0] <= reference.fun * 1.01 + 1e-6


def test_fit_recovers_a_noiseless_model_exactly() -> None:
    truth = np.array([0.02, 0.003, 0.3, 0.02, 0.05, 0.004, 2.0])
    model = JobGoodputModel(32, 1024, 16, 128)
    for nodes, replicas in [(1, 1), (1, 2), (1, 4), (2, 8), (3, 12), (4, 16)]:
        for b in (16, 64, 128):
            n, r = np.array([nodes], float), np.array([replicas], float)
            step = predict_step_s(truth, n, r, np.array([float(b)]), np.array([0.0]))[0]
            accum = truth[0] + truth[1] * b
            model.observe(nodes, replicas, b, float(step), float(step - accum))
    assert model.params is not None
    for nodes, replicas, b in [(1, 3, 50), (2, 6, 100), (5, 20, 32)]:
        n, r, bb, z = (np.array([v], float) for v in (nodes, replicas, b, 0))
        want = predict_step_s(truth, n, r, bb, z)[0]
        assert predict_step_s(model.params, n, r, bb, z)[0] == pytest.approx(want, rel=0.02)


def test_dp_split_is_the_exact_optimum() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        costs = [{r: float(rng.uniform(0, 10)) for r in (0, 1, 2, 4)} for _ in range(4)]
        split = best_split(costs, 6)
        brute = min(
            (sum(c[r] for c, r in zip(costs, rs, strict=True)), rs)
            for rs in itertools.product((0, 1, 2, 4), repeat=4)
            if sum(rs) <= 6
        )
        assert sum(split) <= 6
        assert sum(c[r] for c, r in zip(costs, split, strict=True)) == pytest.approx(brute[0])


def test_candidate_counts_pack_into_nodes() -> None:
    assert candidate_counts(64) == [0, 1, 2, 4, *range(8, 65, 4)]
    assert candidate_counts(3) == [0, 1, 2]


def test_placement_one_distributed_job_per_node_and_kept_jobs_stay() -> None:
    keep = {7: Allocation.of([(0, 2)])}
    free = [2, 4, 4, 4]
    placed = _place({7: 2, 1: 8, 2: 2, 3: 1}, keep, free)
    assert placed is not None
    assert placed[1].workers == ((1, 4), (2, 4))  # whole free nodes
    used = {s for j in (2, 3) for s, _ in placed[j].workers}
    assert 1 not in used and 2 not in used
    assert 7 not in placed
    assert _place({1: 8}, {}, [4, 3, 3]) is None  # 10 GPUs free but one whole node
