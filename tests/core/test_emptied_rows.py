"""`Cluster.emptied_rows`: the capacities where giving every holder back is exact (bit for bit)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.core import Allocation, Arch, Cluster, JobRun, JobSpec, Resources
from dlsched.schedulers.common import FreeTracker

DEMANDS = (
    Resources(gpu=1, cpu=4, mem=16),
    Resources(gpu=1, cpu=1.5, mem=4),  # whole GPUs, fractional cores: sums need not be exact
    Resources(gpu=1, cpu=0.1, mem=0.3),
)


def _job(job_id: int, demand: Resources) -> JobRun:
    spec = JobSpec(job_id, 0.0, "toy", Arch.ALLREDUCE, 100.0, demand, num_workers=1)
    return JobRun(spec, progress_time_s=0.0)


def _given_back(cluster: Cluster, holders: list[JobRun]) -> list[tuple[float, ...]]:
    """What the choosing walk computes without the shortcut (`ordered._emptied_rows`)."""
    return [tuple(row) for row in FreeTracker(cluster, release=holders).free]


@settings(max_examples=150, deadline=None)
@given(
    capacity_cpu=st.sampled_from([32.0, 30.1]),
    steps=st.lists(
        st.tuples(st.integers(0, 7), st.integers(0, 2), st.integers(0, 3), st.integers(0, 3)),
        max_size=25,
    ),
)
def test_emptied_rows_are_what_giving_every_holder_back_leaves(
    capacity_cpu: float, steps: list[tuple[int, int, int, int]]
) -> None:
    cluster = Cluster.homogeneous(3, Resources(gpu=8, cpu=capacity_cpu, mem=256))
    runs: dict[int, JobRun] = {}
    for job_id, demand, server, count in steps:
        run = runs.setdefault(job_id, _job(job_id, DEMANDS[demand]))
        alloc = Allocation(((server % 3, count),), ()) if count else Allocation.EMPTY
        if cluster.allocate(run.spec, alloc).ok:
            run.allocation = alloc
    holders = [run for run in runs.values() if not run.allocation.is_empty]
    exact = cluster.emptied_rows(holders)
    if exact is not None:
        assert exact == _given_back(cluster, holders)
        assert [tuple(map(repr, row)) for row in exact] == [
            tuple(map(repr, row)) for row in _given_back(cluster, holders)
        ]  # -0.0 and 0.0 alike
    whole = capacity_cpu == 32.0 and all(runs[j].spec.worker_demand is DEMANDS[0] for j in runs)
    if whole:  # every amount whole: the shortcut applies
        assert exact is not None


def test_emptied_rows_need_every_holder_with_its_own_allocation() -> None:
    cluster = Cluster.homogeneous(2, Resources(gpu=8, cpu=32, mem=256))
    a, b = _job(1, DEMANDS[0]), _job(2, DEMANDS[0])
    for run, server in ((a, 0), (b, 1)):
        run.allocation = Allocation(((server, 2),), ())
        assert cluster.allocate(run.spec, run.allocation).ok
    assert cluster.emptied_rows([a, b]) == [(8.0, 32.0, 256.0)] * 2
    assert cluster.emptied_rows([a]) is None  # b's resources would stay taken
    b.allocation = Allocation(((1, 2),), ())  # equal, but not the object the cluster holds
    assert cluster.emptied_rows([a, b]) is None
    fractional = _job(3, DEMANDS[2])
    fractional.allocation = Allocation(((0, 1),), ())
    assert cluster.allocate(fractional.spec, fractional.allocation).ok
    b.allocation = cluster.allocation_of(2)
    assert cluster.emptied_rows([a, b, fractional]) is None  # 0.1 cores: sums not exact
