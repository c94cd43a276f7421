"""What a SCED² paper-method Q-network does, greedy, on the validation traces, and whether its
Q-values match the returns they stand for (issue 29, SCED² diagnosis).

On the validation traces (`dlsched.papers.sched2.paper.PAPER_VALIDATION_SEEDS`, never the test
seeds) the greedy network runs on `BatchedSched2Env` with the incremental reward; at every
step the script also asks `sched2_paper.window_hold(shortest=True)` (the hand rule in the same
action space, 0.87× DSIF's JCT on the test traces) what it would do. Prints:

* the action distribution: the share of steps where the network holds (φ) while a window job
  fits, against the rule's share in the same states, and while one fits at its best locality
  (where the rule never holds); among picks, the share that packing
  places at their best locality and the share that are the shortest fitting window job (the
  DSIF-like pick); agreement with the rule;
* calibration: Q(s, a) of the action taken against the discounted return that followed it on
  the same trajectory (γ from the card; the last 60 steps of each episode left out, where the
  return is cut short): mean of each, mean error, correlation, and by decile of Q;
* with ``--no-local-holds``, the same for the network with φ replaced by its best-Q pick among
  the window jobs packing places at their best locality, wherever there is one (what those
  holds cost);
* the top-two Q gap, and by how much Q(φ) beats the best pick where it holds while a job fits
  at its best locality, against the mean |Q − return| (whether the ranking is above its noise).

    PYTHONPATH=src python benchmarks/sched2_dqn_diagnose.py --policy DIR [--traces 8]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from sched2_paper import LOAD, packing_spans, window_hold

from dlsched.papers.sched2.batched_env import BatchedSched2Env
from dlsched.papers.sched2.paper import PAPER_VALIDATION_SEEDS
from dlsched.papers.sched2.policy import PAPER_POLICY_DIR, load_policy

TAIL = 60
"""Steps at the end of an episode whose discounted return is cut short (γ 0.9: 0.9^60 ≈ 0.2 %)."""


def run(
    policy: Path, seeds: list[int], jobs: int = 1000, no_local_holds: bool = False
) -> dict[str, object]:
    """The greedy episodes' per-step records, summarised (module docstring); with
    ``no_local_holds`` the network's φ is replaced by its best-Q pick among the window jobs
    packing places at their best locality, wherever there is one (a counterfactual: what
    those holds cost)."""
    net, _, card = load_policy(policy)
    net.eval()
    gamma = float(card.hyperparams.get("gamma", 0.99))
    hold_mask = str(card.hyperparams.get("hold_mask", "none"))  # the mask it was trained under
    env = BatchedSched2Env(
        len(seeds), num_jobs=jobs, load=LOAD, reward="incremental", hold_mask=hold_mask
    )
    obs, masks = env.reset(seeds)
    rule = window_hold(shortest=True)
    j, m = env.shape.slots, env.shape.gpus_per_server
    steps: list[dict[str, np.ndarray]] = []
    done = np.zeros(len(seeds), dtype=bool)
    metrics: dict[int, dict[str, float]] = {}
    while not done.all():
        with torch.no_grad():
            q = net(torch.as_tensor(obs)).numpy()
        qm = np.where(masks, q, -np.inf)
        act = qm.argmax(axis=1)
        top2 = np.sort(qm, axis=1)[:, -2:]
        best_pick = np.where(masks[:, :-1], q[:, :-1], -np.inf).max(axis=1)
        win = env.window()
        legal = masks[:, :j]
        demand = np.where(legal, env.ops.take(env.gpus, np.maximum(win, 0)), 0)
        local = legal & (packing_spans(env.free, demand) == -(-demand // m))
        work = np.where(legal, env.ops.take(env.work, np.maximum(win, 0)), np.inf)
        rows = np.arange(len(seeds))
        if no_local_holds:
            best_local = np.where(local, q[:, :j], -np.inf).argmax(axis=1)
            act = np.where((act == j) & local.any(axis=1), best_local, act)
        pick = act < j
        steps.append({
            "live": ~done,
            "q": q[rows, act],
            "gap": np.where(np.isfinite(top2[:, 0]), top2[:, 1] - top2[:, 0], np.nan),
            "fits": legal.any(axis=1),
            "fits_local": local.any(axis=1),
            "hold_margin": q[:, -1] - best_pick,
            "hold": ~pick,
            "rule_hold": rule(env, obs, masks) == j,
            "agree": rule(env, obs, masks) == act,
            "local": pick & local[rows, np.minimum(act, j - 1)],
            "shortest": pick & (work[rows, np.minimum(act, j - 1)] <= work.min(axis=1)),
        })  # fmt: skip
        obs, rewards, ended, masks, info = env.step(act)
        steps[-1]["r"] = np.asarray(rewards)
        metrics.update(info["episodes"])
        done |= np.asarray(ended)
    rec = {k: np.stack([s[k] for s in steps]) for k in steps[0]}  # (T, B)
    ret = np.zeros_like(rec["r"])
    acc = np.zeros(len(seeds))
    for t in range(len(steps) - 1, -1, -1):
        acc = rec["r"][t] + gamma * acc * rec["live"][t]
        ret[t] = acc
    live = rec["live"].astype(bool)
    last = live.sum(axis=0)  # steps per episode
    cut = np.arange(len(steps))[:, None] < np.maximum(last - TAIL, last // 2)[None, :]
    fits = live & rec["fits"]
    picks = live & ~rec["hold"]
    local_holds = live & rec["fits_local"] & rec["hold"]
    q, g = rec["q"][cut], ret[cut]
    order = np.argsort(q)
    deciles = [(float(q[part].mean()), float(g[part].mean())) for part in np.array_split(order, 10)]
    return {
        "gamma": gamma,
        "steps": int(live.sum()),
        "avg_jct_s": float(np.mean([r["avg_jct_s"] for r in metrics.values()])),
        "avg_effectiveness": float(np.mean([r["avg_effectiveness"] for r in metrics.values()])),
        "hold_share_when_a_job_fits": float(rec["hold"][fits].mean()),
        "rule_hold_share_when_a_job_fits": float(rec["rule_hold"][fits].mean()),
        "hold_share_when_a_job_fits_at_best_locality": float(
            rec["hold"][live & rec["fits_local"]].mean()
        ),
        "agree_with_rule": float(rec["agree"][live].mean()),
        "median_q_hold_minus_best_pick_where_it_holds_and_a_local_job_fits": float(
            np.median(margins) if len(margins := rec["hold_margin"][local_holds]) else np.nan
        ),
        "picks_at_best_locality": float(rec["local"][picks].mean()),
        "picks_shortest_fitting": float(rec["shortest"][picks].mean()),
        "q_mean": float(q.mean()),
        "return_mean": float(g.mean()),
        "q_minus_return_mean": float((q - g).mean()),
        "abs_q_minus_return_mean": float(np.abs(q - g).mean()),
        "q_return_corr": float(np.corrcoef(q, g)[0, 1]),
        "top2_gap_mean": float(np.nanmean(rec["gap"][live & np.isfinite(rec["gap"])])),
        "q_deciles_q_vs_return": deciles,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", type=Path, default=PAPER_POLICY_DIR)
    parser.add_argument("--traces", type=int, default=len(PAPER_VALIDATION_SEEDS))
    parser.add_argument("--jobs", type=int, default=1000, help="jobs per trace (1000: the paper)")
    parser.add_argument(
        "--no-local-holds",
        action="store_true",
        help="counterfactual: the network's best local pick instead of φ where one exists",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the summary here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    seeds = list(PAPER_VALIDATION_SEEDS[: args.traces])
    out = run(args.policy, seeds, args.jobs, args.no_local_holds)
    for key, value in out.items():
        if key == "q_deciles_q_vs_return":
            text = "  ".join(f"{a:.2f}/{b:.2f}" for a, b in value)  # type: ignore[attr-defined]
            print(f"{key:<34} {text}")
        else:
            print(f"{key:<34} {value:.4f}" if isinstance(value, float) else f"{key:<34} {value}")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
