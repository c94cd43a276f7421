from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.core import Allocation, Cluster, Code, Resources, Status
from dlsched.placement import Gang, LoadBalance, Pack, make_placement
from tests.helpers import gpu_job, ps_job

GPU8 = Resources(gpu=8, cpu=64, mem=512)


def occupy(cluster: Cluster, used_gpus: list[int]) -> None:
    """Fill each server with that many one-GPU filler jobs (ids from 1000)."""
    job_id = 1000
    for server, gpus in enumerate(used_gpus):
        for _ in range(gpus):
            cluster.allocate(gpu_job(job_id, 0.0, 1.0, 1), Allocation.of([(server, 1)]))
            job_id += 1


def test_pack_takes_the_tightest_server_that_holds_the_whole_job():
    # SCED² Fig. 2: free GPUs 3, 5, 2, 7 → a 3-GPU job goes to server 0 (3 free), not 1 or 3
    cluster = Cluster.homogeneous(4, GPU8)
    occupy(cluster, [5, 3, 6, 1])
    alloc = Pack().place(cluster, gpu_job(0, 0.0, 1.0, 3), Allocation.EMPTY, 3, 0)
    assert alloc == Allocation.of([(0, 3)])


def test_pack_spills_from_the_largest_server_when_nothing_holds_the_job():
    cluster = Cluster.homogeneous(3, GPU8)
    occupy(cluster, [6, 3, 5])  # free 2, 5, 3
    alloc = Pack().place(cluster, gpu_job(0, 0.0, 1.0, 7), Allocation.EMPTY, 7, 0)
    assert isinstance(alloc, Allocation)
    # 5 on the roomiest server, then the remaining 2 on the tightest that holds them
    assert alloc == Allocation.of([(1, 5), (0, 2)])


def test_load_balance_spreads_tasks_over_the_least_loaded_servers():
    cluster = Cluster.homogeneous(3, Resources(gpu=4, cpu=16, mem=64))
    occupy(cluster, [2, 0, 1])
    alloc = LoadBalance().place(cluster, ps_job(0, 0.0, 1.0), Allocation.EMPTY, 3, 0)
    assert isinstance(alloc, Allocation)
    assert dict(alloc.workers) == {1: 2, 2: 1}


def test_gang_binds_first_fit_in_server_order():
    cluster = Cluster.homogeneous(3, Resources(gpu=4, cpu=16, mem=64))
    occupy(cluster, [3, 0, 0])
    alloc = Gang().place(cluster, gpu_job(0, 0.0, 1.0, 3), Allocation.EMPTY, 3, 0)
    assert alloc == Allocation.of([(0, 1), (1, 2)])


@pytest.mark.parametrize("placement", ["pack", "load_balance", "gang"])
def test_all_or_nothing_when_the_job_does_not_fit(placement):
    cluster = Cluster.homogeneous(2, Resources(gpu=4, cpu=16, mem=64))
    occupy(cluster, [3, 3])
    before = cluster.free_array.copy()
    status = make_placement(placement).place(
        cluster, gpu_job(0, 0.0, 1.0, 3), Allocation.EMPTY, 3, 0
    )
    assert isinstance(status, Status)
    assert status.code is Code.UNSCHEDULABLE
    assert (cluster.free_array == before).all()


@pytest.mark.parametrize("placement", ["pack", "load_balance", "gang"])
def test_shrinking_keeps_a_subset_of_the_current_tasks(placement):
    cluster = Cluster.homogeneous(3, Resources(gpu=4, cpu=16, mem=64))
    spec = ps_job(0, 0.0, 1.0)
    current = Allocation.of([(0, 3), (1, 1), (2, 2)], [(0, 1), (2, 1)])
    assert cluster.allocate(spec, current).ok
    smaller = make_placement(placement).place(cluster, spec, current, 4, 1)
    assert isinstance(smaller, Allocation)
    assert smaller.num_workers == 4 and smaller.num_ps == 1
    held = dict(current.workers)
    assert all(n <= held.get(server, 0) for server, n in smaller.workers)


def test_unknown_placement_names_the_choices():
    with pytest.raises(ValueError, match=r"unknown placement 'spread'.*pack"):
        make_placement("spread")


@settings(max_examples=40, deadline=None)
@given(
    used=st.lists(st.integers(0, 8), min_size=1, max_size=6),
    gpus=st.integers(1, 16),
    placement=st.sampled_from(["pack", "load_balance", "gang"]),
)
def test_a_placement_fits_exactly_when_enough_gpus_are_free(used, gpus, placement):
    cluster = Cluster.homogeneous(len(used), GPU8)
    occupy(cluster, used)
    spec = gpu_job(0, 0.0, 1.0, gpus)
    result = make_placement(placement).place(cluster, spec, Allocation.EMPTY, gpus, 0)
    free_gpus = sum(8 - u for u in used)
    if gpus <= free_gpus:
        assert isinstance(result, Allocation)
        assert result.num_workers == gpus
        assert cluster.check(spec, result).ok
    else:
        assert isinstance(result, Status)
