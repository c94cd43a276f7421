"""Hand-built views and checked simulations for scheduler tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from dlsched.core import (
    Allocation,
    Arch,
    Cluster,
    ClusterView,
    Decision,
    JobRun,
    JobSpec,
    Resources,
    Status,
)
from dlsched.placement import make_placement
from dlsched.schedulers.base import Scheduler
from dlsched.sim import Result, SimConfig, Simulator
from dlsched.workloads.base import Workload

GPU_SERVER = Resources(gpu=4, cpu=16, mem=64)
GPU_TASK = Resources(gpu=1, cpu=1, mem=4)


def gpu(job_id: int, work_s: float, gpus: int, submit_s: float | None = None) -> JobSpec:
    """A fixed-size all-reduce job of ``gpus`` one-GPU tasks and ``work_s`` ideal seconds."""
    return JobSpec(
        job_id,
        float(job_id) if submit_s is None else submit_s,
        "toy",
        Arch.ALLREDUCE,
        work_s,
        GPU_TASK,
        num_workers=gpus,
        min_workers=gpus,
        max_workers=gpus,
    )


def replica(
    job_id: int,
    demand: Resources,
    *,
    work_s: float = 100.0,
    num: int = 1,
    lo: int = 1,
    hi: int = 1,
    priority: float = 0.0,
    submit_s: float | None = None,
) -> JobSpec:
    """A replica job (Kubeflow / DeepRM style) of ``num`` replicas within ``[lo, hi]``."""
    return JobSpec(
        job_id,
        float(job_id) if submit_s is None else submit_s,
        "toy",
        Arch.REPLICA,
        work_s,
        demand,
        num_workers=num,
        min_workers=lo,
        max_workers=hi,
        priority=priority,
    )


def ps(
    job_id: int,
    epochs: float,
    *,
    workers: int = 1,
    num_ps: int = 1,
    max_workers: int = 8,
    max_ps: int = 8,
    model: str = "toy",
    submit_s: float | None = None,
) -> JobSpec:
    """An elastic PS job: a worker takes one GPU and 1 core, a PS 1 core."""
    return JobSpec(
        job_id,
        float(job_id) if submit_s is None else submit_s,
        model,
        Arch.PS,
        epochs,
        Resources(gpu=1, cpu=1, mem=1),
        Resources(cpu=1, mem=1),
        num_workers=workers,
        num_ps=num_ps,
        min_workers=1,
        max_workers=max_workers,
        max_ps=max_ps,
    )


def pending(spec: JobSpec, *, done: float = 0.0, attained_gpu_s: float = 0.0) -> JobRun:
    """A waiting job that has done ``done`` work so far."""
    return JobRun(spec, progress_s=done, attained_gpu_s=attained_gpu_s)


@dataclass
class Scene:
    """A cluster with jobs placed by hand, from which views are made."""

    cluster: Cluster
    now_s: float = 1000.0
    running: list[JobRun] = field(default_factory=list)
    waiting: list[JobRun] = field(default_factory=list)

    def run(
        self,
        spec: JobSpec,
        workers: Sequence[tuple[int, int]],
        ps: Sequence[tuple[int, int]] = (),
        *,
        done: float = 0.0,
        attained_gpu_s: float = 0.0,
        rate: float = 1.0,
    ) -> JobRun:
        """Put ``spec`` on the cluster at exactly these (server, count) pairs."""
        alloc = Allocation.of(workers, ps)
        status = self.cluster.allocate(spec, alloc)
        assert status.ok, status.reason
        run = JobRun(
            spec,
            allocation=alloc,
            rate=rate,
            progress_s=done,
            progress_time_s=self.now_s,
            first_start_s=0.0,
            attained_gpu_s=attained_gpu_s,
        )
        self.running.append(run)
        return run

    def wait(self, spec: JobSpec, *, done: float = 0.0, attained_gpu_s: float = 0.0) -> JobRun:
        run = pending(spec, done=done, attained_gpu_s=attained_gpu_s)
        self.waiting.append(run)
        return run

    def view(self, oracle: Callable[[JobSpec, Allocation], float] | None = None) -> ClusterView:
        key = lambda r: (r.spec.submit_time_s, r.job_id)  # noqa: E731
        return ClusterView(
            now_s=self.now_s,
            cluster=self.cluster,
            pending=sorted(self.waiting, key=key),
            running=sorted(self.running, key=key),
            _oracle=oracle,
        )


def scene(servers: int = 1, capacity: Resources = GPU_SERVER) -> Scene:
    return Scene(Cluster.homogeneous(servers, capacity))


def counts(decision: Decision) -> dict[int, tuple[int, int]]:
    """Job id → (workers, PS) of a decision, in decision order."""
    return {j: (t.num_workers, t.num_ps) for j, t in decision.targets.items()}


class CheckedSimulator(Simulator):
    """A simulator that checks capacity at every scheduling point and that jobs finish once."""

    finished_ids: list[int]

    def apply(self, decision: Decision) -> dict[int, Status]:
        statuses = super().apply(decision)
        self.cluster.assert_consistent()
        used = self.cluster.used_total().as_tuple()
        cap = self.cluster.total.as_tuple()
        assert all(u <= c + 1e-6 for u, c in zip(used, cap, strict=True))
        for run in self.running.values():
            assert self.cluster.allocation_of(run.job_id) == run.allocation
        return statuses

    def _finish(self, run: JobRun, t: float) -> None:
        assert run.finish_s is None, f"job {run.job_id} finished twice"
        self.finished_ids.append(run.job_id)
        super()._finish(run, t)


def checked_run(
    workload: Workload,
    scheduler: Scheduler,
    seed: int,
    *,
    oracle_for_all: Callable[[JobSpec, Allocation], float] | None = None,
) -> tuple[Result, list[int]]:
    """Simulate ``workload`` under ``scheduler`` with invariant checks.

    Args:
        oracle_for_all: if given, every scheduler's views carry this oracle (spy tests).

    Returns:
        The result and the ids of finished jobs in the order they finished.
    """
    sim = CheckedSimulator(
        workload.jobs,
        workload.make_cluster(),
        workload.model,
        scheduler,
        make_placement(workload.placement),
        SimConfig(
            interval_s=workload.interval_s,
            on_events=workload.on_events,
            noise=workload.noise,
            seed=seed,
        ),
        workload_name=workload.name,
    )
    sim.finished_ids = []
    if oracle_for_all is not None:
        decide = scheduler.decide

        def spied(view: ClusterView) -> Decision:
            return decide(
                ClusterView(
                    now_s=view.now_s,
                    cluster=view.cluster,
                    pending=view.pending,
                    running=view.running,
                    interval_s=view.interval_s,
                    last_status=view.last_status,
                    _oracle=oracle_for_all,
                    type_speeds=view.type_speeds,
                )
            )

        scheduler.decide = spied  # type: ignore[method-assign]
    return sim.run(), sim.finished_ids
