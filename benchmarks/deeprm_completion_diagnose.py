"""Fig. 5's completion-time objective at load 1.3: where do DeepRM's policies stand, and is
there a gradient to follow? Short diagnostics, DeepRM's own cluster.

    PYTHONPATH=src nice -n 10 .venv/bin/python benchmarks/deeprm_completion_diagnose.py \
        --part eval deeprm:paper deeprm:paper@1.3 path/to/policy
    PYTHONPATH=src nice -n 10 .venv/bin/python benchmarks/deeprm_completion_diagnose.py \
        --part gradient deeprm:paper@1.3

``eval``: average completion time (steps) on the validation jobsets (800,000+; never the
held-out 9001–9030) of each policy with sampled actions (``--samples`` sampling seeds, every
action offered, as validation runs them; their mean and, as an oracle bound, their per-jobset
best) and with arg-max actions (every action offered, or invalid ones masked), beside SJF and
Tetris★ on the same 10 slots, on 20 and on the 10 shortest waiting jobs (``ranked``, near the
Simulator's whole queue); paired differences to SJF on the 10 slots (± 95 % t interval).
``gradient``: the paper trainer's policy gradient (`deeprm_gradient_agreement.py`'s method:
disjoint groups of fresh jobsets, 20 episodes each) under each objective and discount, with the
advantage and return scale of its decisions (std over decisions): which reward gives REINFORCE
a consistent direction from the same network.
"""

from __future__ import annotations

import argparse
import time
from itertools import combinations

import numpy as np
import torch

from dlsched.experiments.compare import mean_ci95
from dlsched.papers.deeprm.algorithm import evaluate, run_batch
from dlsched.papers.deeprm.config import make_jobsets
from dlsched.papers.deeprm.fits import policy_path
from dlsched.papers.deeprm.net import DeepRMPolicyNet
from dlsched.papers.deeprm.paper import PaperConfig, PaperReinforce
from dlsched.papers.deeprm.policy import load_policy
from dlsched.papers.deeprm.shape import DeepRMShape
from dlsched.papers.deeprm.state import DeepRMBatch
from dlsched.papers.deeprm.teachers import sjf_actions, tetris_star_actions
from dlsched.papers.deeprm.train import VALIDATION_MAX_STEPS


def _net(spec: str) -> DeepRMPolicyNet:
    """``deeprm:ARG`` (what the Simulator's ``deeprm:ARG`` runs) or a policy folder."""
    folder = policy_path(spec.split(":", 1)[1]) if spec.startswith("deeprm:") else spec
    return load_policy(folder)[1]


def _row(name: str, values: np.ndarray, sjf: np.ndarray) -> str:
    mean, half = mean_ci95(list(values))
    diff = values - sjf
    d, dh = mean_ci95(list(diff))
    lower = f"{(diff < 0).sum()}/{len(diff)}"
    return f"| {name} | {mean:.3f} ± {half:.3f} | {d:+.3f} ± {dh:.3f} | {lower} |"


