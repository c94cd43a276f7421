"""Validation learning curves of DL2 paper-preset runs (``train_log.csv`` of
``benchmarks/dl2_paper_variants.py``), each as its greedy validation average JCT ÷ its start's.

    python benchmarks/dl2_paper_curves.py --out curves.png A=runs/A/train_log.csv P=...
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def curve(path: Path) -> tuple[list[int], list[float]]:
    """(updates, validation avg JCT ÷ the start's) of one ``train_log.csv``."""
    with path.open() as fh:
        rows = [r for r in csv.DictReader(fh) if r["val_avg_jct_s"]]
    start = float(rows[0]["val_avg_jct_s"])
    return [int(r["updates"]) for r in rows], [float(r["val_avg_jct_s"]) / start for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="LABEL=PATH of a train_log.csv")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for item in args.runs:
        label, _, path = item.partition("=")
        ax.plot(*curve(Path(path)), marker="o", label=label)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("actor-critic updates (one a simulated slot, mini-batch 256)")
    ax.set_ylabel("validation avg JCT ÷ the supervised start's")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
