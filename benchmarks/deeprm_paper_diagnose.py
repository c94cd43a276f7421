"""Why DeepRM's REINFORCE stalls (issue 29, point 3): short runs of the paper trainer side by side.

    PYTHONPATH=src nice -n 5 .venv/bin/python benchmarks/deeprm_paper_diagnose.py \
        --iterations 40 --jobsets 20 --out /tmp/deeprm-diag

Each variant is `dlsched.papers.deeprm.paper.PaperReinforce` with the paper's values and one
thing changed (``--variants`` picks; names below). It trains for ``--iterations`` iterations on
the same jobsets and seed, writes ``OUT/VARIANT.csv`` (one `PaperStats` row per iteration: mean
slowdown of the sampled episodes, entropy, gradient and update norms, advantage and return
scale, share of void/invalid decisions and of non-work-conserving steps) and prints a table of
the first and last rows' means over ``--window`` iterations.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
from pathlib import Path

import numpy as np
import torch

from dlsched.papers.deeprm.paper import PaperConfig, PaperReinforce

VARIANTS: dict[str, dict[str, object]] = {
    "paper": {},  # unmasked, baseline per time step, lr 1e-3
    "decision-baseline": {"baseline": "decision"},  # the authors' code's baseline index
    "masked": {"mask_invalid": True},
    "masked-lr3e-4": {"mask_invalid": True, "lr": 3e-4},
    "lr3e-4": {"lr": 3e-4},
}
COLUMNS = (
    "mean_slowdown",
    "entropy",
    "grad_norm",
    "update_norm",
    "adv_std",
    "return_std",
    "void_share",
    "withheld_share",
    "iteration_s",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--jobsets", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--loads", default="1.3")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    loads = tuple(float(x) for x in args.loads.split(","))
    print("| variant | it. | " + " | ".join(COLUMNS) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in COLUMNS) + " |")
    for name in args.variants.split(","):
        config = PaperConfig(
            loads=loads, jobsets=args.jobsets, episodes=args.episodes, device=args.device
        )
        config = dataclasses.replace(config, **VARIANTS[name])  # type: ignore[arg-type]
        rows = []
        with PaperReinforce(config) as trainer, (args.out / f"{name}.csv").open("w") as fh:
            writer = None
            for _ in range(args.iterations):
                row = dataclasses.asdict(trainer.step())
                writer = writer or csv.DictWriter(fh, fieldnames=list(row))
                if fh.tell() == 0:
                    writer.writeheader()
                writer.writerow(row)
                fh.flush()
                rows.append(row)
        w = min(args.window, len(rows))
        for label, part in (("first", rows[:w]), ("last", rows[-w:])):
            cells = " | ".join(f"{np.mean([r[c] for r in part]):.4g}" for c in COLUMNS)
            print(f"| {name} | {label} {w} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
