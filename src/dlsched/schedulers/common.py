"""Helpers shared by heuristic schedulers (no policy logic here)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dlsched.core import Arch, Cluster, JobRun, JobSpec
from dlsched.placement.tasks import grow


def _most_room(_free: npt.NDArray[np.float64], fits: npt.NDArray[np.int64], _left: int) -> int:
    return int(np.argmax(fits))


class FreeTracker:
    """A scratch copy of free resources, so a scheduler can check what still fits as it decides.

    It places tasks greedily where most of them fit, which approximates the engine's placement;
    when the two disagree the engine's placement reports a `Status` and nothing over-allocates.
    """

    def __init__(self, cluster: Cluster, release: list[JobRun] | None = None) -> None:
        self.free = cluster.free_array
        for run in release or ():
            spec = run.spec
            for server, n in run.allocation.workers:
                self.free[server] += np.asarray(spec.worker_demand.as_tuple()) * n
            for server, n in run.allocation.ps:
                self.free[server] += np.asarray(spec.ps_demand.as_tuple()) * n

    def take(self, spec: JobSpec, num_workers: int, num_ps: int = 0) -> bool:
        """Reserve that many tasks if they all fit; leave everything unchanged otherwise."""
        trial = self.free.copy()
        for n, demand in (
            (num_workers, spec.worker_demand.as_tuple()),
            (num_ps, spec.ps_demand.as_tuple()),
        ):
            if n and not grow({}, n, trial, demand, _most_room, one_at_a_time=False):
                return False
        self.free = trial
        return True


def requested(spec: JobSpec) -> tuple[int, int]:
    """The (workers, PS) the user asked for."""
    return spec.num_workers, spec.num_ps if spec.arch is Arch.PS else 0
