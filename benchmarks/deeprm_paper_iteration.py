"""CPU and wall seconds of one ``train deeprm --paper`` iteration, one process vs two, side by side.

    PYTHONPATH=src nice -n 5 .venv/bin/python benchmarks/deeprm_paper_iteration.py --iterations 3

Issue 29's target: the paper's 1,000 iterations (100 jobsets × 20 episodes each) in ≤ 60 min on
the 2-core box. Both rows run the same iterations from the shipped ``deeprm:paper`` network with
the jobsets in two parts of 50 (``chunk=50``): one process rolls out both parts in turn (before:
the trainer used one core), two processes one part each (after: ``--workers 2``, the CLI's
default). The parts sample from generators seeded by (seed, iteration, part), so both rows make
the same decisions (the ``decisions`` column) and end with the same network (checked).

Columns: ``CPU-s/it`` is every process's CPU time (the main process's and, with two processes,
the rollouts' in the workers); ``wall-s/it`` is measured, so it depends on the load of the box
(printed); ``idle 2-core wall-s/it`` is what the iteration needs on an idle 2-core box: the CPU
main process's CPU time plus the parts' divided by the processes (the two parts are alike:
same loads, same sizes). The first
iteration (worker start, jobsets built) is reported apart.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch

from dlsched.papers.deeprm.paper import PaperConfig, PaperReinforce
from dlsched.rl.checkpoint import load_checkpoint

SHIPPED = Path(__file__).resolve().parents[1] / "src/dlsched/papers/deeprm/policies/paper"


def measure(workers: int, iterations: int, jobsets: int) -> tuple[list[dict[str, float]], list]:
    """Per-iteration figures of ``iterations`` iterations with ``workers`` processes."""
    torch.set_num_threads(1)
    config = PaperConfig(jobsets=jobsets, workers=workers, chunk=-(-jobsets // 2), seed=0)
    state, _ = load_checkpoint(SHIPPED, algorithm="deeprm")
    rows = []
    with PaperReinforce(config) as trainer:
        trainer.net.load_state_dict(state)
        trainer.jobsets()
        for _ in range(iterations):
            cpu0, wall0 = time.process_time(), time.perf_counter()
            stats = trainer.step()
            main_cpu = time.process_time() - cpu0
            # in one process the rollouts' CPU time is part of the main process's
            cpu = main_cpu + (stats.cpu_s if workers > 1 else 0.0)
            wall = time.perf_counter() - wall0
            # idle box: the main process's own work, then the parts side by side
            idle = cpu if workers == 1 else main_cpu + stats.cpu_s / workers
            rows.append({"cpu": cpu, "wall": wall, "idle": idle, "decisions": stats.samples})
        params = [p.detach().clone() for p in trainer.net.parameters()]
    return rows, params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=3, help="iterations per row (>= 2)")
    parser.add_argument("--jobsets", type=int, default=100, help="jobsets per iteration")
    args = parser.parse_args()
    results = {}
    for workers in (1, 2):
        load0 = os.getloadavg()[0]
        rows, params = measure(workers, args.iterations, args.jobsets)
        results[workers] = (rows, params, load0, os.getloadavg()[0])
    same = all(torch.equal(a, b) for a, b in zip(results[1][1], results[2][1], strict=True)) and [
        r["decisions"] for r in results[1][0]
    ] == [r["decisions"] for r in results[2][0]]
    print(f"{args.jobsets} jobsets x 20 episodes an iteration; same decisions and network: {same}")
    print(
        f"{'processes':<10} {'first it. CPU-s / wall-s':>25} {'CPU-s/it':>9} {'wall-s/it':>10} "
        f"{'idle 2-core wall-s/it':>22} {'1,000 it. idle (min)':>21} {'decisions/it':>13} "
        f"{'load avg':>10}"
    )
    for workers, (rows, _, load0, load1) in results.items():
        rest = rows[1:] or rows
        cpu = sum(r["cpu"] for r in rest) / len(rest)
        wall = sum(r["wall"] for r in rest) / len(rest)
        idle = sum(r["idle"] for r in rest) / len(rest)
        decisions = sum(r["decisions"] for r in rest) / len(rest)
        first = f"{rows[0]['cpu']:.2f} / {rows[0]['wall']:.2f}"
        print(
            f"{workers:<10} {first:>25} {cpu:>9.2f} {wall:>10.2f} {idle:>22.2f} "
            f"{idle * 1000 / 60:>21.1f} {decisions:>13,.0f} {load0:>4.1f}-{load1:<4.1f}"
        )


if __name__ == "__main__":
    main()
