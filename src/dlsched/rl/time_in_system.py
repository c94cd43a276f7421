"""`TimeInSystem`: job-hours spent in the system, integrated over a driven simulation.

The ``reward="jct"`` option of the environments pays, on every step at which simulated time
advances from ``t0`` to ``t1``, minus the job-hours spent in the system during ``[t0, t1]``: the
integral over that interval of the number of jobs that have arrived and not finished. Summed
over an episode that runs until every job finished, this is ``−Σ_j (finish_j − submit_j)``, minus
the total JCT (Little's law), so a library maximising the plain undiscounted return minimises
average JCT. The count is integrated exactly, job by job (a job arriving or finishing inside
the interval counts for the part it spent in the system), not sampled at scheduling points.
"""

from __future__ import annotations

from dlsched.sim import Simulator

HOUR_S = 3600.0
"""Seconds per hour: the ``jct`` reward is in job-hours."""


class TimeInSystem:
    """Integrates the number of jobs in the system of ``sim`` between successive calls.

    Args:
        sim: the simulation to watch (submission times are >= 0 s).
    """

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self._specs = sim.specs  # sorted by submission time
        self._next = 0  # first spec not yet seen
        self._open: list[int] = []  # indices of seen jobs not finished at the last call
        self._last_s = 0.0

    def advance(self) -> float:
        """Job-seconds in the system between the previous call (time 0 for the first) and
        ``sim.now_s``."""
        now = self.sim.now_s
        t0 = self._last_s
        while self._next < len(self._specs) and self._specs[self._next].submit_time_s < now:
            self._open.append(self._next)
            self._next += 1
        total = 0.0
        still_open = []
        for i in self._open:
            spec = self._specs[i]
            run = self.sim.runs.get(spec.job_id)
            finish = run.finish_s if run is not None else None
            end = now if finish is None else min(finish, now)
            total += max(0.0, end - max(t0, spec.submit_time_s))
            if finish is None or finish > now:
                still_open.append(i)
        self._open = still_open
        self._last_s = now
        return total
