"""DL2's paper preset: one supervised start, then actor-critic variants from it (issue 29's
diagnosis; benchmarks/RESULTS.md 2026-11-26, runs A–E, logs in ``benchmarks/dl2_paper_runs``).

    PYTHONPATH=src python benchmarks/dl2_paper_variants.py sl --out runs/variants
    PYTHONPATH=src python benchmarks/dl2_paper_variants.py A --minutes 20 --out runs/variants

``sl`` makes the start (DRF on 4 traces, 1,000 mini-batches); ``A`` is the paper exactly; ``B``
adds 1,000 value-only updates and standardised advantages; ``C`` is B with lr 1e-5 and β 0.01;
``D`` is B with the reward minus jobs in the system (not the paper's); ``E`` is B with β = 0;
``F`` is E with one update of 4,096 samples every 16 slots (same samples a slot, 16× fewer,
larger updates; 60 value-only updates first, validation every 60).
Each variant validates every 750 updates and keeps its best policy in ``OUT/NAME``.
"""

from __future__ import annotations

import argparse
import csv
import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from dlsched.papers.dl2.paper import COLUMNS, PaperLearner, PaperSpec, paper_config
from dlsched.rl.checkpoint import save_checkpoint

B: dict[str, Any] = {"config": paper_config(normalize_advantage=True), "critic_warmup": 1000}
VARIANTS: dict[str, dict[str, Any]] = {
    "A": {"num_envs": 16},
    "B": {"num_envs": 32, **B},
    "C": {**B, "num_envs": 32, "config": replace(B["config"], rl_lr=1e-5, entropy_beta=0.01)},
    "D": {**B, "num_envs": 32, "reward": "jct"},
    "E": {**B, "num_envs": 32, "config": replace(B["config"], entropy_beta=0.0)},
    "F": {
        **B,
        "num_envs": 32,
        "critic_warmup": 60,
        "eval_every": 60,
        "config": replace(B["config"], entropy_beta=0.0, batch_size=4096, slots_per_update=16),
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant", choices=("sl", *VARIANTS))
    parser.add_argument("--out", type=Path, default=Path("runs/variants"))
    parser.add_argument("--minutes", type=float, default=20.0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    base = PaperSpec(out=args.out / "sl", sl_traces=4, sl_steps=1000, eval_every=750, device="cpu")
    if args.variant == "sl":
        learner = PaperLearner(base)
        learner.step()
        save_checkpoint(base.out, *learner.policy_files())
        return
    options = dict(VARIANTS[args.variant])
    spec = replace(base, out=args.out / args.variant, init=base.out, **options)
    spec.out.mkdir(parents=True, exist_ok=True)
    learner = PaperLearner(spec)
    learner.step()  # loads the supervised start
    t0, best = time.perf_counter(), float("inf")
    with (spec.out / "train_log.csv").open("w", newline="") as fh:
        csv.writer(fh).writerow(COLUMNS)
    while time.perf_counter() < t0 + 60.0 * args.minutes:
        row = learner.step()
        validation = learner.validate()
        row.update(validation.row, wall_s=time.perf_counter() - t0)
        if validation.rank[0] < best:
            best = validation.rank[0]
            save_checkpoint(spec.out, *learner.policy_files())
        with (spec.out / "train_log.csv").open("a", newline="") as fh:
            csv.writer(fh).writerow([row.get(c, "") for c in COLUMNS])
        logging.info("%s: %s", args.variant, row)


if __name__ == "__main__":
    main()
