"""DL2's stall probes: which traces they are, that they detect a stalling policy, that validation
never prefers a stalling checkpoint and that ES scores a stalling candidate ``inf``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from dlsched.papers.dl2 import es as es_module
from dlsched.papers.dl2 import train as train_module
from dlsched.papers.dl2.env import TRAIN_SEED_MIN
from dlsched.papers.dl2.es import Es, EsConfig, centred_ranks
from dlsched.papers.dl2.network import Dl2Config, RowNet, make_policy, seed_everything
from dlsched.papers.dl2.probes import (
    PROBE_SEED_MIN,
    count_stalls,
    training_probes,
    validation_probes,
)
from dlsched.papers.dl2.train import Dl2Learner, TrainSpec, train_dl2
from dlsched.rl.checkpoint import read_card
from dlsched.rl.training import Budget, RunOptions, RunSettings, train

torch.set_num_threads(1)

CFG = Dl2Config(J=8, hidden=(8, 8))


def _policy(hoard: bool) -> torch.nn.Module:
    """A small untrained network; ``hoard``: it adds parameter servers while one fits, so no
    job gets a worker on a small cluster and nothing ever trains (a stall)."""
    seed_everything(0)
    policy = make_policy(CFG)
    assert isinstance(policy, RowNet)
    with torch.no_grad():
        policy.row_head.bias.copy_(torch.tensor([0.0, 1e6 if hoard else 0.0, 1e5]))
    return policy


def test_validation_probes_avoid_every_other_seed_range_and_cycle_small_clusters() -> None:
    probes = validation_probes(6)
    seeds = [p.seed for p in probes]
    assert seeds == list(range(PROBE_SEED_MIN, PROBE_SEED_MIN + 6))
    assert min(seeds) > 10_000 and max(seeds) < TRAIN_SEED_MIN  # invariant tests, training
    assert {(p.options["servers"], p.options["load"]) for p in probes} == {
        (s, load) for s in (2, 3) for load in (0.5, 1.0, 2.0)
    }
    drawn = training_probes(5, np.random.default_rng(0))
    assert all(p.seed >= TRAIN_SEED_MIN and p.options["servers"] <= 3 for p in drawn)


def test_count_stalls_finds_a_policy_that_leaves_jobs_idle() -> None:
    probes = validation_probes(3)
    assert count_stalls(_policy(hoard=True), CFG, probes) == 3
    assert count_stalls(_policy(hoard=True), CFG, probes, first_only=True) == 1
    assert count_stalls(_policy(False), CFG, probes) == 0


@pytest.mark.parametrize("probes", [0, 1])
def test_validation_never_prefers_a_checkpoint_that_stalls_a_probe(
    tmp_path: Path, monkeypatch: Any, probes: int
) -> None:
    # The main validation is faked: the stalling candidate comes second with a better JCT.
    jcts = iter([9000.0, 5000.0])
    monkeypatch.setattr(
        train_module, "evaluate_seeds", lambda _p, _c, seeds, *a, **k: [next(jcts)] * len(seeds)
    )
    spec = TrainSpec(
        workload_options={"servers": 2, "num_jobs": 8}, config=CFG, stall_probes=probes
    )
    learner = Dl2Learner(spec, RunOptions(tmp_path), Budget(None))
    candidates = iter([_policy(False), _policy(hoard=True)])

    def step() -> dict[str, object]:  # each "chunk of updates" brings the next candidate
        learner.learner.policy.load_state_dict(next(candidates).state_dict())
        return {"phase": "sl", "step": 1, "stat": "0.0"}

    monkeypatch.setattr(learner, "step", step)
    train(lambda budget: learner, RunSettings(tmp_path, steps=2))
    card = read_card(tmp_path)
    rows = (tmp_path / "train_log.csv").read_text().splitlines()
    if probes:
        assert card.validation == {"avg_jct_s": 9000.0, "probe_stalls": 0, "probes": 1}
        assert [r.split(",")[-1] for r in rows] == ["probe_stalls", "0", "1"]
        assert "small-cluster validation probes" in card.notes
    else:  # without probes the stalling candidate wins: the probes are what rejects it
        assert card.validation == {"avg_jct_s": 5000.0}
        assert [r.split(",")[-1] for r in rows] == ["probe_stalls", "", ""]


def test_es_scores_a_candidate_that_stalls_a_probe_inf(monkeypatch: Any) -> None:
    monkeypatch.setattr(es_module, "evaluate", lambda *a, **k: 1000.0)
    probed: list[Any] = []

    def stalls(*args: Any, **kw: Any) -> int:  # every probe stalls (count_stalls is tested above)
        probed.append(args[2])
        return 1

    monkeypatch.setattr(es_module, "count_stalls", stalls)
    options = {"servers": 2, "num_jobs": 8}
    policy = _policy(hoard=True)
    before = torch.nn.utils.parameters_to_vector(policy.parameters()).detach().clone()
    stats = Es(policy, CFG, EsConfig(pairs=2, probes=2, workload_options=options), 0).iterate()
    assert stats["stalled_candidates"] == 4 and math.isinf(stats["train_avg_jct_s"])
    assert len(probed) == 5 and all(len(p) == 2 and p == probed[0] for p in probed)
    assert all(p.seed >= TRAIN_SEED_MIN for p in probed[0])
    # every candidate stalled: equal ranks, no direction, the weights do not move
    assert stats["grad_norm"] == 0.0
    assert torch.equal(torch.nn.utils.parameters_to_vector(policy.parameters()), before)
    # without probes the same candidates are scored by the (faked) traces' JCT
    stats = Es(_policy(hoard=True), CFG, EsConfig(pairs=2, workload_options=options), 0).iterate()
    assert stats["stalled_candidates"] == 0 and stats["train_avg_jct_s"] == 1000.0
    assert len(probed) == 5


def test_centred_ranks_give_every_stalled_candidate_the_same_rank() -> None:
    ranks = centred_ranks(np.array([math.inf, 2.0, math.inf, 1.0]))
    assert ranks[0] == ranks[2] == pytest.approx(5 / 6 - 0.5)
    assert list(ranks[[3, 1]]) == pytest.approx([-0.5, 1 / 3 - 0.5])


def test_a_spent_wall_time_budget_stops_training_and_says_so(tmp_path: Path) -> None:
    spec = TrainSpec(
        workload_options={"servers": 2, "num_jobs": 8, "load": 0.5},
        teacher="drf",
        sl_episodes=1,
        sl_steps=5,
        rl_steps=2,
        eval_every=5,
        val_seeds=(201,),
        config=CFG,
        rl_method="es",
    )
    train_dl2(spec, RunOptions(tmp_path, max_minutes=0.0))
    card = read_card(tmp_path)
    assert card.steps["sl"] == 0 and card.steps["rl"] == 0
    assert "stopped by the wall-time budget of 0 s" in card.notes
