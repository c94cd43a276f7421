"""DeepRM vs Tetris★ and SJF at every load, in the paper's setting and on long jobsets (issue 17).

Run::

    PYTHONPATH=src .venv/bin/python benchmarks/deeprm_settings.py            # 30 jobsets each
    PYTHONPATH=src .venv/bin/python benchmarks/deeprm_settings.py --seeds 9001-9005 --loads 1.3

Two settings, the same held-out ``deeprm`` seeds (9001–9030 by default: never used to train or
select a policy, whose jobsets come from seeds 100,000+ and 800,000+):

* **paper**: the ``deeprm`` workload's default — 50 steps of arrivals, a scheduling point
  every step (what DeepRM §4 evaluates);
* **long**: ``num_jobs = 200`` jobs, event-driven scheduling points (the workload's default
  before issue 17).

Prints a Markdown table: mean average slowdown ± 95 % CI per scheduler, and whether ``deeprm``
is ≤ both Tetris★ and SJF (mean not above; ties count).
"""

from __future__ import annotations

import argparse

import dlsched

SETTINGS: dict[str, dict[str, int]] = {"paper": {}, "long": {"num_jobs": 200}}
SCHEDULERS = ("deeprm", "tetris-star", "sjf")


def _seeds(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="9001-9030", help="held-out seeds, LOW-HIGH")
    parser.add_argument("--loads", default="0.7,1.1,1.3,1.5,1.7,1.9")
    parser.add_argument("--deeprm", default="deeprm", help="the DeepRM scheduler spec")
    parser.add_argument("--settings", default="paper,long", help="paper, long or both")
    args = parser.parse_args()
    seeds = _seeds(args.seeds)
    names = (args.deeprm, *SCHEDULERS[1:])
    print(f"seeds {seeds[0]}–{seeds[-1]} ({len(seeds)} jobsets a point)\n")
    print("| setting | load | " + " | ".join(names) + " | deeprm ≤ both |")
    print("| --- | --- | " + " | ".join("---" for _ in names) + " | --- |")
    met = 0
    points = 0
    for setting, options in SETTINGS.items():
        if setting not in args.settings.split(","):
            continue
        for load in (float(x) for x in args.loads.split(",")):
            rows = dlsched.compare("deeprm", list(names), seeds, load=load, **options)
            mean = {r.scheduler: r.mean["avg_slowdown"] for r in rows}
            ci = {r.scheduler: r.ci95["avg_slowdown"] for r in rows}
            mine = mean[names[0]]
            ok = mine <= mean["tetris-star"] and mine <= mean["sjf"]
            met += ok
            points += 1
            cells = " | ".join(f"{mean[n]:.3f} ± {ci[n]:.3f}" for n in names)
            print(f"| {setting} | {load:g} | {cells} | {'yes' if ok else '**no**'} |", flush=True)
    print(f"\nmet at {met} of {points} points")


if __name__ == "__main__":
    main()
