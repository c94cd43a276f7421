"""Small hand-built jobs, clusters and models shared by tests."""

from __future__ import annotations

import numpy as np

from dlsched.core import Allocation, Arch, Cluster, JobSpec, Resources
from dlsched.sim import SimConfig, Simulator


class LinearModel:
    """Toy throughput: PS jobs train at min(workers, ps)·rate; others at 1 with all their GPUs,
    halved when spread over several servers."""

    name = "linear"

    def __init__(self, rate: float = 0.01) -> None:
        self.rate = rate

    def speed(self, spec: JobSpec, alloc: Allocation) -> float:
        if spec.arch is Arch.PS:
            return self.rate * min(alloc.num_workers, alloc.num_ps)
        if alloc.num_workers < spec.min_workers:
            return 0.0
        return (0.5 if alloc.num_servers > 1 else 1.0) * alloc.num_workers / spec.num_workers

    def ideal_speed(self, spec: JobSpec) -> float:
        if spec.arch is Arch.PS:
            return self.rate * min(spec.num_workers, max(spec.num_ps, 1))
        return 1.0

    def best_speed(self, spec: JobSpec) -> float:
        if spec.arch is Arch.PS:
            return self.rate * min(max(spec.max_workers, spec.num_workers), max(spec.max_ps, 1))
        return max(spec.max_workers, spec.num_workers) / spec.num_workers


def gpu_job(job_id: int, submit_s: float, duration_s: float, gpus: int) -> JobSpec:
    return JobSpec(
        job_id,
        submit_s,
        "toy",
        Arch.ALLREDUCE,
        duration_s,
        Resources(gpu=1, cpu=1, mem=4),
        num_workers=gpus,
        min_workers=gpus,
        max_workers=gpus,
    )


def ps_job(job_id: int, submit_s: float, epochs: float, workers: int = 2, ps: int = 1) -> JobSpec:
    return JobSpec(
        job_id,
        submit_s,
        "toy",
        Arch.PS,
        epochs,
        Resources(gpu=1, cpu=2, mem=8),
        Resources(cpu=2, mem=8),
        num_workers=workers,
        num_ps=ps,
        min_workers=1,
        max_workers=8,
        max_ps=8,
    )


def random_jobs(seed: int, n: int, max_gpus: int = 4) -> list[JobSpec]:
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(n):
        submit = float(rng.integers(0, 2000))
        if rng.random() < 0.5:
            jobs.append(
                gpu_job(
                    i, submit, float(rng.integers(10, 3000)), int(rng.integers(1, max_gpus + 1))
                )
            )
        else:
            jobs.append(
                ps_job(
                    i,
                    submit,
                    float(rng.integers(1, 30)),
                    int(rng.integers(1, 5)),
                    int(rng.integers(1, 3)),
                )
            )
    return jobs


def small_cluster(servers: int = 3) -> Cluster:
    return Cluster.homogeneous(servers, Resources(gpu=4, cpu=16, mem=64))


def make_sim(jobs, scheduler, placement="pack", **config) -> Simulator:
    from dlsched.placement import make_placement

    return Simulator(
        jobs,
        small_cluster(),
        LinearModel(),
        scheduler,
        make_placement(placement),
        SimConfig(**config),
    )
