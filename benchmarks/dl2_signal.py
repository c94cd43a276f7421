"""Is there a signal for DL2's actor-critic to learn near its supervised start? (issue 29)

Paired rollouts on the same arrivals and the same speed noise (common random numbers: every
variant of a trace runs in its own copy of that trace in one `Dl2BatchedEnv`, whose noise stream
is seeded by the trace seed). Per trace, against the greedy start (``--init``, default the
shipped ``dl2:paper`` = its DRF supervised start):

* ``slotK``: greedy, except the first action of slot K, which is a random legal action other
  than the greedy one (then greedy again). Its paired difference of the paper's discounted
  return from slot K on (``Σ_k γ^k r_{K+k}``, γ = 0.9 per slot) is the true advantage of one
  deviation, Q(s, a') − Q(s, a_greedy), without any critic; its paired difference of average
  JCT is what the deviation does to the objective.
* ``eps``: every action is a random legal one with probability ``--eps`` (random exploration).
* ``sample``: the stochastic policy RL trains (actions drawn from π), ``--samples`` copies with
  different action draws: the spread of their returns on one trace is the noise a policy
  gradient sees even with a perfect per-trace baseline.
* ``temp``: actions drawn from softmax(logits / ``--temp``) (a less confident start).
* ``mixA`` (with ``--other``, e.g. the same network imitating Optimus): each slot is allocated
  by the other policy with probability A, else by the start (greedy both): the objective along
  the path from the start to a known better policy.

The speed noise is one stream per trace read in order, so a deviation that changes how many
jobs run also changes every later draw: ``--noise 0`` removes it, to tell the policy's own
effect from the noise it reshuffles.

    PYTHONPATH=src python benchmarks/dl2_signal.py --traces 8 --out /tmp/dl2_signal.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dlsched.papers.dl2.batched_env import Dl2BatchedEnv
from dlsched.papers.dl2.env import TRAIN_SEED_MIN
from dlsched.papers.dl2.network import load, masked_logits

SHIPPED_START = Path(__file__).resolve().parents[1] / "src/dlsched/papers/dl2/policies/dl2_paper"


def variants(args: argparse.Namespace) -> list[tuple[str, dict[str, Any]]]:
    """(name, rule) of every copy run on each trace."""
    out: list[tuple[str, dict[str, Any]]] = [("greedy", {})]
    out += [(f"slot{k}", {"slot": k}) for k in args.slots]
    out += [(f"eps{i}", {"eps": args.eps}) for i in range(args.samples)]
    out += [(f"sample{i}", {"temp": 1.0}) for i in range(args.samples)]
    out += [(f"temp{i}", {"temp": args.temp}) for i in range(args.samples)]
    if args.other is not None:
        out += [(f"mix{a:g}_{i}", {"mix": a}) for a in args.mix for i in range(args.samples)]
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every variant on every trace; per (trace, variant) avg JCT and slot rewards."""
    torch.set_num_threads(1)
    policy, cfg = load(args.init)
    policy.eval()
    second = load(args.other)[0].eval() if args.other is not None else policy
    rules = variants(args)
    seeds = [TRAIN_SEED_MIN + args.first_seed + i for i in range(args.traces)]
    plan = [(s, name, rule) for s in seeds for name, rule in rules]
    B = len(plan)
    options: dict[str, Any] = {} if args.noise is None else {"noise": args.noise}
    if args.jobs is not None:
        options["num_jobs"] = args.jobs
    env = Dl2BatchedEnv(B, shape=cfg.shape(), seed=0, **options)
    env.reset([s for s, _, _ in plan])
    rng = np.random.default_rng(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    slot = np.zeros(B, dtype=np.int64)
    first = np.ones(B, dtype=bool)  # the next action is its slot's first
    rewards: list[list[float]] = [[] for _ in range(B)]
    job_s = np.zeros(B)
    jct = np.full(B, np.nan)
    alive = np.ones(B, dtype=bool)
    want_slot = np.array([r.get("slot", -1) for _, _, r in plan])
    eps = np.array([r.get("eps", 0.0) for _, _, r in plan])
    temp = np.array([r.get("temp", 0.0) for _, _, r in plan])
    mix = np.array([r.get("mix", 0.0) for _, _, r in plan])
    use_other = rng.random(B) < mix  # this slot allocated by the other policy
    nonzero_temp = torch.from_numpy(np.where(temp > 0, temp, 1.0)).float()[:, None]
    steps, t0 = 0, time.perf_counter()
    while alive.any():
        obs, mask = env.tensors()
        with torch.no_grad():
            logits = masked_logits(policy(obs), mask)
            drawn = torch.multinomial(torch.softmax(logits / nonzero_temp, 1), 1, generator=gen)
            theirs = masked_logits(second(obs), mask).argmax(1).numpy()
        act = np.where(temp > 0, drawn[:, 0].numpy(), logits.argmax(1).numpy())
        act = np.where(use_other, theirs, act)
        legal = env.mask.copy()
        rand = np.where(legal, rng.random(legal.shape), -1.0).argmax(1)
        act = np.where((eps > 0) & (rng.random(B) < eps), rand, act)
        hit = first & (slot == want_slot)
        if hit.any():
            other = legal.copy()
            other[np.arange(B), act] = False
            other[~other.any(1)] = legal[~other.any(1)]
            pick = np.where(other, rng.random(other.shape), -1.0).argmax(1)
            act = np.where(hit, pick, act)
        act = np.where(alive, act, 0)  # ended copies: any legal action (never read)
        act = np.where(env.mask[np.arange(B), act], act, env.mask.argmax(1))
        _, _, r, term, trunc, slot_end = env.step(act)
        steps += 1
        for b in np.flatnonzero(slot_end & alive):
            rewards[b].append(float(r[b]))
        job_s += np.where(slot_end & alive, env.job_s, 0.0)
        slot += slot_end
        first = slot_end.copy()
        use_other = np.where(slot_end, rng.random(B) < mix, use_other)
        for b in np.flatnonzero((term | trunc) & alive):
            alive[b] = False
            n = np.isfinite(env.submit[b]).sum()
            jct[b] = job_s[b] / n if term[b] else np.inf
    return {
        "plan": [(s, name) for s, name, _ in plan],
        "jct": jct.tolist(),
        "rewards": rewards,
        "steps": steps,
        "wall_s": time.perf_counter() - t0,
    }


def discounted_from(rewards: list[float], k: int, gamma: float) -> float:
    tail = np.asarray(rewards[k:], dtype=np.float64)
    return float((tail * gamma ** np.arange(len(tail))).sum())


def kind_of(name: str) -> str:
    """``sample2`` → ``sample``, ``mix0.25_1`` → ``mix0.25``."""
    return name.split("_")[0] if name.startswith("mix") else name.rstrip("0123456789")


def summarise(res: dict[str, Any], slots: list[int], gamma: float) -> dict[str, Any]:
    """Paired differences against each trace's greedy copy."""
    by: dict[tuple[int, str], int] = {(s, n): i for i, (s, n) in enumerate(res["plan"])}
    seeds = sorted({s for s, _ in res["plan"]})
    jct, rew = res["jct"], res["rewards"]
    out: dict[str, Any] = {}
    greedy = np.array([jct[by[(s, "greedy")]] for s in seeds])
    out["greedy_jct_mean"] = float(greedy.mean())
    for k in slots:
        dj, dq, tdq = [], [], []
        for s in seeds:
            g, p = by[(s, "greedy")], by[(s, f"slot{k}")]
            if len(rew[g]) <= k:
                continue
            dj.append(jct[p] / jct[g] - 1.0)
            dq.append(discounted_from(rew[p], k, gamma) - discounted_from(rew[g], k, gamma))
            tdq.append(rew[p][k] - rew[g][k])
        out[f"slot{k}"] = {
            "n": len(dj),
            "djct_rel_mean": float(np.mean(dj)), "djct_rel_sd": float(np.std(dj)),
            "dQ_mean": float(np.mean(dq)), "dQ_sd": float(np.std(dq)),
            "dr_slot_mean": float(np.mean(tdq)), "dr_slot_sd": float(np.std(tdq)),
        }  # fmt: skip
    names = sorted({kind_of(n) for _, n in res["plan"]} - {"greedy", "slot"})
    for kind in names:
        rel = np.array(
            [[jct[i] / jct[by[(s, "greedy")]] - 1.0 for (s2, n), i in by.items()
              if s2 == s and kind_of(n) == kind] for s in seeds]
        )  # fmt: skip
        g0 = np.array(
            [[discounted_from(rew[i], 0, gamma) for (s2, n), i in by.items()
              if s2 == s and kind_of(n) == kind] for s in seeds]
        )  # fmt: skip
        out[kind] = {
            "djct_rel_mean": float(rel.mean()),
            "djct_rel_sd_between_traces": float(rel.mean(1).std()),
            "djct_rel_sd_within_trace": float(rel.std(1, ddof=1).mean()) if rel.shape[1] > 1
            else float("nan"),
            "G0_sd_within_trace": float(g0.std(1, ddof=1).mean()) if g0.shape[1] > 1
            else float("nan"),
        }  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--init", type=Path, default=SHIPPED_START)
    parser.add_argument("--traces", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=5000, help="offset above the min")
    parser.add_argument("--slots", type=int, nargs="*", default=[10, 40, 80, 120, 160])
    parser.add_argument("--eps", type=float, default=0.05)
    parser.add_argument("--temp", type=float, default=2.0)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--gamma", type=float, default=0.9)
    parser.add_argument("--jobs", type=int, default=None, help="jobs a trace (default 200)")
    parser.add_argument("--other", type=Path, default=None, help="a second policy (mixA)")
    parser.add_argument("--mix", type=float, nargs="*", default=[0.1, 0.25, 0.5, 1.0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--noise", type=float, default=None,
        help="speed-noise level (default the workload's 0.273; 0: a deterministic cluster)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    res = run(args)
    summary = summarise(res, args.slots, args.gamma)
    summary.update(steps=res["steps"], wall_s=res["wall_s"], init=str(args.init))
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, **res}))


if __name__ == "__main__":
    main()
