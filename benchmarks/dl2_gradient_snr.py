"""How much of DL2's policy gradient at its supervised start is signal? (issue 29)

From the start (``--init``, default the shipped ``dl2:paper``), the value network is trained
alone on the start's own experience (``--critic-updates`` mini-batches of 256, as
`dl2_advantage_by_action.py`), then ``--groups`` fresh groups of ``--group-size`` samples are
collected in turn (the start acting, 16 batched environments, the paper's exploration). For each
group ``m`` the policy-gradient vector ``g_m = ∇θ mean(A · log π(a|s))`` is computed with the
critic's advantage (no entropy term). Over groups:

* ``signal²`` = (‖Σ g_m‖² − Σ‖g_m‖²) / (M(M − 1)) ± its jackknife standard error, an
  unbiased estimate of ‖E g‖² for
  independent groups (consecutive groups of the same episodes are slightly correlated, so it
  is also computed with each group's advantages permuted among its samples: the same statistic
  under no signal, the estimator's floor);
* ``noise²`` = the mean of ‖g_m − ḡ‖² (the variance of one group's gradient);
* ``samples for SNR 1`` = group size × noise² / signal²: the samples one update would need for
  its gradient to point, on average, as much along the true gradient as across it.

``--line S …`` then steps the start's weights along each mean gradient (real and control,
unit L2 norm, S the step's L2 length in weight space; the start's weights have norm ~66, one
Adam update at lr 1e-4 moves them ~0.05) and scores each step's greedy policy on
``--line-traces`` training traces (average JCT ÷ the start's on the same trace): is the
big-batch gradient an ascent direction of the objective?

``--temp T`` divides the start's output layer by T first (a less confident start: the policy
that acts, explores and is differentiated is softmax(logits / T)).

    PYTHONPATH=src python benchmarks/dl2_gradient_snr.py --groups 24 --gamma 0.9
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from dlsched.papers.dl2.env import TRAIN_SEED_MIN
from dlsched.papers.dl2.network import evaluate_seeds, masked_logits
from dlsched.papers.dl2.paper import PaperLearner, PaperSpec, SlotReplay, paper_config

SHIPPED_START = Path(__file__).resolve().parents[1] / "src/dlsched/papers/dl2/policies/dl2_paper"


def group_gradient(learner: PaperLearner, rep: SlotReplay, gamma: float, shuffle: bool,
                   rng: np.random.Generator) -> np.ndarray:  # fmt: skip
    """The policy gradient of one group (flattened), advantages from the critic."""
    lr = learner.learner
    obs = torch.from_numpy(rep.obs[: rep.size])
    with torch.no_grad():
        v = lr.value(obs)[:, 0]
        nxt = lr.value(torch.from_numpy(rep.next_obs[: rep.size]))[:, 0]
        done = torch.from_numpy(rep.dones[: rep.size])
        adv = torch.from_numpy(rep.rewards[: rep.size]) + gamma * (1 - done) * nxt - v
    if shuffle:
        adv = adv[torch.from_numpy(rng.permutation(len(adv)))]
    logits = masked_logits(lr.policy(obs), torch.from_numpy(rep.masks[: rep.size]))
    logp = torch.log_softmax(logits, 1).gather(
        1, torch.from_numpy(rep.actions[: rep.size])[:, None]
    )
    lr.policy.zero_grad()
    (logp[:, 0] * adv).mean().backward()
    return torch.cat([p.grad.flatten() for p in lr.policy.parameters()]).numpy().copy()


def snr(grads: np.ndarray, group_size: int) -> dict[str, float]:
    M = len(grads)
    total = grads.sum(0)
    sq = (grads * grads).sum(1)
    signal2 = float((total @ total - sq.sum()) / (M * (M - 1)))
    rest = total[None, :] - grads  # jackknife: the same estimate without group m
    loo = (np.einsum("md,md->m", rest, rest) - (sq.sum() - sq)) / ((M - 1) * (M - 2))
    se = float(np.sqrt((M - 1) / M * ((loo - loo.mean()) ** 2).sum()))
    noise2 = float(((grads - grads.mean(0)) ** 2).sum(1).mean())
    upper = signal2 + 2 * se
    return {
        "signal2": signal2,
        "signal2_se": se,
        "samples_for_snr1_at_signal2_plus_2se": group_size * noise2 / upper
        if upper > 0
        else float("inf"),
        "noise2_per_group": noise2,
        "mean_grad_norm2": float((grads.mean(0) ** 2).sum()),
        "samples_for_snr1": group_size * noise2 / signal2 if signal2 > 0 else float("inf"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--init", type=Path, default=SHIPPED_START)
    parser.add_argument("--gamma", type=float, default=0.9)
    parser.add_argument("--reward", default="paper", choices=("paper", "job"))
    parser.add_argument("--critic-updates", type=int, default=600)
    parser.add_argument("--groups", type=int, default=24)
    parser.add_argument("--group-size", type=int, default=2048)
    parser.add_argument("--temp", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--line", type=float, nargs="*", default=[], help="step lengths")
    parser.add_argument("--line-traces", type=int, default=8)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    spec = PaperSpec(
        out=Path("/tmp/dl2-snr"), init=args.init, num_envs=16, eval_every=args.critic_updates,
        device="cpu", critic_warmup=10**9, reward=args.reward,
        config=paper_config(gamma=args.gamma, seed=args.seed),
    )  # fmt: skip
    learner = PaperLearner(spec)
    learner.step()  # loads the start
    if args.temp != 1.0:
        last = [m for m in learner.learner.policy.modules() if isinstance(m, torch.nn.Linear)][-1]
        with torch.no_grad():
            last.weight /= args.temp
            last.bias /= args.temp
    learner.step()  # fills the replay with the start's experience, trains the critic alone
    collector = learner.collector
    assert collector is not None
    rng = np.random.default_rng(args.seed)
    real, shuffled = [], []
    shape = learner.shape
    out: dict[str, object] = {}
    for m in range(args.groups):
        rep = SlotReplay(args.group_size, shape.obs_dim, shape.num_actions)
        collector.replay = rep
        while rep.size < rep.capacity:
            collector.step()
        real.append(group_gradient(learner, rep, args.gamma, False, rng))
        shuffled.append(group_gradient(learner, rep, args.gamma, True, rng))
        if m < 2:
            continue
        out = {
            "gamma": args.gamma, "reward": args.reward, "groups": m + 1,
            "group_size": args.group_size, "init": str(args.init), "temp": args.temp,
            "real": snr(np.stack(real), args.group_size),
            "shuffled": snr(np.stack(shuffled), args.group_size),
            "wall_s": time.perf_counter() - t0,
        }  # fmt: skip
        if args.out:  # after every group: a run cut by its time limit keeps what it measured
            args.out.write_text(json.dumps(out, indent=1))
    if args.line:
        seeds = [TRAIN_SEED_MIN + 9000 + i for i in range(args.line_traces)]
        out["line"] = {
            name: line_search(learner, np.stack(grads).mean(0), args.line, seeds)
            for name, grads in (("real", real), ("shuffled", shuffled))
        }
        if args.out:
            args.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


def line_search(
    learner: PaperLearner, direction: np.ndarray, steps: list[float], seeds: list[int]
) -> dict[str, float]:
    """Mean over ``seeds`` of avg JCT ÷ the start's, after a step of each length along
    ``direction`` (the start's weights are restored after)."""
    policy = learner.learner.policy
    start = [p.detach().clone() for p in policy.parameters()]
    unit = torch.from_numpy(direction / np.linalg.norm(direction))
    base = np.array(evaluate_seeds(policy, learner.cfg, seeds))
    out = {}
    for step in steps:
        k = 0
        with torch.no_grad():
            for p, p0 in zip(policy.parameters(), start, strict=True):
                n = p.numel()
                p.copy_(p0 + step * unit[k : k + n].view_as(p))
                k += n
        out[f"{step:g}"] = float(
            np.mean(np.array(evaluate_seeds(policy, learner.cfg, seeds)) / base)
        )
    with torch.no_grad():
        for p, p0 in zip(policy.parameters(), start, strict=True):
            p.copy_(p0)
    return out


if __name__ == "__main__":
    main()
