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
        """Each job in arrival order takes its type while one has room; the first that finds
        none stops the queue. Python visits only the jobs kept on their type and those the
        queue reaches (a long queue's tail is never read)."""
        m, n = problem.shape
        x = np.zeros((m, n))
        left = problem.gpus.copy()
        scale, rates = problem.scale, problem.rates
        kept: set[int] = set()
        if not self.aware and self._type_of:  # Gavel's base FIFO keeps a job's type to its end
            ids = getattr(runs, "ids", None)  # `books.RunRows` has them as an array
            if ids is None:
                ids = np.array([r.job_id for r in runs], dtype=np.int64)
            had = np.fromiter(self._type_of, dtype=np.int64, count=len(self._type_of))
            for i in np.flatnonzero(np.isin(ids, had)).tolist():  # in arrival order
                k = self._type_of[int(ids[i])]
                if scale[i] <= left[k]:
                    kept.add(i)
                    left[k] -= scale[i]
                    x[i, k] = 1.0
        for i in range(m):
            if i in kept:
                continue
            room = [k for k in range(n) if left[k] >= scale[i]]
            if not room:
                break
            if self.aware:
                k = max(room, key=lambda k: (rates[i, k], -k))
            else:
                k = room[self._pick.randrange(len(room))]
            if rates[i, k] <= 0.0:
                continue
            x[i, k] = 1.0
            left[k] -= scale[i]
        given = np.flatnonzero(x.any(axis=1))
        types = np.argmax(x[given], axis=1)
        self._type_of = {
            runs[i].job_id: k for i, k in zip(given.tolist(), types.tolist(), strict=True)
        }
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
