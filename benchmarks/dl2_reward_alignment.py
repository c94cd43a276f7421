"""Does DL2's paper reward rank policies by average JCT? (issue 29, DL2 part)

DL2's slot reward ``r = Σ_i t_i / E_i`` (epochs each job trained in the slot over its total
epochs) sums to the number of jobs over any episode that finishes every job, whatever the
policy: the undiscounted return is a constant and carries no information about JCT. What an
actor-critic with discount γ a slot climbs is the discounted return-to-go
``G_t = Σ_k γ^k r_{t+k}`` averaged over the states it visits. This script runs several policies
on the same training traces in `Dl2Env` (the same arrivals and the simulator's noise seed) and
reports, per policy, the average JCT (exact time in system) beside the reward's statistics:

* ``slots``: slots to finish every job; ``mean_r``: the mean slot reward (= jobs / slots);
* ``G0``: the discounted return from the first slot (γ = ``--gamma``);
* ``mean_G``: the mean of ``G_t`` over the episode's slots (what on-policy samples average);
* the same two at γ = 0.99.

Then, across policies on each trace, the Spearman rank correlation of each statistic with
−avg JCT (1: the statistic ranks the policies exactly as average JCT does).

Policies: scheduler registry names (heuristics drive the environment through
`Dl2Slot.teacher_action`, as DL2's supervised phase replays its teacher), and ``net:PATH``
(a DL2 network, greedy).

``--deviations FILE …`` instead reads `dl2_signal.py` outputs (``--out``; each trace's greedy
copy and its ``slotK`` copies, one random legal action instead of the greedy one at slot K) and
reports, over every (trace, K) pair and for several discounts γ, the correlation of the
deviation's true advantage under the paper's reward (the paired difference of
``Σ_k γ^k r_{K+k}`` to the episode's end) with what it did to the episode's average JCT
(−ΔJCT ÷ JCT): does the paper's return, discounted as the paper does, credit an action for what
it does to JCT? (``lin``: ``−Σ_k k r_{K+k}``, the γ → 1 limit; the undiscounted return is the
same for every policy.)

    PYTHONPATH=src python benchmarks/dl2_reward_alignment.py --traces 6 --out /tmp/align.json
    PYTHONPATH=src python benchmarks/dl2_signal.py --traces 24 --slots 20 60 100 140 \
        --samples 0 --out /tmp/dev.json
    PYTHONPATH=src python benchmarks/dl2_reward_alignment.py --deviations /tmp/dev.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dlsched.papers.dl2.env import TRAIN_SEED_MIN, Dl2Env
from dlsched.papers.dl2.network import load, masked_logits
from dlsched.schedulers.registry import make_scheduler

SHIPPED_START = Path(__file__).resolve().parents[1] / "src/dlsched/papers/dl2/policies/dl2_paper"
DEFAULT_POLICIES = ["drf", "optimus", "efficient-srtf", "srtf", "fifo", f"net:{SHIPPED_START}"]


def episode(env: Dl2Env, policy: str, trace_seed: int) -> dict[str, Any]:
    """One episode of ``policy`` on ``trace_seed``: slot rewards, job-seconds per slot."""
    obs, info = env.reset(options={"trace_seed": trace_seed})
    net = None
    scheduler = None
    if policy.startswith("net:"):
        net = load(policy[4:])[0].eval()
    else:
        scheduler = make_scheduler(policy)
        scheduler.reset()
    assert env.time_in_system is not None
    rewards: list[float] = []
    job_s: list[float] = []
    done = False
    while not done:
        targets: dict[int, tuple[int, int]] = {}
        order: list[int] = []
        if scheduler is not None:
            view = env.view()
            decision = scheduler.decide(view).whole(view.running)
            targets = {j: (t.num_workers, t.num_ps) for j, t in decision.targets.items()}
            order = list(decision.targets)
        slot_end = False
        while not slot_end and not done:
            assert env.slot is not None
            if net is not None:
                with torch.no_grad():
                    logits = net(torch.from_numpy(obs).unsqueeze(0))[0]
                mask = torch.from_numpy(info["action_mask"])
                action = int(torch.argmax(masked_logits(logits, mask)))
            else:
                action = env.slot.teacher_action(targets, order)
            obs, r, term, trunc, info = env.step(action)
            slot_end = bool(info["slot_end"])
            done = term or trunc
            if slot_end:
                rewards.append(float(r))
                job_s.append(env.time_in_system.advance())
    n = len(env.driver.sim.specs) if env.driver is not None else 1
    finished = bool(term)
    return {
        "rewards": rewards,
        "job_s": job_s,
        "jct": sum(job_s) / n if finished else float("inf"),
        "finished": finished,
    }


def discounted_to_go(rewards: list[float], gamma: float) -> np.ndarray:
    """G_t = Σ_k γ^k r_{t+k} for every slot t."""
    g = np.zeros(len(rewards))
    acc = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        acc = rewards[t] + gamma * acc
        g[t] = acc
    return g


def stats(ep: dict[str, Any], gamma: float) -> dict[str, float]:
    r = ep["rewards"]
    out = {"jct": ep["jct"], "slots": float(len(r)), "return": float(sum(r))}
    out["mean_r"] = float(np.mean(r))
    for name, g in (("", gamma), ("_99", 0.99)):
        G = discounted_to_go(r, g)
        out[f"G0{name}"] = float(G[0])
        out[f"mean_G{name}"] = float(G.mean())
    return out


def spearman(x: list[float], y: list[float]) -> float:
    rx = np.argsort(np.argsort(x)).astype(float)
    ry = np.argsort(np.argsort(y)).astype(float)
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def deviation_pairs(paths: list[Path]) -> list[tuple[int, list[float], list[float], float]]:
    """(K, greedy copy's slot rewards, deviating copy's, ΔJCT ÷ JCT) of every pair."""
    rows = []
    for path in paths:
        d = json.loads(path.read_text())
        by = {(s, n): i for i, (s, n) in enumerate(d["plan"])}
        for (s, name), p in by.items():
            if not name.startswith("slot"):
                continue
            k, g = int(name[4:]), by[(s, "greedy")]
            if len(d["rewards"][g]) > k:
                rows.append((k, d["rewards"][g], d["rewards"][p], d["jct"][p] / d["jct"][g] - 1))
    return rows


def deviations(paths: list[Path], gammas: list[float]) -> dict[str, Any]:
    """Correlation of each discount's true advantage with −ΔJCT (module docstring)."""
    rows = deviation_pairs(paths)
    dj = np.array([r[3] for r in rows])
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {"pairs": len(rows), "djct_mean": dj.mean(), "djct_sd": dj.std()}
    for gamma in [*gammas, None]:
        if gamma is None:  # γ → 1: minus the reward-weighted mean slot of the progress
            q = np.array([(np.arange(len(p) - k) * p[k:]).sum() for k, _, p, _ in rows])
            q -= np.array([(np.arange(len(g) - k) * g[k:]).sum() for k, g, _, _ in rows])
            q = -q
        else:
            q = np.array(
                [discounted_to_go(p[k:], gamma)[0] - discounted_to_go(g[k:], gamma)[0]
                 for k, g, p, _ in rows]
            )  # fmt: skip
        boot = []
        for _ in range(1000):
            i = rng.integers(0, len(q), len(q))
            boot.append(np.corrcoef(q[i], -dj[i])[0, 1])
        moved = q != 0
        out["lin" if gamma is None else f"{gamma:g}"] = {
            "corr": float(np.corrcoef(q, -dj)[0, 1]),
            "corr_95ci": [float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))],
            "spearman": spearman(q.tolist(), (-dj).tolist()),
            "sign_agreement": float(np.mean(np.sign(q[moved]) == np.sign(-dj[moved]))),
            "dQ_mean": float(q.mean()),
            "dQ_sd": float(q.std()),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", nargs="*", default=DEFAULT_POLICIES)
    parser.add_argument("--traces", type=int, default=6)
    parser.add_argument("--first-seed", type=int, default=9000, help="offset above the min")
    parser.add_argument("--gamma", type=float, default=0.9)
    parser.add_argument("--jobs", type=int, default=None, help="jobs a trace (default 200)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--deviations", type=Path, nargs="*", default=None)
    parser.add_argument(
        "--gammas", type=float, nargs="*", default=[0, 0.5, 0.8, 0.9, 0.95, 0.97, 0.99, 0.999]
    )
    args = parser.parse_args()
    if args.deviations:
        print(json.dumps(deviations(args.deviations, args.gammas), indent=1, default=float))
        return
    torch.set_num_threads(1)
    env = Dl2Env(reward="paper", **({} if args.jobs is None else {"num_jobs": args.jobs}))
    seeds = [TRAIN_SEED_MIN + args.first_seed + i for i in range(args.traces)]
    table: dict[str, dict[int, dict[str, float]]] = {p: {} for p in args.policies}
    t0 = time.process_time()
    for s in seeds:
        for p in args.policies:
            table[p][s] = stats(episode(env, p, s), args.gamma)
            print(p, s, json.dumps(table[p][s]), flush=True)
    keys = ["slots", "mean_r", "G0", "mean_G", "G0_99", "mean_G_99"]
    summary: dict[str, Any] = {"policies": {}, "spearman_vs_minus_jct": {}}
    for p in args.policies:
        rows = list(table[p].values())
        summary["policies"][p] = {
            k: float(np.mean([row[k] for row in rows])) for k in ["jct", "return", *keys]
        }
    for k in keys:
        rho = [
            spearman([-table[p][s]["jct"] for p in args.policies],
                     [table[p][s][k] for p in args.policies])
            for s in seeds
        ]  # fmt: skip
        summary["spearman_vs_minus_jct"][k] = {"mean": float(np.nanmean(rho)), "per_trace": rho}
    summary["cpu_s"] = time.process_time() - t0
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "table": table}))


if __name__ == "__main__":
    main()
