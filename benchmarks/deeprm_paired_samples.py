"""DeepRM policies paired on the same jobsets, several sampled episodes a jobset, one load.

    PYTHONPATH=src nice -n 5 .venv/bin/python benchmarks/deeprm_paired_samples.py --load 1.7 \
        --seeds 800000-800029 --samples 5 deeprm:paper path/to/policy

A sampled policy's one episode a jobset is noisy; this averages ``--samples`` sampled episodes a
jobset (sampling seeds 1..K, every action offered, as validation and `deeprm_slots.py` run
them) in DeepRM's own cluster and prints, per policy, the mean average slowdown and its paired
difference per jobset to the first policy (± 95 % t interval; jobsets where it is lower).
Default seeds: the validation jobsets (800,000+); pass 9001-9030 for the held-out ones.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dlsched.experiments.compare import mean_ci95
from dlsched.papers.deeprm.algorithm import evaluate
from dlsched.papers.deeprm.config import make_jobsets
from dlsched.papers.deeprm.fits import policy_path
from dlsched.papers.deeprm.net import DeepRMPolicyNet
from dlsched.papers.deeprm.policy import load_policy
from dlsched.papers.deeprm.train import VALIDATION_MAX_STEPS


def _net(spec: str) -> DeepRMPolicyNet:
    """``deeprm:ARG`` (what the Simulator's ``deeprm:ARG`` runs) or a policy folder."""
    folder = policy_path(spec.split(":", 1)[1]) if spec.startswith("deeprm:") else spec
    return load_policy(folder)[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=float, default=1.7)
    parser.add_argument("--seeds", default="800000-800029", help="jobset seeds, LOW-HIGH")
    parser.add_argument("--samples", type=int, default=5, help="sampled episodes a jobset")
    parser.add_argument("policies", nargs="+", help="deeprm:ARG specs or policy folders")
    args = parser.parse_args()
    low, _, high = args.seeds.partition("-")
    jobsets = make_jobsets(list(range(int(low), int(high or low) + 1)), args.load, 50)
    cpu0 = time.process_time()
    means = {}
    for spec in args.policies:
        net = _net(spec)
        runs = [
            evaluate(net, jobsets, seed=s, mask_invalid=False, max_steps=VALIDATION_MAX_STEPS)
            for s in range(1, args.samples + 1)
        ]
        means[spec] = np.mean([np.asarray(r.metric("slowdown")) for r in runs], axis=0)
    n = len(jobsets)
    print(f"load {args.load:g}: {n} jobsets x {args.samples} sampled episodes")
    print("| policy | mean slowdown | paired − first | lower on |")
    print("| --- | --- | --- | --- |")
    first = means[args.policies[0]]
    for spec, values in means.items():
        diff, half = values - first, mean_ci95(list(values - first))[1]
        lower = int((diff < 0).sum())
        print(f"| {spec} | {values.mean():.3f} | {diff.mean():+.3f} ± {half:.3f} | {lower}/{n} |")
    print(f"CPU {time.process_time() - cpu0:.0f} s")


if __name__ == "__main__":
    main()
