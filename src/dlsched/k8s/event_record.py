"""The Kubernetes controller's event log (`dlsched.sim.event_log`): what ``k8s run
--events-out`` writes and ``--dashboard`` serves, the same table as the simulator's and the live
runtime's.

The shared executor records each change it enacts; this records, at the start of each round,
the servers (the Ready nodes of the first round with one, by name order), a ``submit`` for each
job seen for the first time and a ``finish`` for each job no longer active (finished or
deleted). Times are seconds since the controller started; trace IDs are ``namespace/name``.
A grant reclaimed outside a decision (a stale one) is not in the log.
"""

from __future__ import annotations

from collections.abc import Callable

from dlsched.k8s.view import ClusterState
from dlsched.sim.event_log import EventLog
from dlsched.sim.executor import Executor


class ControllerLog:
    """Records one controller's rounds into ``log``.

    Args:
        clock: the controller's clock (Unix seconds).
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        start = clock()
        self.log = EventLog(lambda: clock() - start)
        self.trace_ids: dict[int, str] = {}
        self._active: set[int] = set()

    def round(self, state: ClusterState, executor: Executor) -> None:
        """Record what changed since the last round, and attach the log to ``executor``."""
        log = self.log
        if not log.time_s and state.view is not None:
            log.cluster(row[0] for row in state.cluster.capacity_rows)
        now = set(state.jobs)
        for job_id in sorted(self._active - now):
            log.finish(job_id)
        for job_id, job in state.jobs.items():
            if job_id not in self._active:
                log.submit(job_id)
                self.trace_ids[job_id] = job.key
        self._active = now
        executor.events = log
