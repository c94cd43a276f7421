"""Does pairing copies of a trace give DL2's policy gradient a signal? (issue 29)

The companion of `dl2_gradient_snr.py` (which measured the paper's critic advantage: no signal
in 524,288 samples) for `dlsched.papers.dl2.paired`: each group is ``--traces`` training traces
× ``--copies`` copies, each trace's copies burned in greedily for a random 0 … ``--max-burn``
slots (a random phase), then sampling from the start π for ``--window`` recorded slots and
``--horizon`` more slots of return (γ per slot). Per group, the policy gradient
``∇ mean(A · log π(a|s))`` with, on the same samples:

* ``rloo``: A = the copy's discounted return from the slot − the other copies' mean;
* ``unpaired``: A = the return − the mean return of the *other traces'* copies at the same
  window slot (a baseline that knows the phase, not the trace: what pairing adds);
* ``control``: ``rloo``'s advantages permuted among the group's samples (no signal: the
  estimator's floor).

Also, over all groups, the mean advantage (± s.e.) of a copy's window slot in which it took at
least one non-greedy action and of one in which it took none (``deviation_slots``): are the
start's own deviations better or worse than following it?

Over groups: signal², noise² and the samples an update needs for SNR 1 (`dl2_gradient_snr.snr`).
``--noise stream`` runs the copies on the simulator's one noise stream per trace instead of
per-job noise (a changed action reshuffles later draws). ``--line S …`` steps the start along
each mean gradient (L2 length S) and scores the greedy policy on ``--line-traces`` training
traces (avg JCT ÷ the start's, mean).

``--save-grads DIR`` also writes each group's ``rloo`` and ``control`` gradients there
(``rloo_M.npy``, float32, ~1 MB each), so that several processes' groups can be pooled:
``--combine DIR …`` computes the statistics over every group saved in those directories.

    PYTHONPATH=src python benchmarks/dl2_paired_snr.py --groups 12 --traces 4 --copies 4
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dl2_gradient_snr import line_search, snr

from dlsched.papers.dl2.batched_env import Dl2BatchedEnv
from dlsched.papers.dl2.env import TRAIN_SEED_MIN
from dlsched.papers.dl2.network import load, masked_logits
from dlsched.papers.dl2.paired import (
    paired_rollout,
    policy_gradient_loss,
    returns_to_go,
    rloo_advantages,
)

SHIPPED_START = Path(__file__).resolve().parents[1] / "src/dlsched/papers/dl2/policies/dl2_paper"


def unpaired_advantages(batch, gamma: float) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Return − the mean return of the other traces' copies at the same window slot."""
    window = batch.window
    G = returns_to_go(batch.rewards, gamma, window)
    K = batch.copies
    per_trace = G.reshape(-1, K, window).mean(1)  # (P, window)
    P = per_trace.shape[0]
    others = (per_trace.sum(0, keepdims=True) - per_trace) / max(P - 1, 1)
    base = np.repeat(others, K, axis=0)
    return (G - base)[batch.env, batch.slot].astype(np.float32)


