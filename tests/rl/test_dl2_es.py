"""DL2's evolution-strategies phase: it improves a fixed start on a small setting, seeded; it
trains only on training traces and through the deployed (non-oracle) scheduler."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dlsched.papers.dl2 import es as es_module
from dlsched.papers.dl2.algorithm import collect_teacher, supervised
from dlsched.papers.dl2.env import TRAIN_SEED_MIN, Dl2Env
from dlsched.papers.dl2.es import Es, EsConfig, centred_ranks, evolve
from dlsched.papers.dl2.network import (
    Dl2Config,
    evaluate,
    make_policy,
    make_scheduler_for,
    seed_everything,
)
from dlsched.papers.dl2.train import TrainSpec, train_dl2
from dlsched.rl.checkpoint import read_card
from dlsched.rl.run_options import RunOptions

torch.set_num_threads(1)

SMALL: dict[str, Any] = {"servers": 2, "num_jobs": 8, "load": 0.5}
VAL_SEEDS = (201, 202, 203)


def _start(seed: int = 0) -> tuple[torch.nn.Module, Dl2Config]:
    cfg = Dl2Config(J=8, hidden=(8, 8), seed=seed)
    seed_everything(seed)
    return make_policy(cfg), cfg


def _es(policy: torch.nn.Module, cfg: Dl2Config, seed: int = 0) -> Es:
    es_cfg = EsConfig(pairs=3, traces_per_iter=1, sigma=0.05, lr=0.03, workload_options=dict(SMALL))
    return Es(policy, cfg, es_cfg, seed=seed)


def test_centred_ranks_put_a_stalled_candidate_last() -> None:
    ranks = centred_ranks(np.array([3.0, math.inf, 1.0, 2.0]))
    assert np.allclose(ranks, [2 / 3 - 0.5, 0.5, -0.5, 1 / 3 - 0.5])


def test_a_short_es_run_improves_validation_over_its_supervised_start() -> None:
    policy, cfg = _start()
    env = Dl2Env(shape=cfg.shape(), **SMALL)
    env.reset(seed=0)
    supervised(policy, collect_teacher(env, "drf", 2, seed=0), cfg, 10)  # a short DRF warm-up
    before = evaluate(policy, cfg, VAL_SEEDS, "dl2", **SMALL)
    evolve(_es(policy, cfg), 8)
    after = evaluate(policy, cfg, VAL_SEEDS, "dl2", **SMALL)
    assert after < 0.95 * before, (before, after)  # measured: 12,165 -> 7,509 s


def test_same_seed_same_weights() -> None:
    finals = []
    for _ in range(2):
        policy, cfg = _start()
        evolve(_es(policy, cfg), 2)
        finals.append(torch.nn.utils.parameters_to_vector(policy.parameters()).detach())
    assert torch.equal(finals[0], finals[1])
    policy, cfg = _start()
    evolve(_es(policy, cfg, seed=1), 2)
    assert not torch.equal(finals[0], torch.nn.utils.parameters_to_vector(policy.parameters()))


def test_es_trains_on_training_traces_with_the_non_oracle_scheduler(monkeypatch: Any) -> None:
    seen: list[tuple[int, bool]] = []
    real = es_module.evaluate

    def spy(policy: torch.nn.Module, dl2: Dl2Config, seeds: Any, workload: str, **kw: Any) -> float:
        seen.extend((seed, make_scheduler_for(policy, dl2).is_oracle) for seed in seeds)
        return real(policy, dl2, seeds, workload, **kw)

    monkeypatch.setattr(es_module, "evaluate", spy)
    policy, cfg = _start()
    evolve(_es(policy, cfg), 1)
    assert len(seen) == 1 + 2 * 3  # the centre and 3 antithetic pairs, one trace each
    assert all(seed >= TRAIN_SEED_MIN and not oracle for seed, oracle in seen)


def test_train_dl2_with_es_logs_rl_validations_and_says_so_in_the_card(tmp_path: Path) -> None:
    spec = TrainSpec(
        workload_options=dict(SMALL),
        teacher="drf",
        sl_episodes=1,
        sl_steps=5,
        rl_steps=2,
        eval_every=5,
        rl_eval_every=1,
        val_seeds=(201,),
        config=Dl2Config(J=8, hidden=(8, 8)),
        rl_method="es",
        es=EsConfig(pairs=2),
    )
    train_dl2(spec, RunOptions(tmp_path))
    rows = (tmp_path / "train_log.csv").read_text().splitlines()
    assert [r.split(",")[:2] for r in rows[1:]] == [["sl", "5"], ["rl", "1"], ["rl", "2"]]
    card = read_card(tmp_path)
    assert "RL: evolution strategies (es," in card.notes
