"""Which way DL2's actor-critic pushes its supervised start (issue 29 diagnosis).

From a supervised start (``--init``: by default the shipped ``dl2:paper``, which is the paper-method
run's supervised start; or ``runs/variants/sl`` from `dl2_paper_variants.py sl`) it fills the
replay with the start's own experience (8,192 samples, 16 batched environments), trains the
value network alone for ``--critic-updates`` mini-batches (the policy stays the start), then
reports over every replay sample, per kind of action (worker, PS, bundle, void), the mean
advantage and the mean gradient the policy loss puts on the void action's logit,
``A · (1[a = void] − π(void | s))`` (> 0: the update makes ending the slot more likely, i.e.
fewer tasks handed out), and the share of the authors' prioritised replay's priority mass
that the non-greedy samples hold. ``--gamma 0.9`` is the paper's TD(0) target ``r + γV(s')``;
``--gamma 0`` the authors' code (``train.py``: advantage = slot reward − V(s), V regressed on it).

    PYTHONPATH=src python benchmarks/dl2_advantage_by_action.py --gamma 0.9
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from dlsched.papers.dl2.network import masked_logits
from dlsched.papers.dl2.paper import PaperLearner, PaperSpec, SlotReplay, paper_config
from dlsched.papers.dl2.prioritized import PRIORITY_ALPHA, PRIORITY_CAP, PRIORITY_EPS

SHIPPED_START = Path(__file__).resolve().parents[1] / "src/dlsched/papers/dl2/policies/dl2_paper"
"""`dl2:paper`: the paper-method run kept its supervised start (its card says so)."""


def held_out_variance(learner: PaperLearner, gamma: float) -> None:
    """The critic on slots it never trained on (the next 8,192 samples of the same
    environments): explained variance of its TD target ``r + γV(s')`` (γ = 0: the reward)."""
    collector = learner.collector
    assert collector is not None
    fresh = SlotReplay(learner.replay.capacity, learner.shape.obs_dim, learner.shape.num_actions)
    collector.replay = fresh
    while fresh.size < fresh.capacity:
        collector.step()
    collector.replay = learner.replay
    value = learner.learner.value
    with torch.no_grad():
        v = value(torch.from_numpy(fresh.obs))[:, 0].numpy()
        nxt = value(torch.from_numpy(fresh.next_obs))[:, 0].numpy()
    target = fresh.rewards + gamma * (1 - fresh.dones) * nxt
    ev = 1 - np.var(target - v) / np.var(target)
    print(f"held-out slots: TD target mean {target.mean():.3f} sd {target.std():.3f}; "
          f"TD error sd {np.std(target - v):.3f}; explained variance {ev:.3f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--init", type=Path, default=SHIPPED_START)
    parser.add_argument("--gamma", type=float, default=0.9)
    parser.add_argument("--critic-updates", type=int, default=600)
    parser.add_argument("--reward", default="paper", choices=("paper", "job"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    spec = PaperSpec(
        out=Path("/tmp/dl2-adv"), init=args.init, num_envs=16, eval_every=args.critic_updates,
        device="cpu", critic_warmup=10**9, config=paper_config(gamma=args.gamma),
        reward=args.reward,
    )  # fmt: skip
    learner = PaperLearner(spec)
    learner.step()  # loads the start
    row = learner.step()  # fills the replay, then critic-only updates
    print(f"gamma={args.gamma}: critic after {row['updates']} updates: value loss "
          f"{row['value_loss']:.3f}, TD-error std {row['advantage_std']:.3f}, "
          f"slot reward {row['reward_mean']:.3f}")  # fmt: skip
    rep, lr = learner.replay, learner.learner
    held_out_variance(learner, args.gamma)
    J = learner.shape.J
    with torch.no_grad():
        obs = torch.from_numpy(rep.obs)
        v = lr.value(obs)[:, 0]
        nxt = lr.value(torch.from_numpy(rep.next_obs))[:, 0]
        done = torch.from_numpy(rep.dones)
        adv = torch.from_numpy(rep.rewards) + args.gamma * (1 - done) * nxt - v
        probs = torch.softmax(masked_logits(lr.policy(obs), torch.from_numpy(rep.masks)), 1)
    a = rep.actions
    kind = np.where(a == 3 * J, 3, a % 3)
    push = (adv * ((torch.from_numpy(a) == 3 * J).float() - probs[:, 3 * J])).numpy()
    adv_np = adv.numpy()
    print(f"{'action':>8} {'share':>6} {'mean A':>8} {'± se':>6} {'void push':>10} {'± se':>8}")
    for k, name in enumerate(("worker", "ps", "bundle", "void")):
        sel = kind == k
        n = int(sel.sum())
        if n == 0:
            continue
        se_a = adv_np[sel].std() / np.sqrt(n)
        se_p = push[sel].std() / np.sqrt(n)
        print(f"{name:>8} {n / len(a):6.3f} {adv_np[sel].mean():8.3f} {se_a:6.3f} "
              f"{push[sel].mean():10.4f} {se_p:8.4f}")  # fmt: skip
    print(f"{'all':>8} {1.0:6.3f} {adv_np.mean():8.3f} {adv_np.std() / np.sqrt(len(a)):6.3f} "
          f"{push.mean():10.4f} {push.std() / np.sqrt(len(a)):8.4f}")  # fmt: skip
    explored = rep.explored
    mine = adv_np[~explored].mean()
    theirs = adv_np[explored].mean() if explored.any() else float("nan")
    print(f"explored share {explored.mean():.3f}; mean A explored {theirs:.3f}, policy's own "
          f"{mine:.3f}")  # fmt: skip
    taken = probs.gather(1, torch.from_numpy(a)[:, None])[:, 0].numpy()
    greedy = probs.argmax(1).numpy() == a
    print(
        f"sampled action = greedy action in {greedy.mean():.4f} of samples; mean π(a|s) "
        f"{taken.mean():.4f}; samples with π(a|s) < 0.9: {(taken < 0.9).mean():.4f}"
    )
    priority_of_deviations(adv_np, ~greedy)


def priority_of_deviations(adv: np.ndarray, off: np.ndarray) -> None:
    """Would the authors' prioritised replay (`dlsched.papers.dl2.prioritized`) draw the
    start's non-greedy actions more often than they occur? Their share of the priority mass
    ``min(|A| + 0.01, 4)^0.9`` against their share of the samples, and their mean |A|."""
    pri = np.minimum(np.abs(adv) + PRIORITY_EPS, PRIORITY_CAP) ** PRIORITY_ALPHA
    print(
        f"non-greedy samples: share {off.mean():.4f}, share of priority mass "
        f"{pri[off].sum() / pri.sum():.4f}; mean |A| non-greedy {np.abs(adv[off]).mean():.3f}, "
        f"greedy {np.abs(adv[~off]).mean():.3f}"
    )


if __name__ == "__main__":
    main()