def deviation_advantages(
    policy: torch.nn.Module, batch, adv: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """Per copy and window slot, its advantage, split by whether it took a non-greedy action."""
    with torch.no_grad():
        logits = masked_logits(policy(torch.from_numpy(batch.obs)), torch.from_numpy(batch.masks))
    deviated = batch.actions != logits.argmax(1).numpy()
    keys, inv = np.unique(batch.env * (batch.window + 1) + batch.slot, return_inverse=True)
    any_dev = np.zeros(len(keys), dtype=bool)
    np.logical_or.at(any_dev, inv, deviated)
    slot_adv = np.zeros(len(keys))
    slot_adv[inv] = adv
    return slot_adv[any_dev], slot_adv[~any_dev]


def _mean_se(x: list[float]) -> dict[str, float]:
    a = np.asarray(x)
    return {"n": len(a), "mean": float(a.mean()), "se": float(a.std(ddof=1) / np.sqrt(len(a)))}


def gradient(policy: torch.nn.Module, batch, adv: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    policy.zero_grad()
    policy_gradient_loss(policy, batch, adv).backward()
    return -torch.cat([p.grad.flatten() for p in policy.parameters()]).numpy().copy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--init", type=Path, default=SHIPPED_START)
    parser.add_argument("--gamma", type=float, default=0.9)
    parser.add_argument("--groups", type=int, default=12)
    parser.add_argument("--traces", type=int, default=4)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--window", type=int, default=8)
    parser.add_argument("--horizon", type=int, default=30)
    parser.add_argument("--max-burn", type=int, default=200)
    parser.add_argument("--after", default="sample", choices=("sample", "greedy"))
    parser.add_argument("--noise", default="per_job", choices=("per_job", "stream"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--first-trace", type=int, default=20_000)
    parser.add_argument("--line", type=float, nargs="*", default=[])
    parser.add_argument("--line-traces", type=int, default=6)
    parser.add_argument("--max-seconds", type=float, default=1e9)
    parser.add_argument(
        "--jct-gamma", type=float, default=None,
        help="also the gradient of minus job-hours (the JCT reward) on the same rollouts",
    )  # fmt: skip
    parser.add_argument(
        "--also-gammas", type=float, nargs="*", default=[],
        help="also the paper reward's gradient at these discounts, on the same rollouts",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--save-grads", type=Path, default=None)
    parser.add_argument("--combine", type=Path, nargs="*", default=None)
    args = parser.parse_args()
    if args.combine:
        combined = combine(args.combine)
        print(json.dumps(combined, indent=1))
        if args.out:
            args.out.write_text(json.dumps(combined, indent=1))
        return
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    policy, cfg = load(args.init)
    env = Dl2BatchedEnv(
        args.traces * args.copies, shape=cfg.shape(), seed=args.seed, noise=args.noise
    )
    rng = np.random.default_rng(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    grads: dict[str, list[np.ndarray]] = {"rloo": [], "unpaired": [], "control": []}
    if args.jct_gamma is not None:
        grads.update(rloo_jct=[], control_jct=[])
    for g in args.also_gammas:
        grads[f"rloo_g{g:g}"] = []
    paired_adv: list[np.ndarray] = []  # (paper advantage, jct advantage) of every action
    sizes: list[int] = []
    deviated_slots: list[float] = []
    greedy_slots: list[float] = []
    out: dict[str, object] = {}
    for m in range(args.groups):
        if time.perf_counter() - t0 > args.max_seconds:
            break
        base = TRAIN_SEED_MIN + args.first_trace + m * args.traces
        seeds = [base + i for i in range(args.traces)]
        burn = rng.integers(0, args.max_burn + 1, size=args.traces).tolist()
        batch = paired_rollout(
            env, policy, seeds, burn, window=args.window, horizon=args.horizon, gen=gen,
            after=args.after,
        )  # fmt: skip
        adv = rloo_advantages(batch, args.gamma)
        grads["rloo"].append(gradient(policy, batch, adv))
        grads["unpaired"].append(gradient(policy, batch, unpaired_advantages(batch, args.gamma)))
        grads["control"].append(gradient(policy, batch, adv[rng.permutation(len(adv))]))
        sizes.append(len(adv))
        if args.jct_gamma is not None:  # the same rollouts, minus job-hours as the reward
            jct_batch = dataclasses.replace(batch, rewards=-batch.job_hours)
            adv_j = rloo_advantages(jct_batch, args.jct_gamma)
            grads["rloo_jct"].append(gradient(policy, batch, adv_j))
            grads["control_jct"].append(gradient(policy, batch, adv_j[rng.permutation(len(adv))]))
            paired_adv.append(np.stack([adv, adv_j], 1))
        for g in args.also_gammas:  # the paper's reward at another discount, same rollouts
            adv_g = rloo_advantages(batch, g)
            grads[f"rloo_g{g:g}"].append(gradient(policy, batch, adv_g))
            if args.jct_gamma is not None:
                paired_adv[-1] = np.concatenate([paired_adv[-1], adv_g[:, None]], 1)
        dev, kept = deviation_advantages(policy, batch, adv)
        deviated_slots += dev.tolist()
        greedy_slots += kept.tolist()
        if args.save_grads:
            args.save_grads.mkdir(parents=True, exist_ok=True)
            for name in ("rloo", "control"):
                np.save(args.save_grads / f"{name}_{m}.npy", grads[name][-1].astype(np.float32))
            with (args.save_grads / "sizes.txt").open("a") as f:
                f.write(f"{m} {len(adv)}\n")
        if m < 2:
            continue
        n = int(np.mean(sizes))
        out = {
            "args": {k: str(v) for k, v in vars(args).items()},
            "groups": m + 1,
            "mean_group_samples": n,
            "adv_std_rloo": float(adv.std()),
            "deviation_slots": {
                "with_a_non_greedy_action": _mean_se(deviated_slots),
                "greedy_only": _mean_se(greedy_slots),
            },
            **{k: snr(np.stack(g), n) for k, g in grads.items()},
            **alignment(paired_adv, [args.gamma, *args.also_gammas], args.jct_gamma),
            "wall_s": time.perf_counter() - t0,
        }
        print(json.dumps({k: out[k] for k in ("groups", "wall_s")}), flush=True)
        if args.out:
            args.out.write_text(json.dumps(out, indent=1))
    if args.line:
        seeds = [TRAIN_SEED_MIN + 9000 + i for i in range(args.line_traces)]
        shim = SimpleNamespace(learner=SimpleNamespace(policy=policy), cfg=cfg)
        out["line"] = {
            name: line_search(shim, np.stack(grads[name]).mean(0), args.line, seeds)  # type: ignore[arg-type]
            for name in ("rloo", "control")
        }
        if args.out:
            args.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


def alignment(
    paired_adv: list[np.ndarray], gammas: list[float], jct_gamma: float | None
) -> dict[str, object]:
    """Do the paper's (at each of ``gammas``) and the JCT reward's leave-one-out advantages
    agree, action by action? Columns of ``paired_adv``: paper at gammas[0], jct, paper at the
    rest of ``gammas``."""
    if not paired_adv:
        return {}
    a = np.concatenate(paired_adv)
    out: dict[str, object] = {"jct_gamma": jct_gamma, "n": len(a), "sd_jct": float(a[:, 1].std())}
    for col, g in zip([0, *range(2, a.shape[1])], gammas, strict=True):
        both = (a[:, col] != 0) & (a[:, 1] != 0)
        out[f"paper_g{g:g}"] = {
            "corr_with_jct": float(np.corrcoef(a[:, col], a[:, 1])[0, 1]),
            "sign_agreement": float(np.mean(np.sign(a[both, col]) == np.sign(a[both, 1]))),
            "sd": float(a[:, col].std()),
        }
    return {"paper_vs_jct_advantage": out}


def combine(dirs: list[Path]) -> dict[str, object]:
    """`snr` over every group saved by ``--save-grads`` in ``dirs`` (pooled processes)."""
    out: dict[str, object] = {"dirs": [str(d) for d in dirs]}
    sizes = [
        int(line.split()[1])
        for d in dirs
        for line in (d / "sizes.txt").read_text().split("\n")
        if line
    ]
    for name in ("rloo", "control"):
        files = sorted(f for d in dirs for f in d.glob(f"{name}_*.npy"))
        grads = np.stack([np.load(f).astype(np.float64) for f in files])
        out[name] = snr(grads, int(np.mean(sizes)))
        out["groups"] = len(files)
    out["mean_group_samples"] = int(np.mean(sizes))
    out["samples"] = int(np.sum(sizes))
    return out


if __name__ == "__main__":
    main()
