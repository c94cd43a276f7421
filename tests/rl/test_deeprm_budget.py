"""``train deeprm --max-minutes`` cuts an iteration part way (issue 36: with a 15 s budget the
first iteration ran 26.2 s): its rollouts stop between rounds once the budget is spent, the
log row says how many jobsets it rolled out and the card says what was cut. Checked through
what the learner records, not through timings."""

from __future__ import annotations

from dataclasses import replace

import torch

from dlsched.papers.deeprm.config import BUDGET_ROUNDS, ReinforceConfig
from dlsched.papers.deeprm.train import DeepRMLearner
from dlsched.rl.training import Budget
from tests.rl.test_dl2_budget import CountedBudget

torch.set_num_threads(1)

CONFIG = ReinforceConfig(load=1.0, jobsets=10, episodes=2, horizon_steps=10, workers=1, seed=0)


def _learner(budget: Budget, **changes: int) -> DeepRMLearner:
    return DeepRMLearner(replace(CONFIG, **changes), validation_jobsets=2, budget=budget)


def test_a_spent_budget_cuts_an_iteration_between_rounds_and_the_card_says_so() -> None:
    whole = _learner(Budget(None)).step()
    assert whole["jobsets"] == 10
    cut = _learner(CountedBudget(calls=2))  # 3 rounds of 1 jobset, then spent
    row = cut.step()
    assert row["jobsets"] == 3 * 10 // BUDGET_ROUNDS and row["samples"] < whole["samples"]
    notes = cut.policy_files()[1].notes
    assert "cut by the wall-time budget: iteration 1 after 3 of 10 jobsets" in notes
    unspent = _learner(CountedBudget(calls=100))
    assert unspent.step()["jobsets"] == 10  # same jobsets, other draws: never cut
    assert "cut by" not in unspent.policy_files()[1].notes


def test_a_spent_budget_cuts_pre_training_and_the_card_counts_the_epochs_done() -> None:
    learner = _learner(CountedBudget(calls=1), pretrain_epochs=5)
    assert learner.step() == {"iteration": 0}
    card = learner.policy_files()[1]
    assert card.steps["pretrain_epochs"] == 2
    assert "pre-training after 2 of 5 epochs" in card.notes


def test_the_paper_trainer_stops_between_chunks_once_spent() -> None:
    from dlsched.papers.deeprm.paper import PaperConfig, PaperReinforce

    config = PaperConfig(loads=(1.0,), jobsets=10, episodes=2, horizon_steps=10, max_steps=100)
    assert PaperReinforce(config).step().jobsets == 10  # no budget: one batch, uncut
    spent_after = iter([False, True])  # two chunks of one jobset, then spent
    assert PaperReinforce(config).step(lambda: next(spent_after)).jobsets == 2
