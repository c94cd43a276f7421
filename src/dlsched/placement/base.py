"""The placement contract: where a job's tasks go, given how many it should have."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from dlsched.core import Allocation, Cluster, JobSpec, Status


class Placement(Protocol):
    """Chooses servers for a job's tasks; never decides how many tasks.

    ``place`` gets the job's current allocation and its new task counts and returns the full new
    allocation, keeping tasks where they are (tasks that move would cost a migration). It returns
    a `Status` with a reason when the counts do not fit, and never changes ``cluster``.
    """

    name: str

    def place(
        self, cluster: Cluster, spec: JobSpec, current: Allocation, num_workers: int, num_ps: int
    ) -> Allocation | Status: ...


def capacity_for(
    free: npt.NDArray[np.float64], demand: tuple[float, float, float]
) -> npt.NDArray[np.int64]:
    """How many tasks of ``demand`` fit on each server: an int array of length N."""
    need = np.asarray(demand, dtype=np.float64)
    mask = need > 0
    if not mask.any():
        return np.full(free.shape[0], 1 << 30, dtype=np.int64)
    fits = np.floor((free[:, mask] + 1e-9) / need[mask]).min(axis=1)
    return np.maximum(fits, 0).astype(np.int64)
