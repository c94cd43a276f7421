"""DL2's paper reward at γ 0.99 over whole episodes: on-policy paired policy gradient (issue 29).

A diagnosis run, not the paper's method (DL2 §4.2: actor-critic, TD error, γ 0.9): the actor of
`dlsched.papers.dl2.paper` from its supervised start, no critic; each update runs ``--traces``
fresh training traces × ``--copies`` copies with per-job noise (`dlsched.papers.dl2.paired`)
from the first slot to the episode's end, sampling every action from π, and credits each action
with its copy's discounted paper return Σ_k γ^k r_{t+k} **to the episode's end** minus the other
copies' mean from the same slot (leave-one-out; unbiased). At γ 0.99 a single deviation's
full-episode return difference correlates 0.88 with what it does to average JCT (RESULTS.md,
helper `dl2w9`), at the paper's γ 0.9 0.34; the earlier paired runs cut the return after 38
slots, which at γ 0.99 measures progress, not delay. One Adam step per batch (on-policy, no
replay); greedy validation on seeds 201–203 every ``--eval-every`` updates.

Logged per update (``OUT/update_log.csv``): samples, policy entropy (nats a decision), share of
sampled actions equal to the greedy one, advantage sd and mean |A|, sd of the returns (what a
constant baseline leaves) and mean (G − b)² (the leave-one-out baseline's "value loss"), the
gradient's signal² (unbiased ‖E g‖² from the cross products of the per-trace gradients) and
noise² (variance of one trace's gradient), the update's gradient norm, and the sampling policy's
average JCT on the training traces (from the job-hours of the recorded slots). Validation rows
in ``OUT/train_log.csv``; the best validation's weights in ``OUT/policy.pt`` with the start's
card copied beside them (so ``dlsched compare --schedulers dl2:OUT`` loads it).

    PYTHONPATH=src nice -n 10 python benchmarks/dl2_episode_pg.py --out RUN --minutes 60
"""

from __future__ import annotations

import argparse
import csv
import shutil
import time
from pathlib import Path

import numpy as np
import torch

from dlsched.papers.dl2.batched_env import Dl2BatchedEnv
from dlsched.papers.dl2.env import TRAIN_SEED_MIN
from dlsched.papers.dl2.network import evaluate, load, masked_logits
from dlsched.papers.dl2.paired import PairedBatch, paired_rollout, returns_to_go, rloo_advantages
from dlsched.papers.dl2.paper import paper_network
from dlsched.rl.time_in_system import HOUR_S

SHIPPED_START = Path(__file__).resolve().parents[1] / "src/dlsched/papers/dl2/policies/dl2_paper"
VALIDATION = (201, 202, 203)
WHOLE_EPISODE = 2000  # slots recorded per copy: past any episode's end (`Dl2BatchedEnv.max_slots`)


