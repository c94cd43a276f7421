"""Is there a policy gradient left to follow? DeepRM's REINFORCE gradient from disjoint groups.

    PYTHONPATH=src nice -n 5 .venv/bin/python benchmarks/deeprm_gradient_agreement.py \
        --load 1.7 --groups 8 --jobsets 25 deeprm:paper path/to/policy

For each policy, `dlsched.papers.deeprm.paper.PaperReinforce` (the paper's trainer: every action
offered, baseline per time step, N = 20 episodes a jobset) computes the policy gradient of
``--groups`` disjoint groups of ``--jobsets`` new jobsets each (`--fresh-jobsets` seeds, never a
validation or test one), each group's gradient the mean over its decisions. Independent groups
agree only in the true gradient g: the mean dot product of two groups' gradients estimates
‖g‖² (signal²), a group's squared norm minus it the noise² of one group. Printed: signal², noise²
of one group, their ratio for one paper iteration of 100 jobsets (the noise falls with the
jobsets as 1/n), and the mean cosine between groups.
"""

from __future__ import annotations

import argparse
from itertools import combinations

import numpy as np
import torch

from dlsched.papers.deeprm.fits import policy_path
from dlsched.papers.deeprm.net import DeepRMPolicyNet
from dlsched.papers.deeprm.paper import PaperConfig, PaperReinforce
from dlsched.papers.deeprm.policy import load_policy


def _net(spec: str) -> DeepRMPolicyNet:
    """``deeprm:ARG`` (what the Simulator's ``deeprm:ARG`` runs) or a policy folder."""
    folder = policy_path(spec.split(":", 1)[1]) if spec.startswith("deeprm:") else spec
    return load_policy(folder)[1]


def group_gradients(
    spec: str, load: float, groups: int, jobsets: int, iteration: int
) -> list[np.ndarray]:
    """Per-decision mean policy gradient of each group of ``jobsets`` fresh jobsets."""
    config = PaperConfig(loads=(load,), jobsets=groups * jobsets, fresh_jobsets=True, seed=0)
    trainer = PaperReinforce(config, net=_net(spec))
    out = []
    for g in range(groups):
        part = trainer.part(iteration, g, range(g * jobsets, (g + 1) * jobsets))
        flat = torch.cat([t.reshape(-1) for t in part["grads"]]).double().numpy()
        out.append(flat / max(part["samples"], 1))
    return out


def agreement(grads: list[np.ndarray], per_iteration: int, jobsets: int) -> dict[str, float]:
    """Signal², one group's noise², an iteration's SNR and the mean cosine of ``grads``."""
    dots = [float(a @ b) for a, b in combinations(grads, 2)]
    signal2 = float(np.mean(dots))
    noise2 = float(np.mean([g @ g for g in grads])) - signal2
    cosines = [
        float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) for a, b in combinations(grads, 2)
    ]
    se = float(np.std(dots, ddof=1) / np.sqrt(len(dots)))  # pairs share groups: a rough guide
    return {
        "signal2": signal2,
        "signal2_se": se,
        "noise2_group": noise2,
        "snr_iteration": signal2 / (noise2 * jobsets / per_iteration),
        "cosine": float(np.mean(cosines)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=float, default=1.7)
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--jobsets", type=int, default=25, help="jobsets a group")
    parser.add_argument("--iteration", type=int, default=9000, help="picks the fresh jobsets")
    parser.add_argument("policies", nargs="+", help="deeprm:ARG specs or policy folders")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"load {args.load}: {args.groups} groups x {args.jobsets} fresh jobsets x 20 episodes")
    print("| policy | signal² (±se) | noise² of a group | SNR of a 100-jobset iteration | cosine |")
    print("| --- | --- | --- | --- | --- |")
    for spec in args.policies:
        grads = group_gradients(spec, args.load, args.groups, args.jobsets, args.iteration)
        a = agreement(grads, 100, args.jobsets)
        print(
            f"| {spec} | {a['signal2']:.3g} ± {a['signal2_se']:.2g} | {a['noise2_group']:.3g} | "
            f"{a['snr_iteration']:.3f} | {a['cosine']:.3f} |"
        )


if __name__ == "__main__":
    main()
