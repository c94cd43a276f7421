"""A demonstrator for SCED²'s DQN: DSIF played inside the agent's own action space.

DQN from demonstrations (Hester et al., 2018) starts from a teacher's transitions. Our teacher
is SCED²'s strongest non-oracle baseline, DSIF (SCED² §IV-A: shortest ideal time first, but a job
that cannot get its best locality now is passed over, at most 3 times), restricted to what the
agent can do: pick one of the J visible jobs (placed by packing) or φ. Among the legal slots, in
window order, it picks the shortest job whose packing placement spans its best number of servers
(``ceil(GPUs / M)``), or whose delays are used up; each job it passes over at a scheduling point
counts one delay. When every legal job is being delayed it plays φ (or, if φ is masked, the
first legal job).
"""

from __future__ import annotations

import math

import numpy as np

from dlsched.papers.sched2.state import Sched2Builder
from dlsched.schedulers.saf import pack_allocation

MAX_DELAYS = 3


class DsifTeacher:
    """DSIF over the agent's window (module docstring). Call `reset` at each episode start.

    Args:
        max_delays: scheduling points a job may be passed over for locality.
    """

    def __init__(self, max_delays: int = MAX_DELAYS) -> None:
        self.max_delays = max_delays
        self.delays: dict[int, int] = {}
        self._point: object | None = None
        self._skipped: set[int] = set()

    def reset(self) -> None:
        self.delays = {}
        self._point = None
        self._skipped = set()

    def act(self, builder: Sched2Builder) -> int:
        """The teacher's action at ``builder``'s current state."""
        if builder is not self._point:
            self._point = builder
            self._skipped = set()
        mask = builder.action_mask()
        legal = np.flatnonzero(mask[:-1]).tolist()
        window = builder.window()
        order = sorted(legal, key=lambda i: (window[i].spec.total_work, i))
        m = builder.shape.gpus_per_server
        for i in order:
            run = window[i]
            g = run.spec.num_workers
            alloc = pack_allocation([row[:] for row in builder.free], run.spec, g, 0)
            if alloc is None:
                continue
            best = math.ceil(g / m)
            used = self.delays.get(run.job_id, 0)
            if alloc.num_servers <= best or used >= self.max_delays:
                self.delays.pop(run.job_id, None)
                return int(i)
            if run.job_id not in self._skipped:
                self._skipped.add(run.job_id)
                self.delays[run.job_id] = used + 1
        if mask[-1]:
            return builder.shape.slots
        return int(legal[0])
