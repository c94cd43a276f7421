"""What `hetero-score`'s kept state knows of one job (`dlsched.papers.hetero.ranked`), and the
entries of its heaps of waiting pairs."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dlsched.core import JobRun
from dlsched.papers.hetero.features import relative_speeds
from dlsched.placement.typed import scale_of


class KeptJob:
    """What the kept state knows of one job: its fixed parts and its place in the heaps."""

    __slots__ = (
        "alloc", "here", "key", "kinds", "mag", "need", "parts", "positive", "rates", "relative",
        "run", "size", "stamp", "static", "submit", "total", "waiting",
    )  # fmt: skip

    def __init__(self, run: JobRun, rates: list[float], weights: Sequence[float]) -> None:
        spec = run.spec
        self.run = run
        self.submit = spec.submit_time_s
        self.total = spec.total_work
        self.key = (spec.submit_time_s, spec.job_id)  # `ClusterView.jobs` order
        self.need = scale_of(spec)
        self.rates = rates
        self.kinds = [k for k, r in enumerate(rates) if r > 0.0]
        if len(rates) == 1 and 1e-12 <= rates[0] < math.inf:
            # one type, a finite speed: `relative_speeds` is log(r / r) = log(1.0) = 0.0
            self.positive = np.ones((1, 1), dtype=bool)
            self.relative = np.zeros(1)
        else:
            row = np.array([rates], float)
            self.positive = row > 0.0
            self.relative = relative_speeds(row, self.positive)[0]
        self.size = math.log2(max(spec.num_workers, 1))
        self.alloc: object = None  # the allocation `here` was read from
        self.here = -1  # the type it runs on (-1: none)
        self.stamp = 0  # bumped each time it joins the queue: older heap entries are stale
        self.waiting = False
        self.static: list[float] = []  # per type: the score without the wait and the mean
        self.mag: list[float] = []  # per type: the sizes of the terms of ``static``
        self.parts: tuple[float, float, float] | None = None
        """Running on its one type: `dlsched.papers.hetero.running.fixed_part` and
        log(1 + its total work / speed) (its own, kept once read)."""

    def enter(self, run: JobRun, now_s: float, weights: Sequence[float]) -> None:
        """The job (waiting from ``now_s`` with its progress as of then) joins the queue."""
        w0, w1, w2, _, _, w5 = weights
        self.run = run
        self.stamp += 1
        self.waiting = True
        remaining = run.remaining_work(now_s)
        rel = self.relative.tolist()
        self.static = [0.0] * len(self.rates)
        self.mag = [0.0] * len(self.rates)
        for k in self.kinds:
            terms = (
                w0 * math.log1p(remaining / self.rates[k]),
                w1 * rel[k],
                w2 * rel[k],
                w5 * self.size,
            )
            self.static[k] = sum(terms)
            self.mag[k] = sum(abs(x) for x in terms)


Entry = tuple[float, float, int, int, KeptJob]
"""A heap entry: (minus the bound, submission, job id, stamp, job)."""
