"""Re-packing (`SimConfig.repack`): a job spread over servers moves onto one once one has room,
paying a checkpoint-restart; it never over-allocates and every job still finishes once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.core import Allocation, Cluster, Resources
from dlsched.placement import make_placement
from dlsched.schedulers.registry import make_scheduler
from dlsched.sim import RescaleCost, SimConfig, Simulator
from tests.helpers import LinearModel, gpu_job


def _sim(jobs, repack: bool, servers: int = 2, scheduler: str = "fifo") -> Simulator:
    return Simulator(
        jobs,
        Cluster.homogeneous(servers, Resources(gpu=4, cpu=16, mem=64)),
        LinearModel(),  # a job spread over servers runs at half speed
        make_scheduler(scheduler),
        make_placement("pack"),
        SimConfig(repack=repack, rescale=RescaleCost(restart_s=30.0)),
    )


def _split_job_and_its_end(repack: bool) -> tuple[Allocation, float, int]:
    """Jobs 0 and 1 take 3 GPUs of each server; job 2 (2 GPUs) is split over both until job 0
    ends at 100 s. Returns job 2's allocation at 100 s, its finish time and the moves."""
    jobs = [gpu_job(0, 0.0, 100.0, 3), gpu_job(1, 0.0, 1000.0, 3), gpu_job(2, 0.0, 200.0, 2)]
    sim = _sim(jobs, repack)
    scheduler = sim.scheduler
    at_100 = Allocation.EMPTY
    while (t := sim.next_point()) is not None:
        sim.apply(scheduler.decide(sim.view()))
        if t == 100.0:
            at_100 = sim.runs[2].allocation
    return at_100, float(sim.runs[2].finish_s or 0.0), sim.repacked


def test_a_split_job_moves_onto_one_server_and_pays_a_restart() -> None:
    split, end, moves = _split_job_and_its_end(repack=False)
    assert split.num_servers == 2 and moves == 0
    assert end == 400.0  # 50 units by 100 s at half speed, 150 more at half speed
    moved, end, moves = _split_job_and_its_end(repack=True)
    assert moved == Allocation(((0, 2),)) and moves == 1
    assert end == 100.0 + 30.0 + 150.0  # restart, then the rest at full speed


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 500), st.integers(10, 400), st.integers(1, 8)),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(["fifo", "drf", "srtf"]),
)
def test_repacking_never_over_allocates_and_every_job_finishes_once(
    specs: list[tuple[int, int, int]], scheduler_name: str
) -> None:
    jobs = [gpu_job(i, float(t), float(d), g) for i, (t, d, g) in enumerate(specs)]
    sim = _sim(jobs, repack=True, servers=3, scheduler=scheduler_name)
    scheduler = sim.scheduler
    while sim.next_point() is not None:
        sim.apply(scheduler.decide(sim.view()))
        cluster = sim.cluster
        assert all(row[k] >= -1e-9 for row in cluster.free_rows() for k in range(3))
        cluster.assert_consistent()
        for run in sim.running.values():
            assert cluster.allocation_of(run.job_id) == run.allocation
            assert run.allocation.num_workers == run.spec.num_workers
    assert sorted(run.job_id for run in sim.finished) == list(range(len(jobs)))
