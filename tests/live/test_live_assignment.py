"""Best-fit block assignment, batch slices and load-balanced removal."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.live.assignment import (
    best_fit,
    block_bounds,
    choose_removals,
    initial_owners,
    loads,
    moved_params,
    shard,
)


def test_block_bounds_cover_the_vector() -> None:
    bounds = block_bounds(10_000, 3000)
    assert bounds == [(0, 3000), (3000, 6000), (6000, 9000), (9000, 10_000)]
    assert len(block_bounds(10_600_000)) == 128
    assert block_bounds(0) == []


def test_initial_owners_are_contiguous_and_balanced() -> None:
    sizes = [e - s for s, e in block_bounds(100_000, 4096)]
    owners = initial_owners(sizes, [0, 1, 2])
    load = loads(owners, sizes, [0, 1, 2])
    assert max(load.values()) - min(load.values()) <= 4096


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 5000),
    block=st.sampled_from([1, 7, 64, 333, 1000]),
    start=st.integers(1, 6),
    changes=st.lists(st.integers(-2, 3), min_size=1, max_size=5),
)
def test_best_fit_balances_with_minimal_movement(
    n: int, block: int, start: int, changes: list[int]
) -> None:
    sizes = [e - s for s, e in block_bounds(n, block)]
    ps = list(range(start))
    owners = initial_owners(sizes, ps)
    next_id = start
    for delta in changes:
        if delta >= 0:
            new_ps = ps + list(range(next_id, next_id + delta))
            next_id += delta
        else:
            new_ps = ps[: max(1, len(ps) + delta)]
        new = best_fit(owners, sizes, new_ps)
        assert set(new) <= set(new_ps)
        load = loads(new, sizes, new_ps)
        # balanced: all PS within one block of each other
        assert max(load.values()) - min(load.values()) <= max(sizes)
        # minimal movement: what leaves removed PS plus what overloaded PS must shed,
        # plus at most one block per PS
        share = sum(sizes) / len(new_ps)
        old = loads(owners, sizes, sorted(set(owners)))
        lower = sum(v for p, v in old.items() if p not in new_ps)
        lower += sum(max(0.0, old[p] - share) for p in new_ps if p in old)
        assert moved_params(owners, new, sizes) <= lower + max(sizes) * len(new_ps)
        owners, ps = new, new_ps


def test_best_fit_keeps_everything_when_nothing_changes() -> None:
    sizes = [e - s for s, e in block_bounds(50_000, 1000)]
    owners = initial_owners(sizes, [0, 1, 2])
    assert best_fit(owners, sizes, [0, 1, 2]) == owners


@given(total=st.integers(1, 500), workers=st.integers(1, 50))
def test_shards_partition_the_batch(total: int, workers: int) -> None:
    if workers > total:
        return
    parts = [shard(total, workers, r) for r in range(workers)]
    assert parts[0][0] == 0 and parts[-1][1] == total
    assert all(a[1] == b[0] for a, b in itertools.pairwise(parts))
    sizes = [e - s for s, e in parts]
    assert max(sizes) - min(sizes) <= 1


def test_removals_keep_servers_balanced() -> None:
    servers = {0: 0, 1: 0, 2: 0, 3: 1, 4: 2}
    assert choose_removals(servers, 2) == [2, 1]
    assert sorted(choose_removals(servers, 5)) == [0, 1, 2, 3, 4]
    assert choose_removals({7: 0, 9: 0}, 1) == [9]