def part_eval(args: argparse.Namespace) -> None:
    """Completion time of each policy, sampled and arg-max, beside the slot heuristics."""
    low, _, high = args.seeds.partition("-")
    jobsets = make_jobsets(list(range(int(low), int(high or low) + 1)), args.load, 50)
    rows: dict[str, np.ndarray] = {}
    shapes = {
        "10 slots": DeepRMShape(),
        "20 slots": DeepRMShape(slots=20),
        "10 shortest, ranked": DeepRMShape(ranked=True),
    }
    for view, shape in shapes.items():
        for name, choose in (("sjf", sjf_actions), ("tetris-star", tetris_star_actions)):
            batch = DeepRMBatch(jobsets, shape, max_steps=VALIDATION_MAX_STEPS)
            rows[f"{name} ({view})"] = np.asarray(run_batch(batch, choose).metric("completion"))
    for spec in args.policies:
        net = _net(spec)
        runs = [
            evaluate(net, jobsets, seed=s, mask_invalid=False, max_steps=VALIDATION_MAX_STEPS)
            for s in range(1, args.samples + 1)
        ]
        sampled = np.array([np.asarray(r.metric("completion")) for r in runs])
        rows[f"{spec}, sampled ({args.samples})"] = sampled.mean(axis=0)
        rows[f"{spec}, hindsight best of {args.samples} samples (an oracle)"] = sampled.min(axis=0)
        for masked in (False, True):
            label = ", invalid masked" if masked else ""
            if masked:
                runs = [
                    evaluate(
                        net, jobsets, seed=s, mask_invalid=True, max_steps=VALIDATION_MAX_STEPS
                    )
                    for s in range(1, args.samples + 1)
                ]
                rows[f"{spec}, sampled ({args.samples}){label}"] = np.mean(
                    [np.asarray(r.metric("completion")) for r in runs], axis=0
                )
            rows[f"{spec}, arg-max{label}"] = np.asarray(
                evaluate(
                    net, jobsets, greedy=True, mask_invalid=masked, max_steps=VALIDATION_MAX_STEPS
                ).metric("completion"),
                float,
            )
    sjf = rows["sjf (10 slots)"]
    print(f"load {args.load:g}, seeds {args.seeds}: average completion time (steps)")
    print("| policy | completion | paired − SJF (10 slots) | lower on |")
    print("| --- | --- | --- | --- |")
    for name, values in rows.items():
        print(_row(name, values, sjf), flush=True)


def part_gradient(args: argparse.Namespace) -> None:
    """Gradient agreement between groups, per objective and discount."""
    print(f"load {args.load:g}: {args.groups} groups x {args.jobsets} fresh jobsets x 20 episodes")
    print(
        "| policy | objective | γ | signal² | noise² of a group | SNR of a 100-jobset iteration "
        "| cosine | advantage std | return std | entropy |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for spec in args.policies:
        settings = [("slowdown", 1.0)] + [("completion", float(g)) for g in args.gammas.split(",")]
        for objective, gamma in settings:
            config = PaperConfig(
                loads=(args.load,),
                jobsets=args.groups * args.jobsets,
                fresh_jobsets=True,
                seed=0,
                objective=objective,
                gamma=gamma,  # type: ignore[arg-type]
            )
            trainer = PaperReinforce(config, net=_net(spec))
            grads, adv, ret, ent, n = [], [], [], 0.0, 0
            for g in range(args.groups):
                part = trainer.part(9000, g, range(g * args.jobsets, (g + 1) * args.jobsets))
                flat = torch.cat([t.reshape(-1) for t in part["grads"]]).double().numpy()
                grads.append(flat / max(part["samples"], 1))
                adv.append(part["adv"])
                ret.append(part["values"])
                ent += part["entropy"]
                n += part["samples"]
            dots = [float(a @ b) for a, b in combinations(grads, 2)]
            signal2 = float(np.mean(dots))
            noise2 = float(np.mean([g @ g for g in grads])) - signal2
            cos = np.mean(
                [a @ b / (np.linalg.norm(a) * np.linalg.norm(b)) for a, b in combinations(grads, 2)]
            )
            snr = signal2 / (noise2 * args.jobsets / 100)
            print(
                f"| {spec} | {objective} | {gamma:g} | {signal2:.3g} | {noise2:.3g} | {snr:.3f} | "
                f"{cos:.3f} | {np.concatenate(adv).std():.3g} | {np.concatenate(ret).std():.3g} | "
                f"{ent / max(n, 1):.3f} |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("eval", "gradient", "all"), default="eval")
    parser.add_argument("--load", type=float, default=1.3)
    parser.add_argument("--seeds", default="800000-800029", help="validation seeds, LOW-HIGH")
    parser.add_argument("--samples", type=int, default=3, help="sampled episodes a jobset")
    parser.add_argument("--groups", type=int, default=6)
    parser.add_argument("--jobsets", type=int, default=15, help="jobsets a group")
    parser.add_argument("--gammas", default="1,0.95", help="discounts of the completion runs")
    parser.add_argument("policies", nargs="+", help="deeprm:ARG specs or policy folders")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cpu0 = time.process_time()
    if args.part in ("eval", "all"):
        part_eval(args)
    if args.part in ("gradient", "all"):
        part_gradient(args)
    print(f"CPU {time.process_time() - cpu0:.0f} s")


if __name__ == "__main__":
    main()