def _write(path: Path, rows: list[dict[str, float]]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def trace_gradients(
    policy: torch.nn.Module, batch: PairedBatch, adv: np.ndarray, traces: int
) -> tuple[list[torch.Tensor], dict[str, float]]:
    """One flattened policy gradient per trace (its copies' mean −A·log π), and the
    batch's entropy and greedy share."""
    params = [p for p in policy.parameters() if p.requires_grad]
    grads, ent_sum, greedy_sum = [], 0.0, 0.0
    trace_of = batch.env // batch.copies
    for p_i in range(traces):
        idx = np.flatnonzero(trace_of == p_i)
        logits = masked_logits(
            policy(torch.from_numpy(batch.obs[idx])), torch.from_numpy(batch.masks[idx])
        )
        logp_all = torch.log_softmax(logits, 1)
        act = torch.from_numpy(batch.actions[idx])
        logp = logp_all.gather(1, act[:, None])[:, 0]
        loss = -(logp * torch.from_numpy(adv[idx])).mean()
        policy.zero_grad()
        loss.backward()
        grads.append(torch.cat([p.grad.reshape(-1).clone() for p in params]))
        with torch.no_grad():
            probs = logp_all.exp()
            ent = -(probs * logp_all).sum(1)  # illegal logits are −1e9: p = 0, p·log p = 0
            ent_sum += float(ent.sum())
            greedy_sum += float((logits.argmax(1) == act).sum())
    n = len(batch.actions)
    return grads, {"entropy": ent_sum / n, "greedy_share": greedy_sum / n}


def snr_stats(grads: list[torch.Tensor]) -> dict[str, float]:
    """signal² = unbiased ‖E g‖² from the independent traces' gradients; noise² = one trace's
    gradient variance (its trace of covariance)."""
    G = torch.stack(grads).double()
    P = len(grads)
    total = G.sum(0)
    sq = (G * G).sum(1)
    signal2 = float((total @ total - sq.sum()) / (P * (P - 1)))
    mean = total / P
    noise2 = float(((G - mean) ** 2).sum() / (P - 1))
    return {"signal2": signal2, "noise2": noise2, "grad_norm": float(mean.norm())}


def batch_stats(batch: PairedBatch, adv: np.ndarray, gamma: float, jobs: int) -> dict[str, float]:
    """Advantage scale, the baseline's squared error and the sampling policy's training JCT."""
    G = returns_to_go(batch.rewards, gamma, batch.window)[batch.env, batch.slot]
    hours = batch.job_hours if batch.job_hours is not None else np.zeros(1)
    return {
        "adv_sd": float(adv.std()),
        "adv_abs": float(np.abs(adv).mean()),
        "return_sd": float(G.std()),
        "baseline_mse": float((adv.astype(np.float64) ** 2).mean()),
        "train_avg_jct_s": float(hours.sum(1).mean() * HOUR_S / jobs),
        "slots": float((hours > 0).sum(1).mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--init", type=Path, default=SHIPPED_START)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--traces", type=int, default=4)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--eval-every", type=int, default=3)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--updates", type=int, default=10**9, help="stop after this many")
    parser.add_argument("--jobs", type=int, default=None, help="jobs a trace (default 200)")
    args = parser.parse_args()
    options = {} if args.jobs is None else {"num_jobs": args.jobs}
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    t0, c0 = time.perf_counter(), time.process_time()
    policy, cfg = load(args.init)
    policy = paper_network(policy, cfg.shape())
    opt = torch.optim.Adam(policy.parameters(), lr=args.lr)
    env = Dl2BatchedEnv(
        args.traces * args.copies, shape=cfg.shape(), seed=args.seed, noise="per_job",
        max_slots=WHOLE_EPISODE, **options,
    )  # fmt: skip
    gen = torch.Generator().manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    shutil.copy(args.init / "card.json", args.out / "card.json")
    best = evaluate(policy, cfg, VALIDATION, **options)
    torch.save(policy.state_dict(), args.out / "policy.pt")
    vals = [{"updates": 0, "samples": 0, "val_avg_jct_s": best, "ratio_to_start": 1.0,
             "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}]  # fmt: skip
    start = best
    print(vals[-1], flush=True)
    log: list[dict[str, float]] = []
    updates = samples = 0
    while time.perf_counter() - t0 < args.minutes * 60 and updates < args.updates:
        base = TRAIN_SEED_MIN + 300_000 + args.seed * 10**6 + updates * args.traces
        seeds = [base + i for i in range(args.traces)]
        batch = paired_rollout(
            env, policy, seeds, [0] * args.traces, window=WHOLE_EPISODE, horizon=0, gen=gen
        )
        adv = rloo_advantages(batch, args.gamma)
        jobs = int(np.isfinite(env.submit).sum(1).max())  # jobs a trace
        grads, pol = trace_gradients(policy, batch, adv, args.traces)
        mean = torch.stack(grads).mean(0)
        offset = 0
        for p in policy.parameters():
            p.grad = mean[offset : offset + p.numel()].view_as(p).clone()
            offset += p.numel()
        opt.step()
        updates += 1
        samples += len(batch.actions)
        row = {"updates": updates, "samples": samples, "n": len(batch.actions), **pol,
               **batch_stats(batch, adv, args.gamma, jobs), **snr_stats(grads),
               "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}  # fmt: skip
        log.append(row)
        print({k: round(v, 6) for k, v in row.items()}, flush=True)
        _write(args.out / "update_log.csv", log)
        if updates % args.eval_every == 0:
            val = evaluate(policy, cfg, VALIDATION, **options)
            if val < best:
                best = val
                torch.save(policy.state_dict(), args.out / "policy.pt")
            vals.append({"updates": updates, "samples": samples, "val_avg_jct_s": val,
                         "ratio_to_start": val / start, "wall_s": time.perf_counter() - t0,
                         "cpu_s": time.process_time() - c0})  # fmt: skip
            print(vals[-1], flush=True)
            _write(args.out / "train_log.csv", vals)


if __name__ == "__main__":
    main()
