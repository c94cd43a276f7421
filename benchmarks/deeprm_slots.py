"""DeepRM policies vs SJF and Tetris★ that see only the same 10 slots, in DeepRM's own cluster.

    PYTHONPATH=src .venv/bin/python benchmarks/deeprm_slots.py --policies deeprm:paper

The comparison DeepRM's authors made (their ``other_agents.py`` heuristics pick among the job
slots only, in the same environment as the policy), beside `benchmarks/deeprm_settings.py`'s,
where the Simulator's heuristics see every waiting job. Same held-out ``deeprm`` seeds
(9001–9030 by default; training used 100,000+, validation 800,000+), the paper's setting (50 steps
of arrivals), `DeepRMBatch` (a decision per job slot, time moves on at ∅). Policies act as in
validation: sampled actions (seed 1) over every action, ∅ not offered while the cluster is idle
and a slot job fits. Prints a Markdown table: mean average slowdown (``--metric completion``:
average completion time in steps) ± 95 % CI (t) per load.
"""

from __future__ import annotations

import argparse

import numpy as np

from dlsched.experiments.compare import mean_ci95
from dlsched.papers.deeprm.algorithm import evaluate, run_batch
from dlsched.papers.deeprm.config import make_jobsets
from dlsched.papers.deeprm.fits import policy_path
from dlsched.papers.deeprm.net import DeepRMPolicyNet
from dlsched.papers.deeprm.state import DeepRMBatch
from dlsched.papers.deeprm.teachers import sjf_actions, tetris_star_actions
from dlsched.papers.deeprm.train import VALIDATION_MAX_STEPS
from dlsched.rl.checkpoint import load_checkpoint


def _net(spec: str) -> DeepRMPolicyNet:
    """``deeprm:ARG`` (what the Simulator's ``deeprm:ARG`` runs) or a policy folder."""
    folder = policy_path(spec.split(":", 1)[1]) if spec.startswith("deeprm:") else spec
    state, _ = load_checkpoint(folder, algorithm="deeprm")
    net = DeepRMPolicyNet()
    net.load_state_dict(state)
    return net


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="9001-9030", help="held-out seeds, LOW-HIGH")
    parser.add_argument("--loads", default="1.1,1.3,1.5,1.7,1.9")
    parser.add_argument("--policies", default="deeprm:paper", help="specs or folders, comma")
    parser.add_argument("--metric", choices=("slowdown", "completion"), default="slowdown")
    args = parser.parse_args()
    low, _, high = args.seeds.partition("-")
    seeds = list(range(int(low), int(high or low) + 1))
    policies = args.policies.split(",")
    nets = {p: _net(p) for p in policies}
    names = [*policies, "sjf (10 slots)", "tetris-star (10 slots)"]
    print(f"| load | {' | '.join(names)} |")
    print("|" + " --- |" * (len(names) + 1))
    for load in (float(x) for x in args.loads.split(",")):
        jobsets = make_jobsets(seeds, load, 50)
        rows = {
            p: evaluate(
                net, jobsets, seed=1, mask_invalid=False, max_steps=VALIDATION_MAX_STEPS
            ).metric(args.metric)
            for p, net in nets.items()
        }
        for name, choose in (("sjf", sjf_actions), ("tetris-star", tetris_star_actions)):
            batch = DeepRMBatch(jobsets, max_steps=VALIDATION_MAX_STEPS)
            rows[f"{name} (10 slots)"] = run_batch(batch, choose).metric(args.metric)
        cells = []
        for name in names:
            mean, half = mean_ci95(list(np.asarray(rows[name], float)))
            cells.append(f"{mean:.3f} ± {half:.3f}")
        print(f"| {load:g} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
