"""DeepRM training speed (issue 5): one REINFORCE iteration of 100 jobsets × 20 episodes.

Run::

    .venv/bin/python benchmarks/deeprm_train.py                # loads 0.7 and 1.3, 2 workers
    .venv/bin/python benchmarks/deeprm_train.py --iterations 2 --workers 1 2

Prints, per load and worker count, the median wall time of an iteration after a warm-up one
(spawning workers, generating jobsets), the decisions (samples) per iteration, and, side by
side in the same run, the first layer evaluated densely on the rendered images vs through the
prefix-sum table (`DeepRMPolicyNet.forward_index`) on the same states.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np
import torch

from dlsched.papers.deeprm.algorithm import Reinforce, ReinforceConfig, make_jobsets
from dlsched.papers.deeprm.net import DeepRMPolicyNet
from dlsched.papers.deeprm.state import DeepRMBatch


def time_iterations(
    load: float, workers: int, iterations: int, jobsets: int = 100, episodes: int = 20
) -> tuple[float, int]:
    """Median seconds of an iteration after a warm-up, and samples of the last one."""
    config = ReinforceConfig(load=load, workers=workers, seed=0, jobsets=jobsets, episodes=episodes)
    with Reinforce(config) as trainer:
        trainer.step()  # warm-up: workers, imports, jobsets
        times = []
        samples = 0
        for _ in range(iterations):
            stats = trainer.step()
            times.append(stats.iteration_s)
            samples = stats.samples
    return statistics.median(times), samples


def forward_ratio(states: int = 4000) -> tuple[float, float]:
    """Seconds per 1000 states: dense forward on images vs the prefix-table forward."""
    net = DeepRMPolicyNet()
    batch = DeepRMBatch(make_jobsets(range(states), load=1.3, horizon_steps=50))
    rng = np.random.default_rng(0)
    for _ in range(40):
        mask = batch.action_masks()
        batch.step((rng.random(mask.shape) * mask).argmax(1))
    images = torch.from_numpy(batch.images())
    index = torch.from_numpy(batch.index())
    with torch.no_grad():
        t0 = time.perf_counter()
        dense = net(images)
        t1 = time.perf_counter()
        fast = net.forward_index(index)
        t2 = time.perf_counter()
    assert torch.allclose(dense, fast, atol=1e-4)
    return (t1 - t0) * 1000 / states, (t2 - t1) * 1000 / states


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=float, nargs="+", default=[0.7, 1.3])
    parser.add_argument("--workers", type=int, nargs="+", default=[2])
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--jobsets", type=int, default=100, help="jobsets per iteration")
    parser.add_argument("--episodes", type=int, default=20, help="episodes per jobset")
    parser.add_argument("--states", type=int, default=4000, help="states of the forward timing")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"machine: {platform.processor() or platform.machine()}, torch threads 1")
    dense, fast = forward_ratio(args.states)
    print(
        f"first layer, s per 1000 states: dense {dense:.4f}, prefix table {fast:.4f} "
        f"(ratio {dense / fast:.1f}x)"
    )
    print("load  workers  iteration_s  samples")
    for load in args.loads:
        for workers in args.workers:
            seconds, samples = time_iterations(
                load, workers, args.iterations, args.jobsets, args.episodes
            )
            print(f"{load:4.1f}  {workers:7d}  {seconds:11.2f}  {samples:7d}")


if __name__ == "__main__":
    main()
