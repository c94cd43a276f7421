"""``train sched2 --max-minutes`` stops inside an episode and inside a validation (issue 36:
``--max-minutes`` bounds every phase); checked through what the learner records."""

from __future__ import annotations

import math

import torch

from dlsched.papers.sched2.algorithm import DQN, DQNConfig
from dlsched.papers.sched2.env import Sched2Env
from dlsched.papers.sched2.train import DQNLearner, split_traces, workload_options
from dlsched.rl.training import Budget
from tests.rl.test_dl2_budget import CountedBudget

torch.set_num_threads(1)


def _learner(budget: Budget) -> DQNLearner:
    options = workload_options("sched2", num_jobs=30, load=None, one_gpu_frac=None, servers=None)
    traces, held_out = split_traces("sched2", options)
    dqn = DQN(Sched2Env(traces), DQNConfig(episodes=5, learning_starts=10**9))
    card = {"workload": "sched2", "workload_params": options, "seeds": {}}
    return DQNLearner(dqn, [held_out(s) for s in (1, 2, 3)], card, "DQN", 30, budget)


def test_a_spent_budget_ends_an_episode_part_way_and_cuts_the_validation() -> None:
    whole = _learner(Budget(None))
    row = whole.step()
    assert row["steps"] > 5 and not math.isnan(float(str(row["train_avg_jct_s"])))
    cut = _learner(CountedBudget(calls=5))  # 5 agent steps, then spent
    row = cut.step()
    assert row["steps"] == 5 and math.isnan(float(str(row["train_avg_jct_s"])))
    full = whole.validate()
    cut.budget = CountedBudget(calls=1 + 30)  # before the first trace and its 30 jobs
    short = cut.validate()
    assert cut.metrics["workloads_validated"] == 1 and short.rank > full.rank
    assert "cut by the wall-time budget after 1 of 3 traces" in cut.policy_files()[1].notes
    assert "workloads_validated" not in whole.metrics
