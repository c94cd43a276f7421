"""Gavel's LAS: max-min fairness over time fractions, heterogeneity-aware or agnostic.

``gavel-las-het`` is Gavel's ``max_min_fairness_perf``: maximise the smallest normalised
effective throughput ``sum_t rates[j, t] * scale[j] * X[j, t] / proportional[j]``, where
``proportional[j]`` is the job's throughput under an equal share of every type (Gavel's
``ProportionalPolicy``). ``gavel-las`` is Gavel's ``max_min_fairness``: the same with every rate
1.0 (types look alike). Solved by `dlsched.papers.gavel.lp.max_min` (one LP, HiGHS; on
clusters of several types started from the previous allocation's basis, `lp_warm.WarmStart`),
through Gavel's round-based mechanism (`GavelRounds`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from dlsched.core import JobRun
from dlsched.papers.gavel import one_type
from dlsched.papers.gavel.lp import Array, Problem, max_min
from dlsched.papers.gavel.lp_warm import WarmStart
from dlsched.papers.gavel.rounds import SETTING, SOURCE, GavelRounds
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import register


def proportional_throughputs(problem: Problem) -> Array:
    """Each job's throughput with an equal share of each type: ``X[j, t] = gpus[t] / m``,
    scaled so the largest row sums to 1 (Gavel's ``ProportionalPolicy``)."""
    m = problem.shape[0]
    share = np.tile(problem.gpus / max(m, 1), (m, 1))
    share /= max(share.sum(axis=1).max(), 1e-12)
    return (problem.rates * share).sum(axis=1)


def las_allocation(
    problem: Problem, warm: WarmStart | None = None, keys: Sequence[int] = (), lp: bool = True
) -> Array:
    """Gavel's max-min fairness allocation of ``problem`` (priority weights all 1); with
    ``warm`` and at least two GPU types, solved from the basis of ``warm``'s last solve
    (``keys``: the rows' job ids). One type: without ``lp``, where the LP's optimum is unique
    (more jobs than GPUs), that optimum by water-filling (`one_type.max_min`: HiGHS's point up
    to rounding in the last bits), else (and with ``lp``) a fresh HiGHS solve."""
    proportional = proportional_throughputs(problem)
    weights = np.where(proportional > 0, 1.0 / np.maximum(proportional, 1e-12), 0.0)
    if problem.shape[1] == 1 and not lp:
        x = one_type.max_min(problem, weights, unique_only=True)
        if x is not None:
            return x
    if warm is None or problem.shape[1] < 2:
        return max_min(problem, weights)
    n = problem.shape[1]
    return max_min(problem, weights, lambda lp: warm.solve(lp, keys, n, "max-min fairness"))


class GavelLasHet(GavelRounds):
    """Heterogeneity-aware LAS (Gavel's ``max_min_fairness_perf``), in rounds.

    Attributes:
        warm_start: on clusters of several GPU types, solve each allocation from the last
            one's basis (`lp_warm.WarmStart`: as optimal, not always the same vertex as a fresh
            solve, so heterogeneous results differ from before 2026-11-27; ``gavel-las-het:cold``
            and ``gavel-las:cold`` solve fresh every time, as before).
        lp_one_type: on one-type clusters, always solve the LP (fresh) rather than water-fill
            where its optimum is unique (`one_type.max_min`, the default since 2026-11-27:
            HiGHS's point up to rounding, so one-type results can differ from before;
            ``:lp`` and ``:cold`` always solve the LP).
    """

    name = "gavel-las-het"
    round_core: ClassVar[str | None] = "Gavel LAS"
    aware: ClassVar[bool] = True

    def __init__(self, warm_start: bool = True, lp_one_type: bool = False) -> None:
        self.warm_start = warm_start
        self.lp_one_type = lp_one_type
        super().__init__()

    def reset(self) -> None:
        super().reset()
        self._warm = WarmStart() if self.warm_start else None

    def allocation(self, problem: Problem, runs: Sequence[JobRun], now_s: float) -> Array:
        warm = self._warm is not None and problem.shape[1] > 1
        keys = [r.job_id for r in runs] if warm else []  # (only a warm start reads them)
        return las_allocation(problem, self._warm, keys, lp=self.lp_one_type)


class GavelLas(GavelLasHet):
    """Heterogeneity-agnostic LAS (Gavel's ``max_min_fairness``): every type rated 1.0."""

    name = "gavel-las"
    round_core: ClassVar[str | None] = "Gavel LAS"
    aware: ClassVar[bool] = False


def _cold(name: str, arg: str) -> None:
    if arg not in ("cold", "lp"):
        raise ValueError(
            f"scheduler {name}:{arg}: 'cold' (fresh LPs everywhere, the results before "
            "2026-11-27) or 'lp' (the LP on one-type clusters too)"
        )


@register(
    "gavel-las-het",
    setting=SETTING,
    source=SOURCE,
    description="max-min fair time fractions over GPU types from estimated speeds, in rounds",
    argument=("cold | lp", _cold),
)
def _make_het(arg: str | None) -> Scheduler:
    return GavelLasHet(warm_start=arg != "cold", lp_one_type=arg is not None)


@register(
    "gavel-las",
    setting=SETTING,
    source=SOURCE,
    description="max-min fair time fractions, GPU types treated alike, in rounds",
    argument=("cold | lp", _cold),
)
def _make(arg: str | None) -> Scheduler:
    return GavelLas(warm_start=arg != "cold", lp_one_type=arg is not None)
