"""``train dl2 --max-minutes`` bounds every phase (issue 36: a 3-minute budget ran 5 min 17 s,
one validation pass being unbounded): teacher data, supervised updates, RL updates, ES
iterations and validation all stop once it is spent, a validation after a grace of 10 % of it.
Checked through what the run records (steps done, seeds validated), not through timings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from dlsched.papers.dl2.network import Dl2Config
from dlsched.papers.dl2.train import Dl2Learner, TrainSpec, train_dl2
from dlsched.rl.checkpoint import read_card
from dlsched.rl.training import Budget, RunOptions

torch.set_num_threads(1)

CFG = Dl2Config(J=8, hidden=(8, 8))
SMALL = {"servers": 2, "num_jobs": 8, "load": 0.5}


class CountedBudget(Budget):
    """A budget spent after ``calls`` questions (whichever is asked), never by the clock."""

    def __init__(self, calls: int) -> None:
        super().__init__(60.0)
        self.calls = calls

    def _ask(self) -> bool:
        self.calls -= 1
        return self.calls < 0

    def spent(self) -> bool:
        return self._ask()

    def validation_over(self) -> bool:
        return self._ask()


def _learner(tmp_path: Path, budget: Budget, **spec: Any) -> Dl2Learner:
    full = TrainSpec(workload_options=SMALL, config=CFG, sl_episodes=1, **spec)
    return Dl2Learner(full, RunOptions(tmp_path), budget)


def test_a_spent_budget_cuts_supervised_updates_rl_updates_and_validation(tmp_path: Path):
    learner = _learner(tmp_path, Budget(None), teacher="drf", sl_steps=10, eval_every=10)
    learner.step()  # the teacher's data and 10 updates, no budget
    assert learner.sl_done == 10
    learner.spec.sl_steps = 100
    learner.budget = CountedBudget(calls=3)  # 3 updates, then spent
    learner.step()
    assert learner.sl_done == 13
    learner.spec.rl_steps = 40
    learner.budget = CountedBudget(calls=2)
    learner.spec.sl_steps = learner.sl_done  # on to RL
    learner.step()
    assert learner.rl_done == 2
    learner.spec.val_seeds = tuple(range(201, 221))
    learner.budget = CountedBudget(calls=5)  # asked before each seed and after each job
    learner.validate()
    assert learner.val_cut_after is not None and learner.val_cut_after < 20
    _, card = learner.policy_files()
    assert card.validation["seeds_validated"] == learner.val_cut_after
    assert f"cut by the wall-time budget after {learner.val_cut_after} of 20 seeds" in card.notes
    learner.budget = Budget(None)
    learner.spec.val_seeds = (201, 202)
    learner.validate()  # no budget: every seed, nothing said
    assert learner.val_cut_after is None
    assert "cut by" not in learner.policy_files()[1].notes


def test_a_tiny_budget_stops_a_run_whose_validation_alone_would_take_far_longer(tmp_path: Path):
    # 300 validation seeds: each a whole simulation, far more than 1.2 s + its 0.12 s grace.
    spec = TrainSpec(
        workload_options=SMALL,
        teacher="drf",
        sl_episodes=1,
        sl_steps=10_000,
        eval_every=10_000,
        rl_steps=0,
        val_seeds=tuple(range(201, 501)),
        config=CFG,
    )
    train_dl2(spec, RunOptions(tmp_path, max_minutes=0.02))
    card = read_card(tmp_path)
    assert card.steps["sl"] < 10_000  # the supervised phase stopped early
    assert card.validation["seeds_validated"] < 300  # and so did the validation
    assert "stopped by the wall-time budget of 1 s" in card.notes


def test_a_cut_validation_never_outranks_a_whole_one(tmp_path: Path):
    learner = _learner(tmp_path, Budget(None), teacher=None, val_seeds=(201, 202, 203))
    whole = learner.validate()
    learner.budget = CountedBudget(calls=9)  # before seed 1 and its 8 jobs, then cut
    cut = learner.validate()
    assert learner.val_cut_after == 1 and cut.rank > whole.rank
    assert cut.row["val_avg_jct_s"] != "inf"  # the log still shows the mean of that seed
