"""How much the paper's 10 arrival-order job slots cost, in DeepRM's own cluster.

    PYTHONPATH=src .venv/bin/python benchmarks/deeprm_slot_limit.py --loads 1.3,1.9

DeepRM's state shows the first ``M`` = 10 waiting jobs in arrival order; later ones are only a
backlog count, and a job reaches a slot only when an older one starts. This script measures what
that view costs, on held-out ``deeprm`` jobsets (seeds 9001–9030 by default; the paper's setting,
50 steps of arrivals): SJF and Tetris★ choosing among ``M`` = 10, 20, 40 arrival-order slots and
among the 10 *shortest* waiting jobs (``ranked``, near the Simulator's whole-queue heuristics),
and a policy's hindsight best of ``--samples`` sampled episodes per jobset (an oracle choosing
after the fact among the policy's own trajectories; an upper bound on what a better pick among
them could reach, not on the optimum). Prints a Markdown table of mean average slowdown ± 95 % CI.
"""

from __future__ import annotations

import argparse

import numpy as np

from dlsched.experiments.compare import mean_ci95
from dlsched.papers.deeprm.algorithm import evaluate, run_batch
from dlsched.papers.deeprm.config import make_jobsets
from dlsched.papers.deeprm.net import DeepRMPolicyNet
from dlsched.papers.deeprm.shape import DeepRMShape
from dlsched.papers.deeprm.state import DeepRMBatch
from dlsched.papers.deeprm.teachers import sjf_actions, tetris_star_actions
from dlsched.papers.deeprm.train import VALIDATION_MAX_STEPS
from dlsched.rl.checkpoint import load_checkpoint

SLOT_COUNTS = (10, 20, 40)
"""Arrival-order slot counts ``M`` the heuristics are run with (the paper's is 10)."""


def _cell(values: np.ndarray) -> str:
    mean, half = mean_ci95(list(np.asarray(values, float)))
    return f"{mean:.3f} ± {half:.3f}"


def _heuristics(jobsets: list, shape: DeepRMShape) -> dict[str, np.ndarray]:
    """SJF and Tetris★ average slowdown per jobset when they see the slots of ``shape``."""
    out = {}
    for name, choose in (("sjf", sjf_actions), ("tetris-star", tetris_star_actions)):
        batch = DeepRMBatch(jobsets, shape, max_steps=VALIDATION_MAX_STEPS)
        out[name] = run_batch(batch, choose).slowdown
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="9001-9030", help="held-out seeds, LOW-HIGH")
    parser.add_argument("--loads", default="1.1,1.3,1.5,1.7,1.9")
    parser.add_argument("--policy", default="src/dlsched/papers/deeprm/policies/paper")
    parser.add_argument("--samples", type=int, default=20, help="sampled episodes a jobset")
    args = parser.parse_args()
    low, _, high = args.seeds.partition("-")
    seeds = list(range(int(low), int(high or low) + 1))
    state, _ = load_checkpoint(args.policy, algorithm="deeprm")
    net = DeepRMPolicyNet()
    net.load_state_dict(state)
    columns = [f"sjf M={m}" for m in SLOT_COUNTS] + [f"tetris-star M={m}" for m in SLOT_COUNTS]
    columns += ["sjf ranked M=10", "tetris-star ranked M=10", "policy (1 sample)"]
    columns += [f"policy best of {args.samples}", "dropped jobs a jobset (M=10)"]
    print(f"| load | {' | '.join(columns)} |")
    print("|" + " --- |" * (len(columns) + 1))
    for load in (float(x) for x in args.loads.split(",")):
        jobsets = make_jobsets(seeds, load, 50)
        rows: dict[str, np.ndarray] = {}
        for m in SLOT_COUNTS:
            for name, values in _heuristics(jobsets, DeepRMShape(slots=m)).items():
                rows[f"{name} M={m}"] = values
        for name, values in _heuristics(jobsets, DeepRMShape(ranked=True)).items():
            rows[f"{name} ranked M=10"] = values
        # every sample of every jobset in one batch: row k * len(jobsets) + i is jobset i
        run = evaluate(
            net,
            jobsets * args.samples,
            seed=1,
            mask_invalid=False,
            max_steps=VALIDATION_MAX_STEPS,
        )
        slowdowns = run.slowdown.reshape(args.samples, len(jobsets))
        rows["policy (1 sample)"] = slowdowns[0]
        rows[f"policy best of {args.samples}"] = slowdowns.min(0)
        dropped = float(np.mean(run.dropped))
        cells = [_cell(rows[c]) for c in columns[:-1]] + [f"{dropped:.1f}"]
        print(f"| {load:g} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
