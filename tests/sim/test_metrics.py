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
