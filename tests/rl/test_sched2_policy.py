"""The shipped SCED² policy (SCED²-L) runs every job once without over-allocation; the issue-6
Q-network (``policies/sched2_dqn``) checks cluster shape, and its scheduler and the environment
take the same decisions."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched.api import simulate
from dlsched.papers.sched2.algorithm import greedy_action
from dlsched.papers.sched2.env import Sched2Env
from dlsched.papers.sched2.lookahead import LookaheadScheduler
from dlsched.papers.sched2.policy import (
    DQN_POLICY_DIR,
    POLICY_DIR,
    load_lookahead,
    load_policy,
    load_scheduler,
    make_scheduler_from,
)
from dlsched.schedulers.registry import make_scheduler
from dlsched.workloads.registry import make_workload
from tests.schedulers.helpers import checked_run

pytestmark = pytest.mark.skipif(
    not (POLICY_DIR / "policy.pt").exists(), reason="no shipped sched2 policy"
)


def test_card_describes_the_shipped_policy():
    params, gpus_per_server, card = load_lookahead()
    assert card.algorithm == "sched2" and card.workload == "sched2"
    assert card.hyperparams["policy"] == "lookahead" and gpus_per_server == 8
    assert card.trained_setting["workload"] == "sched2"
    assert card.trained_setting["params"]["load"] == 1.8
    assert card.hyperparams["params"] == params.as_dict()
    assert card.validation["objective"] > 0
    assert isinstance(make_scheduler("sched2"), LookaheadScheduler)


@pytest.mark.parametrize(
    ("seed", "options"),
    [
        (11, {"num_jobs": 80, "load": 2.5}),
        (12, {"num_jobs": 120, "load": 1.0}),
        (13, {"num_jobs": 60, "load": 3.0, "servers": 3}),
    ],
)
def test_shipped_policy_runs_every_job_without_over_allocation(seed, options):
    workload = make_workload("sched2", seed=seed, **options)
    result, finished = checked_run(workload, make_scheduler("sched2"), seed)
    assert sorted(finished) == sorted(j.job_id for j in workload.jobs)
    assert len(result.records) == len(workload.jobs)


def test_the_two_kinds_of_checkpoint_refuse_each_other():
    with pytest.raises(ValueError, match="holds a SCED²-L rule, not a Q-network"):
        load_policy(POLICY_DIR)
    with pytest.raises(ValueError, match="holds a Q-network, not a SCED²-L rule"):
        load_lookahead(DQN_POLICY_DIR)
    assert not isinstance(load_scheduler(DQN_POLICY_DIR)[0], LookaheadScheduler)


def test_cluster_shape_mismatch_is_one_clear_error():
    with pytest.raises(ValueError, match=r"15 servers x 8 GPUs, this cluster has 4 x 8"):
        simulate("sched2", f"sched2:{DQN_POLICY_DIR}", servers=4, num_jobs=10)


def test_scheduler_and_environment_agree():
    net, shape, _ = load_policy()
    options = {"num_jobs": 50, "load": 1.8}
    env = Sched2Env(**options)
    obs, info = env.reset(seed=0, options={"trace_seed": 21})
    done = False
    while not done:
        action = greedy_action(net, obs, info["action_mask"])
        obs, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    via_sim = simulate(make_workload("sched2", seed=21, **options), make_scheduler_from(net, shape))
    assert info["result"]["avg_jct_s"] == pytest.approx(via_sim.summary()["avg_jct_s"])
    assert np.isclose(info["avg_effectiveness"], via_sim.summary()["avg_effectiveness"])
