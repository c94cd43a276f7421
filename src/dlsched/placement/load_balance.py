"""DL2's placement: each new task goes to the least-loaded server where it fits."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import compress
from operator import is_not
from typing import Any

from dlsched.core import Allocation, Cluster, JobSpec, Status
from dlsched.placement.tasks import FreeRows, most_tasks, place_tasks


def share(row: Sequence[float], cap: Sequence[float]) -> float:
    """The smallest free fraction of a server's GPUs, cores and memory (inf where none)."""
    return min(
        row[0] / cap[0] if cap[0] > 0 else math.inf,
        row[1] / cap[1] if cap[1] > 0 else math.inf,
        row[2] / cap[2] if cap[2] > 0 else math.inf,
    )


class LoadBalance:
    """Spread tasks: each goes where the largest fraction of every resource is still free.

    Ties go to the lowest server id. Removals take tasks from the servers holding most of the
    job's tasks, so its load stays balanced.

    The servers' shares are kept between calls for the last cluster seen: `Cluster` replaces a
    server's free row when its usage changes, so only servers whose row is a new object are
    recomputed (a round placing 1,000 jobs on 500 servers computes each share about once).
    """

    name = "load_balance"

    def __init__(self) -> None:
        self._cluster: Cluster | None = None
        self._rows: list[Sequence[float]] = []
        self._shares: list[float] = []

    def _base_shares(self, cluster: Cluster, free: FreeRows) -> list[float]:
        """Every server's share of ``free`` (a copy the caller may change)."""
        cap = cluster.capacity_rows
        if self._cluster is not cluster or len(self._rows) != len(free):
            self._cluster, self._rows = cluster, list(free)
            self._shares = list(map(share, free, cap))
        else:
            for server in compress(range(len(free)), map(is_not, free, self._rows)):
                self._rows[server] = free[server]
                self._shares[server] = share(free[server], cap[server])
        return list(self._shares)

    def place(
        self, cluster: Cluster, spec: JobSpec, current: Allocation, num_workers: int, num_ps: int
    ) -> Allocation | Status:
        cap = cluster.capacity_rows
        # Between two calls `grow` changes only the chosen server's row and fit count, so the
        # effective shares are built once per side (a new `fits` list) and then kept up to date.
        cache: dict[str, Any] = {"fits": None, "free": None, "last": -1}

        def least_loaded(free: FreeRows, fits: list[int], _left: int) -> int:
            last = cache["last"]
            if cache["free"] is not free:
                cache["free"], cache["fits"], last = free, None, -1
                cache["base"] = self._base_shares(cluster, free)
            elif last >= 0:
                cache["base"][last] = share(free[last], cap[last])
            base: list[float] = cache["base"]
            if cache["fits"] is not fits:
                cache["fits"] = fits
                cache["eff"] = [b if f > 0 else -math.inf for b, f in zip(base, fits, strict=True)]
            else:
                cache["eff"][last] = base[last] if fits[last] > 0 else -math.inf
            eff: list[float] = cache["eff"]
            best = eff.index(max(eff))  # ties: the lowest server id
            cache["last"] = best
            return best

        return place_tasks(
            cluster,
            spec,
            current,
            num_workers,
            num_ps,
            choose=least_loaded,
            remove=most_tasks,
            one_at_a_time=True,
            policy=self.name,
        )
