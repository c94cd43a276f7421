"""The simulator's fast paths against the plain computations they replace (issue 2).

Each check compares for exact equality: the fast paths must not change any result.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt
import pytest

from dlsched.core import Allocation, Arch, Cluster, Decision, JobRun, JobSpec, Resources, Status
from dlsched.core.cluster import capacity_for, tasks_that_fit
from dlsched.placement import make_placement
from dlsched.schedulers.common import FreeTracker
from dlsched.schedulers.registry import make_scheduler
from dlsched.sim import SimConfig, Simulator
from dlsched.sim.metrics import fragmentation
from dlsched.workloads.registry import make_workload

SHAPES = [(1.0, 4.0, 32.0), (1.0, 2.0, 10.0), (0.0, 2.0, 10.0), (0.5, 1.5, 3.25), (0.0, 0.0, 0.0)]


def _job(job_id: int, rng: random.Random) -> JobSpec:
    worker = Resources(*rng.choice(SHAPES[:4]))
    ps = Resources(*rng.choice(SHAPES[1:])) if rng.random() < 0.5 else Resources()
    return JobSpec(
        job_id,
        0.0,
        "toy",
        Arch.PS if ps.cpu else Arch.ALLREDUCE,
        1.0,
        worker,
        ps,
        num_workers=1,
        num_ps=1 if ps.cpu else 0,
        max_workers=16,
        max_ps=8 if ps.cpu else 0,
    )


def _random_cluster(rng: random.Random) -> Cluster:
    sizes = [Resources(8, 32, 256), Resources(2, 8, 48), Resources(4, 13.5, 60.5)]
    return Cluster([rng.choice(sizes) for _ in range(rng.randint(1, 24))])


def _churn(rng: random.Random, cluster: Cluster, steps: int) -> Iterable[dict[int, JobSpec]]:
    """Random allocations (on random servers, when they fit) and releases; yields the holders."""
    held: dict[int, JobSpec] = {}
    for step in range(steps):
        if held and rng.random() < 0.4:
            job_id = rng.choice(sorted(held))
            cluster.release(held.pop(job_id))
        else:
            spec = _job(step, rng)
            servers = range(cluster.num_servers)
            workers = [(rng.choice(servers), rng.randint(1, 3))]
            ps = [(rng.choice(servers), 1)] if spec.num_ps else []
            if cluster.allocate(spec, Allocation.of(workers, ps)).ok:
                held[spec.job_id] = spec
        yield held


@pytest.mark.parametrize("seed", range(6))
def test_cluster_fit_counts_and_usage_sum_match_a_recount(seed: int) -> None:
    rng = random.Random(seed)
    cluster = _random_cluster(rng)
    for _ in _churn(rng, cluster, 150):
        free = cluster.free_array
        for shape in SHAPES:
            assert cluster.fits(shape) == capacity_for(free, shape).tolist()
        used = (cluster.capacity_array - free).tolist()
        rows = [list(cluster.free(s).as_tuple()) for s in range(cluster.num_servers)]
        assert rows == free.tolist()
        total = cluster.used_total().as_tuple()
        # the running sum (whole amounts) or the sum in server order equals NumPy's column sum
        assert total == pytest.approx(tuple(np.asarray(used).sum(axis=0)), abs=1e-9)
        assert total == tuple(np.asarray(cluster._used).sum(axis=0).tolist())


@pytest.mark.parametrize("seed", range(4))
def test_free_tracker_counts_match_a_recount(seed: int) -> None:
    rng = random.Random(seed)
    cluster = _random_cluster(rng)
    for held in _churn(rng, cluster, 60):
        runs = [
            JobRun(spec, allocation=cluster.allocation_of(job_id))
            for job_id, spec in list(held.items())[: rng.randint(0, len(held))]
        ]
        tracker = FreeTracker(cluster, release=runs)
        for step in range(4):
            spec = _job(1000 + step, rng)
            tracker.take(spec, rng.randint(1, 4), spec.num_ps)
            for shape in SHAPES:
                fresh = [tasks_that_fit(row, shape) for row in tracker.free]
                assert tracker._counts_for(shape) == fresh


# -- placement: the list-based policies against the NumPy versions they replaced ---------------


def _reference_place(
    name: str, cluster: Cluster, spec: JobSpec, current: Allocation, workers: int, ps: int
) -> Allocation | Status:
    cap = cluster.capacity_array
    safe_cap = np.where(cap > 0, cap, 1.0)

    def choose(free: npt.NDArray[np.float64], fits: npt.NDArray[np.int64], left: int) -> int:
        if name == "pack":
            whole = np.flatnonzero(fits >= left)
            if whole.size:
                return int(whole[np.argmin(fits[whole])])
            return int(np.argmax(fits))
        if name == "gang":
            return int(np.flatnonzero(fits > 0)[0])
        share = np.where(cap > 0, free / safe_cap, np.inf).min(axis=1)
        share[fits <= 0] = -np.inf
        return int(np.argmax(share))

    def remove(counts: dict[int, int]) -> int:
        if name == "pack":
            return min(counts, key=lambda s: (counts[s], -s))
        return max(counts, key=lambda s: (counts[s], s))

    free = cluster.free_array
    sides = []
    for have, want, demand in (
        (current.workers, workers, spec.worker_demand.as_tuple()),
        (current.ps, ps, spec.ps_demand.as_tuple()),
    ):
        counts = dict(have)
        total = sum(counts.values())
        for _ in range(total - want):
            server = remove(counts)
            counts[server] -= 1
            if counts[server] == 0:
                del counts[server]
        need = np.asarray(demand, dtype=np.float64)
        left = want - total
        while left > 0:
            fits = capacity_for(free, demand)
            if not fits.any():
                return Status.unschedulable(
                    f"job {spec.job_id}: {want} tasks of (gpu, cpu, mem)={demand} do not fit "
                    f"({name})"
                )
            server = choose(free, fits, left)
            n = 1 if name != "pack" else int(min(left, fits[server]))
            counts[server] = counts.get(server, 0) + n
            free[server] -= need * n
            left -= n
        sides.append(counts.items())
    return Allocation.of(sides[0], sides[1])


@pytest.mark.parametrize("name", ["pack", "load_balance", "gang"])
def test_placements_match_their_numpy_reference(name: str) -> None:
    placement = make_placement(name)
    rng = random.Random(name)
    checked = 0
    for _ in range(8):
        cluster = _random_cluster(rng)
        for held in _churn(rng, cluster, 40):
            spec = rng.choice(list(held.values())) if held and rng.random() < 0.5 else None
            spec = spec or _job(5000 + checked, rng)
            current = cluster.allocation_of(spec.job_id)
            workers = rng.randint(1, 12)
            ps = rng.randint(1, 4) if spec.num_ps else 0
            got = placement.place(cluster, spec, current, workers, ps)
            assert got == _reference_place(name, cluster, spec, current, workers, ps)
            checked += 1
    assert checked > 100


# -- the engine: slots_run by a shared clock, fragmentation in one pass --------------------------


class _CountingSimulator(Simulator):
    """Also counts slots_run the plain way (one increment per running job per point)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.plain_slots: dict[int, int] = {}
        self.points_checked = 0

    def apply(self, decision: Decision) -> dict[int, Status]:
        statuses = super().apply(decision)
        for run in self.running.values():
            self.plain_slots[run.job_id] = self.plain_slots.get(run.job_id, 0) + 1
        for job_id, run in self.runs.items():
            assert run.slots_run == self.plain_slots.get(job_id, 0)
        self.points_checked += 1
        return statuses


