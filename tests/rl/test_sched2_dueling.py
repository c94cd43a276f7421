"""``--dueling`` and ``--discount-time-s`` (deviations of ``train sched2 --paper``). Q's mean
over the actions is the value stream's output; a dueling run writes a checkpoint that loads as
a dueling network with a card that does not claim the paper's method; the default network is
unchanged (the shipped policies still load). Semi-MDP targets discount by γ^(Δt/τ) and the
replay holds the simulated seconds between decisions (0 within a round, > 0 after a hold)."""

from __future__ import annotations

from pathlib import Path

import torch

from dlsched.papers.sched2.algorithm import Sched2QNet
from dlsched.papers.sched2.paper import PaperConfig, evaluate_batched, train_paper
from dlsched.papers.sched2.policy import load_policy
from dlsched.papers.sched2.state import Sched2Shape

SHAPE = Sched2Shape(3, 8, 10, 4, "arrival")


def test_dueling_q_is_value_plus_centred_advantage() -> None:
    torch.manual_seed(0)
    net = Sched2QNet(SHAPE, dueling=True)
    obs = torch.rand(5, SHAPE.obs_dim)
    q = net(obs)
    features = [net.server_features(obs).flatten(1), net.job_encoder(obs[:, net.gpu_dim :])]
    hidden = net.head[1](net.head[0](torch.cat(features, dim=1)))
    value = net.value(hidden).squeeze(1)  # type: ignore[misc]
    assert q.shape == (5, SHAPE.num_actions)
    torch.testing.assert_close(q.mean(dim=1), value)
    advantage = net.head[2](hidden)
    torch.testing.assert_close(q - value[:, None], advantage - advantage.mean(1, keepdim=True))


def test_default_network_has_no_value_stream() -> None:
    assert not any(k.startswith("value") for k in Sched2QNet(SHAPE).state_dict())
    net, _, card = load_policy()  # the shipped sched2_dqn checkpoint
    assert net.value is None and not card.hyperparams.get("dueling", False)


def test_dueling_paper_run_round_trips_and_says_so(tmp_path: Path) -> None:
    config = PaperConfig(
        episodes=2, num_envs=2, num_jobs=30, learning_starts=32, batch_size=8, eval_every=2,
        eps_decay_episodes=1, time_budget_s=120.0, device="cpu", dueling=True,
    )  # fmt: skip
    result = train_paper(config, tmp_path / "d")
    net, _, card = load_policy(result.out)
    assert net.value is not None and card.hyperparams["dueling"] is True
    assert "NOT the paper's method" in card.notes and "dueling" in card.notes
    assert evaluate_batched(net, (3,), num_jobs=30, load=1.8)["avg_jct_s"] > 0


def test_semi_mdp_targets_discount_by_elapsed_time() -> None:
    from dlsched.papers.sched2.paper import DQNLearner

    config = PaperConfig(gamma=0.9, reward_scale=1.0, discount_time_s=100.0, device="cpu")
    learner = DQNLearner(Sched2QNet(SHAPE), config, "cpu")
    next_obs = torch.rand(3, SHAPE.obs_dim).numpy()
    masks = torch.ones(3, SHAPE.num_actions, dtype=torch.bool).numpy()
    zeros = torch.zeros(3).numpy()
    with torch.no_grad():
        best = learner.net(torch.as_tensor(next_obs)).argmax(1, keepdim=True)
        value = learner.target(torch.as_tensor(next_obs)).gather(1, best).squeeze(1)
    y = learner.targets(zeros, next_obs, masks, zeros, torch.tensor([0.0, 100.0, 300.0]).numpy())
    torch.testing.assert_close(y, value * torch.tensor([1.0, 0.9, 0.9**3]))


def test_replay_stores_the_simulated_time_between_decisions() -> None:
    from dlsched.papers.sched2.paper import PaperLearner

    config = PaperConfig(num_envs=2, num_jobs=30, learning_starts=10**9, discount_time_s=50.0,
                         device="cpu")  # fmt: skip
    learner = PaperLearner(config)
    for _ in range(60):
        learner._batched_step()
    elapsed = learner.replay.elapsed_s[: len(learner.replay)]
    assert (elapsed >= 0).all() and (elapsed > 0).any() and (elapsed == 0).any()
