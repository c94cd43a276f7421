"""DL2's policy gradient with paired rollouts, as RL from the paper's supervised start (issue 29).

A diagnosis, not the paper's method: the actor of `dlsched.papers.dl2.paper` without a critic,
each update the mean policy gradient of ``--groups-per-update`` groups of paired rollouts
(`dlsched.papers.dl2.paired`: ``--traces`` training traces × ``--copies`` copies with per-job
noise, a random greedy burn-in, ``--window`` sampled slots, ``--horizon`` more slots of return,
the paper's reward and γ = 0.9 a slot, leave-one-out advantages), one Adam step at ``--lr``
(the paper's network and state: inputs outside x, d, e, r, w, u stay zero). Every
``--eval-every`` updates the greedy policy's average JCT on the validation seeds 201–203.
Writes ``OUT/train_log.csv`` and the best validation's ``OUT/policy.pt``.

    PYTHONPATH=src python benchmarks/dl2_rloo_train.py --out /tmp/rloo --minutes 20
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np
import torch

from dlsched.papers.dl2.batched_env import Dl2BatchedEnv
from dlsched.papers.dl2.env import TRAIN_SEED_MIN
from dlsched.papers.dl2.network import evaluate, load
from dlsched.papers.dl2.paired import paired_rollout, policy_gradient_loss, rloo_advantages
from dlsched.papers.dl2.paper import paper_network

SHIPPED_START = Path(__file__).resolve().parents[1] / "src/dlsched/papers/dl2/policies/dl2_paper"
VALIDATION = (201, 202, 203)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--init", type=Path, default=SHIPPED_START)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--groups-per-update", type=int, default=8)
    parser.add_argument("--traces", type=int, default=4)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--window", type=int, default=8)
    parser.add_argument("--horizon", type=int, default=30)
    parser.add_argument("--max-burn", type=int, default=200)
    parser.add_argument("--gamma", type=float, default=0.9)
    parser.add_argument("--eval-every", type=int, default=5)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--reward", choices=("paper", "jct"), default="paper",
        help="paper: Σ t_i/E_i a slot; jct: minus job-hours in the system a slot (not the paper's)",
    )  # fmt: skip
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    t0 = time.perf_counter()
    policy, cfg = load(args.init)
    policy = paper_network(policy, cfg.shape())
    opt = torch.optim.Adam(policy.parameters(), lr=args.lr)
    env = Dl2BatchedEnv(
        args.traces * args.copies, shape=cfg.shape(), seed=args.seed, noise="per_job"
    )
    rng = np.random.default_rng(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    best = evaluate(policy, cfg, VALIDATION)
    torch.save(policy.state_dict(), args.out / "policy.pt")
    rows = [{"updates": 0, "samples": 0, "val_avg_jct_s": best, "wall_s": time.perf_counter() - t0}]
    print(rows[-1], flush=True)
    updates = samples = group = 0
    while time.perf_counter() - t0 < args.minutes * 60:
        opt.zero_grad()
        for _ in range(args.groups_per_update):
            base = TRAIN_SEED_MIN + 200_000 + args.seed * 10**6 + group * args.traces
            seeds = [base + i for i in range(args.traces)]
            burn = rng.integers(0, args.max_burn + 1, size=args.traces).tolist()
            kw = {"window": args.window, "horizon": args.horizon, "reward": args.reward}
            batch = paired_rollout(env, policy, seeds, burn, gen=gen, **kw)
            loss = policy_gradient_loss(policy, batch, rloo_advantages(batch, args.gamma))
            (loss / args.groups_per_update).backward()
            samples += len(batch.actions)
            group += 1
        opt.step()
        updates += 1
        if updates % args.eval_every == 0:
            val = evaluate(policy, cfg, VALIDATION)
            if val < best:
                best = val
                torch.save(policy.state_dict(), args.out / "policy.pt")
            rows.append(
                {"updates": updates, "samples": samples, "val_avg_jct_s": val,
                 "wall_s": time.perf_counter() - t0}
            )  # fmt: skip
            print(rows[-1], flush=True)
            with (args.out / "train_log.csv").open("w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)


if __name__ == "__main__":
    main()
