"""DL2's decisions before and after a change to its inference: equal, or different only at ties.

Runs the shipped ``dl2`` scheduler on held-out traces and writes, per run, the per-job records
(every float with ``repr``) and every slot's decision. Beside each decision it replays the slot
greedily with the same NumPy path and, at every action, evaluates the torch network in float64:
where the NumPy path's arg-max differs from float64's, it records the float64 gap between the
two actions. Where two versions' records differ, the first differing slot should be one at which
one version's action deviated from float64's with a gap below the tie tolerance.

    PYTHONPATH=OLD/src python benchmarks/dl2_decisions.py --out /tmp/old.json
    PYTHONPATH=src python benchmarks/dl2_decisions.py --out /tmp/new.json
    python benchmarks/dl2_decisions.py --diff /tmp/old.json /tmp/new.json

Works on trees with ``NumpyPolicy.act_after`` (the compiled greedy step, replayed with it),
with only ``logits_after``, and with neither (the oldest replays with ``logits``, which there
gives the same numbers as its own incremental path).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from dataclasses import astuple
from typing import Any

import numpy as np
import torch

RUNS: tuple[tuple[int, int, float], ...] = (
    *((seed, 13, 1.0) for seed in range(101, 111)),
    *((seed, 8, 1.0) for seed in (101, 102, 103)),
    *((seed, 20, 1.0) for seed in (101, 102, 103)),
    *((seed, 13, 3.0) for seed in (101, 102)),  # `dl2_policy.py`'s timing traces: 40 rows full
    *((seed, 13, 1.5) for seed in (101, 102, 103)),
)
"""(seed, servers, load) of the ``dl2`` workload."""
TIE = 1e-4
"""Float64 logit gap below which two actions count as tied (float32 rounding is ~1e-5)."""


def _targets(decision: Any) -> list[list[int]]:
    return [[j, t.num_workers, t.num_ps] for j, t in decision.targets.items()]


def _run(seed: int, servers: int, load: float) -> dict[str, Any]:
    from dlsched.api import simulate
    from dlsched.papers.dl2.network import load as load_policy
    from dlsched.papers.dl2.scheduler import SHIPPED, load_dl2
    from dlsched.papers.dl2.state import Dl2Slot
    from dlsched.schedulers.base import BaseScheduler

    policy, cfg = load_policy(SHIPPED)
    exact = copy.deepcopy(policy).double()
    deployed = load_dl2(SHIPPED)
    net: Any = deployed.net  # type: ignore[attr-defined]
    slots: list[list[list[int]]] = []
    deviations: list[list[float]] = []  # [slot, action index, float64 gap]
    steps = [0]

    def replay(view: Any) -> list[list[int]]:
        slot = Dl2Slot(view, cfg.shape())
        part: int | None = None
        k = 0
        while True:
            mask = slot.action_mask()
            obs = slot.observation()
            if hasattr(net, "act_after"):  # the deployed path since 2026-11-24 (dl2fast)
                action = net.act_after(obs, mask, part)
            else:
                if hasattr(net, "logits_after"):
                    scores = net.logits_after(obs, part)
                else:
                    scores = net.logits(obs)
                action = int(np.where(mask, scores, -np.inf).argmax())
            with torch.inference_mode():
                ref = exact(torch.from_numpy(obs.astype(np.float64))[None])[0].numpy()
            ref = np.where(mask, ref, -np.inf)
            if action != int(ref.argmax()):
                deviations.append([len(slots), k, float(ref.max() - ref[action])])
            k += 1
            if slot.apply(action):
                steps[0] += k
                return _targets(slot.decision())
            part = getattr(slot, "changed_part", None)

    class _Checked(BaseScheduler):
        name = "dl2"
        preemptive = True

        def decide(self, view: Any) -> Any:
            decision = deployed.decide(view)
            if replay(view) != _targets(decision):
                raise AssertionError(f"slot {len(slots)}: the replay decided otherwise")
            slots.append(_targets(decision))
            return decision

    result = simulate("dl2", _Checked(), seed=seed, servers=servers, load=load)
    return {
        "avg_jct_s": float(result.summary()["avg_jct_s"]),
        "records": [repr(astuple(r)) for r in result.records],
        "slots": slots,
        "actions": steps[0],
        "deviations": deviations,
    }


def _diff(old_path: str, new_path: str) -> int:
    with open(old_path) as fh:
        old = json.load(fh)
    with open(new_path) as fh:
        new = json.load(fh)
    unexplained = 0
    for key in old:
        a, b = old[key], new[key]
        dev_a = {(int(s), int(k)): g for s, k, g in a["deviations"]}
        dev_b = {(int(s), int(k)): g for s, k, g in b["deviations"]}
        line = (
            f"{key}: {a['actions']}/{b['actions']} actions, deviations from float64 arg-max "
            f"old {len(dev_a)} (max gap {max(dev_a.values(), default=0):.2e}), "
            f"new {len(dev_b)} (max gap {max(dev_b.values(), default=0):.2e})"
        )
        if a["records"] == b["records"] and a["slots"] == b["slots"]:
            print(f"{line}; per-job records and every decision identical")
            continue
        first = next(
            (i for i, (x, y) in enumerate(zip(a["slots"], b["slots"], strict=False)) if x != y),
            min(len(a["slots"]), len(b["slots"])),
        )
        ties = [(k, g) for (s, k), g in {**dev_a, **dev_b}.items() if s == first]
        tied = bool(ties) and all(g < TIE for _, g in ties)
        unexplained += not tied
        print(
            f"{line}; avg JCT {a['avg_jct_s']:.1f} -> {b['avg_jct_s']:.1f} s; first differing "
            f"slot {first}: {'float tie' if tied else 'NOT A TIE'} (action, gap) {ties}"
        )
    print(f"{len(old)} runs, {unexplained} differences not explained by a float tie")
    return 1 if unexplained else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write this tree's runs here (JSON)")
    parser.add_argument("--diff", nargs=2, metavar=("OLD", "NEW"))
    parser.add_argument(
        "--runs", help="only these runs: SEED/SERVERS/LOAD,... (default: every run of RUNS)"
    )
    args = parser.parse_args()
    if args.diff:
        return _diff(*args.diff)
    if not args.out:
        parser.error("give --out or --diff")
    torch.set_num_threads(1)
    chosen = RUNS
    if args.runs:
        try:
            chosen = tuple(
                (int(a), int(b), float(c))
                for a, b, c in (item.split("/") for item in args.runs.split(","))
            )
        except ValueError:
            parser.error(f"--runs {args.runs!r}: expected SEED/SERVERS/LOAD,...")
    runs = {
        f"seed {seed}, {servers} servers, load {load:g}": _run(seed, servers, load)
        for seed, servers, load in chosen
    }
    with open(args.out, "w") as fh:
        json.dump(runs, fh)
    deviations = sum(len(r["deviations"]) for r in runs.values())
    print(f"{len(runs)} runs, {deviations} actions off float64's arg-max, written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
