"""Gavel's FIFO: jobs in arrival order take whole GPU types, heterogeneity-aware or agnostic.

At each allocation reset, jobs in arrival order each get all of their time (``X = 1``) on one
type that still has GPUs for them: ``gavel-fifo-het`` (Gavel's ``fifo_perf``) the type with
the highest estimated rate, recomputed from scratch; ``gavel-fifo`` (Gavel's ``fifo``) a job
keeps the type it had and new jobs take a random type with room (seeded). The first job that
finds no type stops the queue (no job jumps ahead). The round mechanism then runs only jobs
given time (``skip_zero_priority``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from dlsched.core import JobRun
from dlsched.papers.gavel.lp import Array, Problem
from dlsched.papers.gavel.rounds import SETTING, SOURCE, GavelRounds
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import register


class GavelFifoHet(GavelRounds):
    """FIFO onto the fastest type with room (Gavel's ``fifo_perf``), in rounds."""

    name = "gavel-fifo-het"
    aware: ClassVar[bool] = True
    skip_zero_priority: ClassVar[bool] = True

    def reset(self) -> None:
        super().reset()
        self._type_of: dict[int, int] = {}
        self._pick = random.Random(0)

    def policy_rates(self, rates: Array, types: tuple[str, ...]) -> Array:
        """The estimates, aware or not: the agnostic FIFO only uses them to avoid a type the
        job cannot run on (as Gavel's)."""
        return rates

    def allocation(self, problem: Problem, runs: Sequence[JobRun], now_s: float) -> Array:
        m, n = problem.shape
        x = np.zeros((m, n))
        left = problem.gpus.copy()
        queue = list(range(m))  # view.jobs() is in arrival order
        kept: dict[int, int] = {}
        if not self.aware:  # Gavel's base FIFO keeps each job's type until it finishes
            for i, run in enumerate(runs):
                k = self._type_of.get(run.job_id)
                if k is not None and problem.scale[i] <= left[k]:
                    kept[i] = k
                    left[k] -= problem.scale[i]
            queue = [i for i in queue if i not in kept]
        for i, k in kept.items():
            x[i, k] = 1.0
        for i in queue:
            room = [k for k in range(n) if left[k] >= problem.scale[i]]
            if not room:
                break
            if self.aware:
                k = max(room, key=lambda k: (problem.rates[i, k], -k))
            else:
                k = room[self._pick.randrange(len(room))]
            if problem.rates[i, k] <= 0.0:
                continue
            x[i, k] = 1.0
            left[k] -= problem.scale[i]
        self._type_of = {runs[i].job_id: int(np.argmax(x[i])) for i in range(m) if x[i].any()}
        return x


class GavelFifo(GavelFifoHet):
    """FIFO onto a random type with room, kept until the job ends (Gavel's ``fifo``)."""

    name = "gavel-fifo"
    aware: ClassVar[bool] = False


@register(
    "gavel-fifo-het",
    setting=SETTING,
    source=SOURCE,
    description="arrival order, each job on the fastest GPU type with room, in rounds",
)
def _make_het(_arg: str | None) -> Scheduler:
    return GavelFifoHet()


@register(
    "gavel-fifo",
    setting=SETTING,
    source=SOURCE,
    description="arrival order, each job on a random GPU type with room, in rounds",
)
def _make(_arg: str | None) -> Scheduler:
    return GavelFifo()
