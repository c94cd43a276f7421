import pytest

from dlsched.sim.metrics import jain_index, server_fragmentation


def test_fragmentation_is_zero_for_idle_or_uniform_servers():
    assert server_fragmentation([0, 0, 0, 0]) == 0.0
    assert server_fragmentation([5, 5, 5, 5]) == pytest.approx(0.0)


def test_fragmentation_matches_eq1_by_hand():
    # x = (10, 0, 0, 0): 1 - 10^2 / (4 * 100) = 0.75
    assert server_fragmentation([10, 0, 0, 0]) == pytest.approx(0.75)
    # x = (1, 3): 1 - 16 / (2 * 10) = 0.2
    assert server_fragmentation([1, 3]) == pytest.approx(0.2)


def test_jain_index_bounds():
    assert jain_index([1, 1, 1]) == pytest.approx(1.0)
    assert jain_index([1, 0, 0, 0]) == pytest.approx(0.25)


@pytest.mark.parametrize("horizon_s", [3_000.0, 20_000.0, 60_000.0])
def test_cluster_fragmentation_is_the_mean_of_eq1_over_gpu_servers(horizon_s: float):
    from dlsched.placement import make_placement
    from dlsched.schedulers.registry import make_scheduler
    from dlsched.sim import SimConfig, Simulator
    from dlsched.sim.metrics import fragmentation, gpu_remaining_matrix
    from dlsched.workloads.registry import make_workload

    workload = make_workload("sched2", seed=3, num_jobs=120)
    sim = Simulator(
        workload.jobs,
        workload.make_cluster(),
        workload.model,
        make_scheduler("fifo"),
        make_placement("load_balance"),
        SimConfig(interval_s=None, on_events=True, horizon_s=horizon_s, seed=3),
    )
    sim.run()
    running = list(sim.running.values())
    assert running, "the check needs a busy cluster"
    matrix = gpu_remaining_matrix(sim.cluster, running, sim.now_s)
    gpus = sim.cluster.capacity_array[:, 0].astype(int)
    expected = [server_fragmentation(matrix[i, : gpus[i]]) for i in range(len(gpus)) if gpus[i]]
    assert fragmentation(sim.cluster, running, sim.now_s) == pytest.approx(
        sum(expected) / len(expected)
    )
