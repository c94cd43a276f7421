"""The shipped SCED² policy: runs every job once without over-allocation, checks cluster shape,
and the scheduler and the environment take the same decisions."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched.api import simulate
from dlsched.papers.sched2.algorithm import greedy_action
from dlsched.papers.sched2.env import Sched2Env
from dlsched.papers.sched2.policy import POLICY_DIR, load_policy, make_scheduler_from
from dlsched.schedulers.registry import make_scheduler
from dlsched.workloads.registry import make_workload
from tests.schedulers.helpers import checked_run

pytestmark = pytest.mark.skipif(
    not (POLICY_DIR / "policy.pt").exists(), reason="no shipped sched2 policy"
)


def test_card_describes_the_shipped_policy():
    _, shape, card = load_policy()
    assert card.algorithm == "sched2"
    assert card.workload == "sched2"
    assert (shape.servers, shape.gpus_per_server, shape.slots, shape.k) == (15, 8, 10, 4)
    assert 0.0 < card.validation["avg_effectiveness"] <= 1.0


def test_shipped_policy_runs_every_job_without_over_allocation():
    seed = 11
    workload = make_workload("sched2", seed=seed, num_jobs=80, load=2.5)
    result, finished = checked_run(workload, make_scheduler("sched2"), seed)
    assert sorted(finished) == sorted(j.job_id for j in workload.jobs)
    assert len(result.records) == len(workload.jobs)


def test_cluster_shape_mismatch_is_one_clear_error():
    with pytest.raises(ValueError, match=r"15 servers x 8 GPUs, this cluster has 4 x 8"):
        simulate("sched2", "sched2", servers=4, num_jobs=10)


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
