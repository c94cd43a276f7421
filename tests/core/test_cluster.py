import pytest

from dlsched.core import Allocation, Cluster, Code, Resources
from tests.helpers import gpu_job, ps_job


def cluster() -> Cluster:
    return Cluster.homogeneous(2, Resources(gpu=4, cpu=16, mem=64))


def test_allocate_and_release_restore_free_resources():
    c = cluster()
    job = gpu_job(1, 0, 100, 3)
    assert c.allocate(job, Allocation.of([(0, 3)])).ok
    assert c.free(0) == Resources(gpu=1, cpu=13, mem=52)
    c.release(job)
    assert c.free(0) == Resources(gpu=4, cpu=16, mem=64)
    assert not c.allocations


def test_over_allocation_is_refused_and_changes_nothing():
    c = cluster()
    assert c.allocate(gpu_job(1, 0, 100, 3), Allocation.of([(0, 3)])).ok
    status = c.allocate(gpu_job(2, 0, 100, 2), Allocation.of([(0, 2)]))
    assert status.code is Code.UNSCHEDULABLE
    assert "server 0" in status.reason
    assert c.allocation_of(2).is_empty
    assert c.free(0).gpu == 1
    c.assert_consistent()


def test_reallocation_counts_the_jobs_own_resources_as_free():
    c = cluster()
    job = gpu_job(1, 0, 100, 4)
    assert c.allocate(job, Allocation.of([(0, 4)])).ok
    assert c.allocate(job, Allocation.of([(0, 2), (1, 2)])).ok
    assert c.free(0).gpu == 2 and c.free(1).gpu == 2


def test_ps_demand_is_counted():
    c = cluster()
    job = ps_job(1, 0, 10)
    assert c.allocate(job, Allocation.of([(0, 2)], [(1, 1)])).ok
    assert c.free(1) == Resources(gpu=4, cpu=14, mem=56)


def test_unknown_server_is_invalid():
    status = cluster().allocate(gpu_job(1, 0, 1, 1), Allocation.of([(5, 1)]))
    assert status.code is Code.INVALID


def test_empty_cluster_is_an_error():
    with pytest.raises(ValueError, match="at least one server"):
        Cluster([])


def test_negative_counts_are_rejected():
    with pytest.raises(ValueError, match="negative"):
        Allocation.of([(0, -1)])
