"""Evaluate saved MaskablePPO models against baselines on held-out seeds, paired by seed.

For each scheduler: the mean (95 % CI) of a metric over the seeds; for each model, the mean
(95 % CI) of its per-seed difference to each baseline (paired: the same jobset or trace), and
on how many seeds it is better. Usage (from the repository root)::

    PYTHONPATH=src python benchmarks/paired_eval.py dlsched/DeepRM-v0 \\
        --model ppo=runs/ppo_deeprm25/model.zip --seeds 900010-900049 --baselines sjf,tetris-star \\
        -o load=1.3 -o horizon_steps=50 -o reward=wait -o observation=compact \\
        -o work_conserving=True -o window=shortest --metric avg_slowdown

``--rule first`` adds a fixed policy through the same adapter: the first offered action after
∅ (DeepRM: the first slot job that fits; with ``window="shortest"`` the shortest one).
"""

from __future__ import annotations

import argparse
import ast
import logging
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from dlsched.experiments.compare import mean_ci95, parse_seeds, run_grid
from dlsched.rl.adapter import PolicyAdapter, from_sb3
from dlsched.workloads.deeprm import STEP_S


def _option(text: str) -> tuple[str, Any]:
    key, _, value = text.partition("=")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


def _first(obs: np.ndarray, mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask[1:])[0]) + 1 if mask[1:].any() else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env_id")
    parser.add_argument("--model", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--rule", action="append", default=[], choices=["first"])
    parser.add_argument("--seeds", required=True)
    parser.add_argument("--baselines", default="")
    parser.add_argument("-o", dest="options", action="append", default=[], type=_option)
    parser.add_argument("--metric", default="avg_jct_s")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    torch.set_num_threads(1)
    from sb3_contrib import MaskablePPO

    options = dict(args.options)
    env = gym.make(args.env_id, **options).unwrapped
    seeds = parse_seeds(args.seeds)
    if args.env_id.startswith("dlsched/DeepRM"):
        workload = "deeprm"
        setting: dict[str, Any] = {
            "load": env.load,  # type: ignore[attr-defined]
            "horizon_steps": env.horizon_steps,  # type: ignore[attr-defined]
            "interval_s": STEP_S,
        }
    else:
        workload = env.workload_name  # type: ignore[attr-defined]
        setting = dict(env.workload_options)  # type: ignore[attr-defined]
    schedulers: list[Any] = []
    models: list[str] = []
    for item in args.model:
        name, _, path = item.partition("=")
        model = MaskablePPO.load(Path(path), device="cpu")
        schedulers.append(from_sb3(model, args.env_id, name=name, **options))
        models.append(name)
    for rule in args.rule:
        schedulers.append(PolicyAdapter(_first, args.env_id, name=f"rule-{rule}", **options))
    baselines = [b for b in args.baselines.split(",") if b]
    results = run_grid(workload, [*schedulers, *baselines], seeds, **setting)
    per: dict[str, dict[int, float]] = {}
    for r in results:
        per.setdefault(r.scheduler, {})[r.seed] = float(r.summary()[args.metric])
    print(f"{args.env_id} {options} seeds {args.seeds} ({len(seeds)}), metric {args.metric}")
    for name, values in per.items():
        mean, ci = mean_ci95([values[s] for s in seeds])
        print(f"  {name:<16} {mean:12.4f} ± {ci:.4f}")
    for name in models:
        for base in [*baselines, *(f"rule-{r}" for r in args.rule)]:
            diff = [per[name][s] - per[base][s] for s in seeds]
            mean, ci = mean_ci95(diff)
            better = sum(d < 0 for d in diff)
            print(
                f"  {name} − {base}: {mean:+.4f} ± {ci:.4f} (paired), "
                f"better on {better}/{len(seeds)} seeds"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
