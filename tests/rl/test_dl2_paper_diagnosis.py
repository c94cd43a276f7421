"""The paper preset's diagnosis options (issue 29): exploration kept out of the policy
gradient, per-action TD inside a slot, staggered starts, training-episode JCT."""

from __future__ import annotations

import numpy as np
import torch

from dlsched.papers.dl2.algorithm import Batch, Learner
from dlsched.papers.dl2.batched_env import Dl2BatchedEnv
from dlsched.papers.dl2.paper import Collector, SlotReplay, paper_config

SMALL = {"servers": 3, "num_jobs": 14}


def _slot(replay: SlotReplay, k: int, reward: float, gamma: float | None) -> None:
    dim = replay.obs.shape[1]
    obs = np.arange(k * dim, dtype=np.float32).reshape(k, dim)
    masks = np.ones((k, replay.masks.shape[1]), dtype=bool)
    explored = np.arange(k) % 2 == 1
    replay.add_slot(obs, masks, np.arange(k), reward, np.full(dim, -1.0, np.float32), False,
                    explored, gamma)  # fmt: skip


def test_chain_targets_inside_a_slot() -> None:
    """``gamma`` given: an action inside the slot bootstraps from the slot's next state with no
    reward and discount 1; the last one gets the slot's reward and ``gamma``."""
    replay = SlotReplay(16, 3, 4)
    _slot(replay, 3, 2.5, 0.9)
    np.testing.assert_array_equal(replay.rewards[:3], [0.0, 0.0, 2.5])
    np.testing.assert_array_equal(replay.discounts[:3], np.float32([1.0, 1.0, 0.9]))
    np.testing.assert_array_equal(replay.next_obs[0], replay.obs[1])
    np.testing.assert_array_equal(replay.next_obs[1], replay.obs[2])
    np.testing.assert_array_equal(replay.next_obs[2], [-1.0, -1.0, -1.0])
    paper = SlotReplay(16, 3, 4)
    _slot(paper, 3, 2.5, None)  # the paper: every action the slot's reward and next state
    np.testing.assert_array_equal(paper.rewards[:3], [2.5, 2.5, 2.5])
    assert (paper.next_obs[:3] == -1.0).all()
    batch = paper.sample(8, np.random.default_rng(0), torch.device("cpu"))
    assert batch.pg_weights is None and batch.discounts is None


def test_explored_actions_leave_the_policy_gradient() -> None:
    """With weight 0 on every sample and no entropy bonus, the policy gets no gradient; the
    value network still learns; weights 1 are the paper's mean."""
    cfg = paper_config(entropy_beta=0.0, J=4, hidden=(8,))
    learner = Learner.create(cfg)
    dim, n_act = cfg.shape().obs_dim, cfg.shape().num_actions
    gen = torch.Generator().manual_seed(0)
    base = Batch(
        torch.randn(6, dim, generator=gen), torch.ones(6, n_act, dtype=torch.bool),
        torch.arange(6) % n_act, torch.rand(6, generator=gen), torch.randn(6, dim, generator=gen),
        torch.zeros(6),
    )  # fmt: skip
    learner.backward(base._replace(pg_weights=torch.zeros(6)))
    assert all(float(p.grad.abs().sum()) == 0.0 for p in learner.policy.parameters())
    assert any(float(p.grad.abs().sum()) > 0.0 for p in learner.value.parameters())
    learner.backward(base)
    plain = [p.grad.clone() for p in learner.policy.parameters()]
    learner.backward(base._replace(pg_weights=torch.ones(6)))
    for a, p in zip(plain, learner.policy.parameters(), strict=True):
        torch.testing.assert_close(a, p.grad)


def test_replay_weighs_explored_samples_zero() -> None:
    replay = SlotReplay(16, 3, 4)
    _slot(replay, 4, 1.0, None)
    batch = replay.sample(64, np.random.default_rng(0), torch.device("cpu"), explored_in_pg=False)
    assert batch.pg_weights is not None
    np.testing.assert_array_equal(batch.pg_weights.numpy(), (batch.actions % 2 == 0).numpy())


def test_staggered_collector_records_after_its_skipped_slots() -> None:
    """Each environment's first ``skip`` slots are not recorded, then every slot is."""
    cfg = paper_config(replay_size=4096, batch_size=32)
    env = Dl2BatchedEnv(3, seed=3, **SMALL)
    learner = Learner.create(cfg)
    replay = SlotReplay(4096, env.shape.obs_dim, env.shape.num_actions)
    collector = Collector(env, learner, replay, seed=0, stagger_slots=3)
    skip = collector.skip.copy()
    assert skip.sum() > 0
    recorded = 0
    while collector.skip.any() or recorded < 3:
        recorded += collector.step()
    assert collector.slots == recorded and replay.size > 0


def test_job_reward_splits_the_slot_reward_by_job() -> None:
    """``reward="job"``: every action of a slot gets its own job's share of epochs trained in
    the slot; over the slot's distinct jobs the shares add up to the paper's slot reward."""
    cfg = paper_config(replay_size=4096, batch_size=32, gamma=0.0)
    env = Dl2BatchedEnv(2, seed=5, **SMALL)
    replay = SlotReplay(4096, env.shape.obs_dim, env.shape.num_actions)
    collector = Collector(env, Learner.create(cfg), replay, seed=0, reward="job")
    seen: list[tuple[np.ndarray, np.ndarray]] = []
    add, step = replay.add_slot, env.step
    slot_rewards: list[float] = []

    def spy(obs, masks, actions, reward, *rest):  # type: ignore[no-untyped-def]
        seen.append((actions.copy(), np.asarray(reward, dtype=np.float64).copy()))
        add(obs, masks, actions, reward, *rest)

    def record(actions):  # type: ignore[no-untyped-def]
        out = step(actions)
        slot_rewards.extend(float(r) for r in out[2][out[5]])  # in the collector's order
        return out

    replay.add_slot = spy  # type: ignore[method-assign]
    env.step = record  # type: ignore[method-assign]
    while len(seen) < 12:
        collector.step()
    given = 0
    for (actions, rewards), slot_reward in zip(seen, slot_rewards, strict=False):
        assert rewards.shape == actions.shape and (rewards >= 0).all()
        rows = actions < 3 * env.shape.J
        given += int(rows.sum())
        # one batch of rows a slot here (14 jobs < J): a row is a job, its actions one reward
        share = dict(zip((actions[rows] // 3).tolist(), rewards[rows].tolist(), strict=True))
        if share:
            assert abs(sum(share.values()) - slot_reward) < 1e-6 * max(1.0, slot_reward)
    assert given > 0
