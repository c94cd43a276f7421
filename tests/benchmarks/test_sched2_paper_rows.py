"""`benchmarks/sched2_paper.py` names each DQN's row by the deviations its card records, so a
network trained with deviations is never shown as the paper's method."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from typing import Any

from dlsched.papers.sched2.policy import MASKED_POLICY_DIR, PAPER_POLICY_DIR
from dlsched.rl.checkpoint import read_card

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sched2_paper.py"


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("sched2_paper", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rows_name_every_deviation_and_only_a_card_without_one_gets_the_paper_row() -> None:
    bench = _module()
    paper, masked = read_card(PAPER_POLICY_DIR), read_card(MASKED_POLICY_DIR)
    assert bench.dqn_row(paper) == "DQN + incremental reward (deviation)"  # the shipped one
    plain = dataclasses.replace(paper, hyperparams={**paper.hyperparams, "reward": "paper"})
    assert bench.dqn_row(plain) == bench.PAPER_ROW
    assert bench.dqn_row(masked) == "DQN + incremental reward + hold mask local (deviations)"
    dueling = dataclasses.replace(masked, hyperparams={**masked.hyperparams, "dueling": True})
    assert bench.dqn_row(dueling) == (
        "DQN + incremental reward + hold mask local + dueling (deviations)"
    )
    td = dataclasses.replace(plain, hyperparams={**plain.hyperparams, "new_priority": "td"})
    assert bench.dqn_row(td) == "DQN + TD priority (deviation)"
    smdp = dataclasses.replace(paper, hyperparams={**paper.hyperparams, "discount_time_s": 100.0})
    assert "γ^(Δt/100.0 s)" in bench.dqn_row(smdp) and "paper method" not in bench.dqn_row(smdp)
