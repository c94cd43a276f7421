"""The authors' code's prioritised replay for DL2's paper preset (`PaperSpec.priority`, a
diagnosis of issue 29; not the paper's default)."""

from __future__ import annotations

import numpy as np
import torch

from dlsched.papers.dl2.paper import PaperLearner, PaperSpec, SlotReplay, paper_config
from dlsched.papers.dl2.prioritized import IS_BETA_START, IS_BETA_STEP, PrioritizedSlotReplay


def _fill(replay: SlotReplay, rewards: list[float]) -> None:
    dim, n_act = replay.obs.shape[1], replay.masks.shape[1]
    for k, r in enumerate(rewards):
        obs = np.full((1, dim), k, dtype=np.float32)
        replay.add_slot(obs, np.ones((1, n_act), bool), np.array([k % n_act]), r,
                        obs[0], False)  # fmt: skip


def test_new_samples_enter_at_reward_above_mean_at_least_one() -> None:
    replay = PrioritizedSlotReplay(8, 2, 3)
    _fill(replay, [1.0, 1.0, 7.0])
    np.testing.assert_allclose(replay.priority[:3], [1.0, 1.0, 7.0 - 3.0])


def test_draws_follow_priorities_and_weights_undo_them() -> None:
    """A sample at 9× the priority of the others is drawn ~9× as often; its importance weight is
    the smallest, (9)^−β of the others'; the update sets priorities from |advantage|."""
    replay = PrioritizedSlotReplay(10, 2, 3)
    _fill(replay, [0.0] * 10)
    replay.priority[:] = 1.0
    replay.priority[3] = 9.0
    rng, cpu = np.random.default_rng(0), torch.device("cpu")
    counts = np.zeros(10)
    for _ in range(200):
        batch = replay.sample(18, rng, cpu)
        np.add.at(counts, replay.last_idx, 1)
    assert 7.0 < counts[3] / np.delete(counts, 3).mean() < 11.0
    beta = IS_BETA_START + 200 * IS_BETA_STEP
    w = batch.pg_weights
    assert w is not None
    drawn = replay.last_idx
    np.testing.assert_allclose(w.numpy()[drawn == 3], 9.0 ** (-beta), rtol=1e-5)
    np.testing.assert_allclose(w.numpy()[drawn != 3], 1.0, rtol=1e-5)
    replay.update(np.linspace(-5.0, 5.0, len(drawn)).astype(np.float32))
    assert replay.priority.max() <= 4.0**0.9 + 1e-9
    assert replay.priority[drawn[0]] == (4.0**0.9)  # |−5| + 0.01 capped at 4


def test_the_paper_default_replays_uniformly(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = paper_config(J=4, hidden=(8,), replay_size=64)
    paper = PaperLearner(PaperSpec(out=tmp_path, config=cfg, device="cpu"))
    assert type(paper.replay) is SlotReplay
    code = PaperLearner(PaperSpec(out=tmp_path, config=cfg, device="cpu", priority=True))
    assert isinstance(code.replay, PrioritizedSlotReplay)
