"""Who holds what: parameter blocks on PS (best-fit), batch slices on workers, which task to remove.

The flat parameter vector of a model is cut into contiguous blocks (the unit a PS owns and
migrates). When PS join or leave, `best_fit` keeps every PS at nearly the same number of
parameters while moving as few as possible (DL2 §5, step 2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def block_bounds(num_params: int, block_size: int | None = None) -> list[tuple[int, int]]:
    """Cut ``num_params`` parameters into blocks ``[start, end)``.

    Args:
        num_params: length of the flat parameter vector.
        block_size: parameters per block (the last one may be shorter); None picks
            ``max(4096, ceil(num_params / 128))`` so that big models have about 128 blocks.
    """
    if num_params <= 0:
        return []
    size = block_size or max(4096, math.ceil(num_params / 128))
    return [(s, min(s + size, num_params)) for s in range(0, num_params, size)]


def initial_owners(sizes: Sequence[int], ps_ids: Sequence[int]) -> list[int]:
    """Owners of a fresh job: best-fit from nothing (contiguous runs of nearly equal size)."""
    return best_fit([None] * len(sizes), sizes, ps_ids)


def best_fit(
    owners: Sequence[int | None], sizes: Sequence[int], ps_ids: Sequence[int]
) -> list[int]:
    """New owner of every block for the PS set ``ps_ids``, moving as little as possible.

    Each PS of ``ps_ids`` keeps its blocks up to its share ``total / len(ps_ids)`` (it sheds its
    highest-numbered blocks beyond, as long as shedding brings it closer to the share). Blocks
    shed, held by PS that leave, or unowned go, largest first, to the PS whose remaining deficit
    fits them most tightly (best fit); a block fitting nowhere goes to the largest deficit.

    Args:
        owners: current owner per block (None or a PS not in ``ps_ids``: must move).
        sizes: parameters per block.
        ps_ids: the PS after the change (at least one when there are blocks).

    Returns:
        owner per block.
    """
    if len(owners) != len(sizes):
        raise ValueError("owners and sizes differ in length")
    if not sizes:
        return []
    if not ps_ids:
        raise ValueError("no PS to hold the parameters")
    share = sum(sizes) / len(ps_ids)
    load = dict.fromkeys(ps_ids, 0)
    held: dict[int, list[int]] = {p: [] for p in ps_ids}
    pool: list[int] = []
    for b, owner in enumerate(owners):
        if owner is not None and owner in load:
            held[owner].append(b)
            load[owner] += sizes[b]
        else:
            pool.append(b)
    for p in ps_ids:
        blocks = held[p]
        while blocks and load[p] > share:
            b = blocks.pop()
            load[p] -= sizes[b]
            pool.append(b)
    new = [o if o is not None else -1 for o in owners]
    for b in sorted(pool, key=lambda b: (-sizes[b], b)):
        deficit = {p: share - load[p] for p in ps_ids}
        fitting = [p for p in ps_ids if deficit[p] >= sizes[b]]
        if fitting:
            target = min(fitting, key=lambda p: (deficit[p], p))
        else:
            target = max(ps_ids, key=lambda p: (deficit[p], -p))
        new[b] = target
        load[target] += sizes[b]
    return new


def moved_params(old: Sequence[int | None], new: Sequence[int], sizes: Sequence[int]) -> int:
    """Parameters whose owner changes from ``old`` to ``new``."""
    return sum(s for o, n, s in zip(old, new, sizes, strict=True) if o != n)


def loads(owners: Sequence[int], sizes: Sequence[int], ps_ids: Sequence[int]) -> dict[int, int]:
    """Parameters held by each PS of ``ps_ids``."""
    out = dict.fromkeys(ps_ids, 0)
    for o, s in zip(owners, sizes, strict=True):
        out[o] = out.get(o, 0) + s
    return out


def shard(total_batch: int, num_workers: int, rank: int) -> tuple[int, int]:
    """Slice ``[start, end)`` of a step's global batch trained by worker ``rank``.

    The total batch stays fixed whatever the worker count (DL2 §3.1); the first
    ``total_batch % num_workers`` ranks take one sample more.
    """
    if not 0 <= rank < num_workers:
        raise ValueError(f"rank {rank} outside 0..{num_workers - 1}")
    if num_workers > total_batch:
        raise ValueError(f"{num_workers} workers for a total batch of {total_batch}")
    base, extra = divmod(total_batch, num_workers)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def choose_removals(servers: Mapping[int, int], count: int) -> list[int]:
    """Which ``count`` tasks to remove, keeping the job's tasks balanced over machines.

    Repeatedly removes from the server hosting most of the remaining tasks (DL2 §5: "the
    scheduler chooses the PS to be removed by keeping the load balanced"), the newest task
    (highest id) first.

    Args:
        servers: task id → server (machine) id it runs on.
        count: how many to remove (at most ``len(servers)``).
    """
    if count > len(servers):
        raise ValueError(f"cannot remove {count} of {len(servers)} tasks")
    left = dict(servers)
    chosen: list[int] = []
    for _ in range(count):
        per_server: dict[int, int] = {}
        for s in left.values():
            per_server[s] = per_server.get(s, 0) + 1
        busiest = max(per_server.items(), key=lambda kv: (kv[1], -kv[0]))[0]
        victim = max(t for t, s in left.items() if s == busiest)
        chosen.append(victim)
        del left[victim]
    return chosen
