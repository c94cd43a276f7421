"""One ``train sched2 --paper`` variant for the device run (benchmarks/device/sched2rl.sh).

Trains `PaperConfig` with ``--set key=value`` overrides for at most ``--budget`` seconds
(PyTorch environment and network on CUDA when present; on a CUDA error it starts again on the
CPU with the time left), then runs the best network (by validation effectiveness, as
``train sched2 --paper`` keeps it) greedily on the selection traces 91001-91030 — held out from
training and from the test seeds 100001-100030 — and writes ``selection.json`` beside it.

    PYTHONPATH=src python benchmarks/device/sched2rl_train.py --out DIR --budget 300 \
        --set reward=incremental --set target_update=100
"""

from __future__ import annotations

import argparse
import json
import logging
import time
import traceback
from dataclasses import fields
from pathlib import Path

import torch

from dlsched.papers.sched2.paper import PaperConfig, evaluate_batched, train_paper
from dlsched.papers.sched2.policy import load_policy

SELECTION_SEEDS = tuple(range(91_001, 91_031))


def parse_overrides(pairs: list[str]) -> dict[str, object]:
    """``key=value`` pairs typed as `PaperConfig`'s fields."""
    kinds = {f.name: type(getattr(PaperConfig(), f.name)) for f in fields(PaperConfig)}
    out: dict[str, object] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        if key not in kinds:
            raise SystemExit(f"--set {pair}: PaperConfig has no field {key!r}")
        out[key] = kinds[key](value)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget", type=float, required=True, help="seconds for training")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--selection-traces", type=int, default=len(SELECTION_SEEDS),
                        help="selection traces to run the best network on (0: none)")  # fmt: skip
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    start = time.monotonic()
    config = PaperConfig(time_budget_s=args.budget, **parse_overrides(args.set))  # type: ignore[arg-type]
    log = args.out.parent / f"{args.out.name}.progress"

    def show(done: int, row: dict[str, object]) -> None:
        if done % 20 == 0 or row.get("eval_effectiveness") is not None:
            with log.open("a") as f:
                f.write(json.dumps({"t": round(time.monotonic() - start, 1), **row}) + "\n")

    try:
        train_paper(config, args.out, force=True, progress=show)  # type: ignore[arg-type]
    except Exception:  # a CUDA failure must not lose the run: retry on the CPU
        traceback.print_exc()
        left = args.budget - (time.monotonic() - start)
        if config.device == "cpu" or left < 30:
            raise
        config.device, config.time_budget_s = "cpu", left
        train_paper(config, args.out, force=True, progress=show)  # type: ignore[arg-type]
    if args.selection_traces == 0:
        return
    net, _, _ = load_policy(args.out)
    torch.set_num_threads(1)
    seeds = SELECTION_SEEDS[: args.selection_traces]
    result = evaluate_batched(net.cpu(), seeds, num_jobs=config.num_jobs, load=config.load)
    (args.out / "selection.json").write_text(
        json.dumps({"seeds": [seeds[0], seeds[-1]], **result}, indent=1)
    )
    print(args.out.name, "selection", result, f"{time.monotonic() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
