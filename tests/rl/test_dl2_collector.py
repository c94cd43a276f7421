"""The DL2 paper collector (`paper_collect.Collector`, engineered 2026-11-27): its sampler draws
from the policy's distribution, its compiled choice equals the NumPy one, and it records the
replay rows the collector before it (``benchmarks/dl2_collector_before.py``) recorded."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dlsched.papers.dl2 import slot_kernels as sk
from dlsched.papers.dl2.algorithm import Learner
from dlsched.papers.dl2.batched_env import Dl2BatchedEnv
from dlsched.papers.dl2.network import masked_logits
from dlsched.papers.dl2.paper import Collector, SlotReplay, paper_config
from dlsched.papers.dl2.sample_kernels import (
    choose_actions,
    choose_actions_numpy,
    inverse_cdf,
    policy_cdf,
)

SMALL = {"servers": 3, "num_jobs": 14}
BEFORE = Path(__file__).parents[2] / "benchmarks" / "dl2_collector_before.py"


def _compiled(logits: Any, u: Any, eps: float, rows: Any, mask: Any) -> tuple[Any, Any]:
    out, use = np.empty(len(logits), dtype=np.int64), np.empty(len(logits), dtype=bool)
    choose_actions(logits, u, eps, rows, mask, out, use)
    return out, use


def test_inverse_cdf_is_the_first_running_sum_above_the_uniform() -> None:
    rng = np.random.default_rng(0)
    p = rng.random((200, 9)) * (rng.random((200, 9)) < 0.6)
    p[:, 4] += 1e-3  # every row has some mass
    cdf, u = np.cumsum(p, axis=1), rng.random(200)
    want = [next(i for i in range(9) if cdf[b, i] > u[b] * cdf[b, -1]) for b in range(200)]
    got = inverse_cdf(cdf, u)
    np.testing.assert_array_equal(got, want)
    assert (p[np.arange(200), got] > 0).all()  # never an action of probability 0
    np.testing.assert_array_equal(inverse_cdf(cdf, np.zeros(200)), (p > 0).argmax(axis=1))


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_sampler_draws_the_softmax_over_legal_actions(path: str) -> None:
    """Chi-square of 40,000 draws of one state against ``softmax(masked_logits)``; illegal
    actions never drawn. A sampler off by one action, or ignoring the mask, fails."""
    n, K = 40_000, 13
    logits = np.linspace(-2.0, 1.5, K, dtype=np.float32)[None, :].repeat(n, axis=0)
    mask = np.ones((n, K), dtype=bool)
    mask[:, [1, 5, 6]] = False
    rows = np.zeros((n, 4, sk.ROW_FIELDS), dtype=np.int64)
    u = np.random.default_rng(3).random((3, n))
    if path == "compiled":
        out, use = _compiled(logits, u, 0.0, rows, mask)
    else:
        out, use = choose_actions_numpy(logits, u, 0.0, rows, mask)
    assert not use.any()
    first = masked_logits(torch.from_numpy(logits[:1]), torch.from_numpy(mask[:1]))
    probs_np = torch.softmax(first, 1)[0].double().numpy()
    counts = np.bincount(out, minlength=K)
    assert counts[~mask[0]].sum() == 0
    legal = mask[0]
    _, p_value = stats.chisquare(counts[legal], probs_np[legal] / probs_np[legal].sum() * n)
    assert p_value > 1e-3
    _, p_shifted = stats.chisquare(
        np.roll(counts[legal], 1), probs_np[legal] / probs_np[legal].sum() * n
    )
    assert p_shifted < 1e-6  # the test tells a wrong sampler apart


def test_exploration_picks_a_legal_fix_uniformly() -> None:
    """Rows 0 and 2 poor (workers without PS; PS without workers), row 1 fine: with ε = 1
    every draw explores, uniformly over the two legal fixes."""
    n, J = 30_000, 3
    K = 3 * J + 1
    rows = np.zeros((n, J, sk.ROW_FIELDS), dtype=np.int64)
    rows[:, 0, sk.W] = 2  # needs a PS: action 1
    rows[:, 1, sk.W], rows[:, 1, sk.P] = 2, 1
    rows[:, 2, sk.P] = 1  # needs a worker: action 6
    mask = np.ones((n, K), dtype=bool)
    logits = np.zeros((n, K), dtype=np.float32)
    u = np.random.default_rng(4).random((3, n))
    for out, use in (
        _compiled(logits, u, 1.0, rows, mask),
        choose_actions_numpy(logits, u, 1.0, rows, mask),
    ):
        assert use.all()
        counts = np.bincount(out, minlength=K)
        assert set(np.flatnonzero(counts)) == {1, 6}
        assert stats.chisquare(counts[[1, 6]]).pvalue > 1e-3
    mask[:, 6] = False  # an illegal fix is never chosen
    out, use = _compiled(logits, u, 1.0, rows, mask)
    assert use.all() and set(out.tolist()) == {1}


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    B=st.integers(1, 9),
    J=st.integers(1, 6),
    eps=st.sampled_from([0.0, 0.4, 1.0]),
    scale=st.sampled_from([0.0, 1.0, 30.0, 1e3]),
)
def test_compiled_choice_equals_numpy(seed: int, B: int, J: int, eps: float, scale: float) -> None:
    rng = np.random.default_rng(seed)
    K = 3 * J + 1
    logits = (rng.standard_normal((B, K)) * scale).astype(np.float32)
    mask = rng.random((B, K)) < 0.5
    mask[:, -1] = True  # the void action is always legal
    rows = np.zeros((B, J, sk.ROW_FIELDS), dtype=np.int64)
    rows[:, :, sk.W : sk.P + 1] = rng.choice([0, 1, 2, 11, 25], size=(B, J, 2))
    u = rng.random((3, B))
    out, use = _compiled(logits, u, eps, rows, mask)
    want_out, want_use = choose_actions_numpy(logits, u, eps, rows, mask)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(use, want_use)
    assert mask[np.arange(B), out].all()
    assert (policy_cdf(logits, mask)[:, -1] >= 1.0).all()  # the top legal action counts 1


def test_collector_act_samples_the_policy() -> None:
    """`Collector.act` (exploration off) on one fixed state, 6,000 times: each environment's
    actions follow ``softmax(masked_logits(policy(obs)))``."""
    cfg = paper_config(exploration=False)
    env = Dl2BatchedEnv(3, seed=2, **SMALL)
    replay = SlotReplay(64, env.shape.obs_dim, env.shape.num_actions)
    collector = Collector(env, Learner.create(cfg), replay, seed=0)
    for _ in range(5):
        collector.step()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as `dlsched train dl2`: small batches on a shared box
    try:
        draws = np.stack([collector.act()[0] for _ in range(6000)])
    finally:
        torch.set_num_threads(threads)
    with torch.no_grad():
        logits = collector.learner.policy(torch.from_numpy(env.obs))
        probs = torch.softmax(masked_logits(logits, torch.from_numpy(env.mask)), 1).double()
    for b in range(3):
        legal = env.mask[b]
        counts = np.bincount(draws[:, b], minlength=env.shape.num_actions)
        assert counts[~legal].sum() == 0
        p = probs[b].numpy()[legal]
        keep = p * 6000 > 5  # chi-square needs expected counts >= 5: pool the rest
        expected = np.append(p[keep], p[~keep].sum()) / p.sum() * 6000
        observed = np.append(counts[legal][keep], counts[legal][~keep].sum())
        if expected[-1] == 0:
            expected, observed = expected[:-1], observed[:-1]
        assert stats.chisquare(observed, expected).pvalue > 1e-3


def _before() -> Any:
    spec = importlib.util.spec_from_file_location("dl2_collector_before", BEFORE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.StackingCollector


def _scripted(cls: Any) -> Any:
    """``cls`` acting by a script of random legal actions and random "explored" flags (the
    same for two collectors whose environments are in the same states)."""

    class Scripted(cls):  # type: ignore[misc,valid-type]
        def act(self) -> tuple[Any, Any]:
            if not hasattr(self, "script"):
                self.script = np.random.default_rng(99)
            mask = self.env.mask
            keys = np.where(mask, self.script.random(mask.shape), -1.0)
            void = self.script.random(len(mask)) < 0.15
            actions = np.where(void, self.env.shape.void, keys.argmax(axis=1))
            return actions.astype(np.int64), self.script.random(len(mask)) < 0.3

    return Scripted


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"reward": "jct", "stagger_slots": 3},
        {"reward": "job"},
        {"chain_gamma": 0.9},
    ],
)
def test_recorded_rows_equal_the_stacking_collector(options: dict[str, Any]) -> None:
    """Same actions in both: the replay rings (every array, position, size), returns,
    episode JCTs and counts are equal, through slot ends, ring wrap-around, restarts and the
    staging arrays' growth."""
    cfg = paper_config()
    collectors = []
    for cls in (_scripted(_before()), _scripted(Collector)):
        env = Dl2BatchedEnv(3, seed=4, **SMALL)
        replay = SlotReplay(500, env.shape.obs_dim, env.shape.num_actions)
        torch.manual_seed(0)
        collectors.append(cls(env, Learner.create(cfg), replay, 0, **options))
    old, new = collectors
    for name in ("_obs", "_masks", "_actions", "_explored", "_jobs"):  # slots outgrow them
        setattr(new, name, getattr(new, name)[:, :2].copy())
    recorded = 0
    for _ in range(900):
        got = new.step()
        assert old.step() == got
        recorded += got
    assert new.episodes >= 3 and recorded * 3 > new.replay.capacity // 10
    assert new.replay.size == new.replay.capacity  # wrapped around
    for name in ("obs", "masks", "actions", "rewards", "next_obs", "dones", "explored"):
        np.testing.assert_array_equal(getattr(new.replay, name), getattr(old.replay, name), name)
    np.testing.assert_array_equal(new.replay.discounts, old.replay.discounts)
    assert (new.replay.pos, new.replay.size) == (old.replay.pos, old.replay.size)
    assert (new.slots, new.episodes) == (old.slots, old.episodes)
    assert new.returns == old.returns and new.episode_jct == old.episode_jct


def test_policy_logits_are_the_module_call() -> None:
    from dlsched.papers.dl2.network import make_policy
    from dlsched.papers.dl2.paper_collect import policy_logits

    obs = torch.rand(7, paper_config().shape().obs_dim)
    for cfg in (paper_config(), paper_config(arch="rows", hidden=(16, 16))):
        net = make_policy(cfg)
        with torch.inference_mode():
            got, want = policy_logits(net, obs), net(obs)
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