def _loop_fragmentation(cluster: Cluster, running: Iterable[JobRun], now_s: float) -> float:
    """The per-job loop `fragmentation` replaced."""
    gpus = cluster.capacity_array[:, 0].astype(int)
    has_gpus = gpus > 0
    if not has_gpus.any():
        return 0.0
    total = [0.0] * cluster.num_servers
    squares = [0.0] * cluster.num_servers
    for run in running:
        per_task = run.spec.worker_demand.gpu
        if per_task <= 0:
            continue
        left = min(run.remaining_work(now_s) / run.rate, 1e9) if run.rate > 0 else 1e9
        left += max(0.0, run.paused_until_s - now_s)
        for server, n in run.allocation.workers:
            k = round(n * per_task)
            total[server] += k * left
            squares[server] += k * left * left
    sums = np.asarray(total)[has_gpus]
    sq = np.asarray(squares)[has_gpus]
    busy = sq > 0
    values = np.zeros(len(sums))
    values[busy] = 1.0 - sums[busy] ** 2 / (gpus[has_gpus][busy] * sq[busy])
    return float(values.mean())


@pytest.mark.parametrize(
    ("workload", "scheduler", "options"),
    [("dl2", "drf", {"num_jobs": 40}), ("sched2", "fifo", {"num_jobs": 150})],
)
def test_engine_fast_paths_match_plain_counts(
    workload: str, scheduler: str, options: dict[str, int]
) -> None:
    w = make_workload(workload, seed=2, **options)
    sim = _CountingSimulator(
        w.jobs,
        w.make_cluster(),
        w.model,
        make_scheduler(scheduler),
        make_placement(w.placement),
        SimConfig(interval_s=w.interval_s, on_events=w.on_events, noise=w.noise, seed=2),
    )
    frag_checked = 0
    original = sim._record_timeline

    def record(t: float) -> None:
        nonlocal frag_checked
        running = list(sim.running.values())
        assert fragmentation(sim.cluster, running, t) == _loop_fragmentation(
            sim.cluster, running, t
        )
        frag_checked += bool(running)
        original(t)

    sim._record_timeline = record  # type: ignore[method-assign]
    result = sim.run()
    assert result.records and sim.points_checked > 20 and frag_checked > 20
