"""The ``hetero-score`` policy: (job, GPU type) pairs in decreasing learned linear score.

Each round every active job (running or waiting) is paired with every GPU type it has an
estimated speed on; a pair scores ``weights · pair_features`` (`dlsched.papers.hetero.features`).
Pairs are taken in decreasing score (ties: arrival, then the cluster's type order), each job at
most once, while its type has enough GPUs left for the job's fixed size; jobs not taken are
suspended (Gavel's jobs restart at no cost from their last step). So the action is which jobs
run and on which type. Placement on servers is the one Gavel's round mechanism uses
(`dlsched.placement.typed.place_on_types`: a job keeps its servers where it stays on their type,
the others are placed in an order the executor can apply), so the two differ only in the choice
of jobs and types.

A checkpoint is ``policy.pt`` (the tensor ``weights``) and ``card.json`` (`dlsched.rl.checkpoint`,
its limits in `dlsched.papers.hetero.card_check`); PyTorch is imported only to read one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from dlsched.core import ClusterView, Decision, JobRun, JobSpec, Resources
from dlsched.papers.hetero.changes import ChangesOnly
from dlsched.papers.hetero.features import (
    FEATURES,
    Array,
    estimated_rates,
    gpu_types,
    pair_features,
)
from dlsched.papers.hetero.ranked import RankedPairs
from dlsched.placement.typed import not_fixed_gpu_jobs, place_on_types, scale_of
from dlsched.schedulers.base import BaseScheduler

ALGORITHM = "hetero"
"""The ``algorithm`` of this package's cards."""
SHIPPED = Path(__file__).resolve().parent / "policies" / "hetero"
HAND_WEIGHTS = (-1.0, 0.0, 0.0, 0.0, 0.0, 0.0)
"""A hand-set rule for comparison, not learned: the pair finishing soonest first (shortest
estimated remaining time on that type)."""


class TypeScore(BaseScheduler):
    """Run the (job, type) pairs of highest ``weights · features``, one type per job."""

    name = "hetero-score"
    preemptive: ClassVar[bool] = True

    def __init__(self, weights: Sequence[float]) -> None:
        if len(weights) != len(FEATURES):
            raise ValueError(f"hetero-score: {len(FEATURES)} weights needed, got {len(weights)}")
        self.weights = np.array([float(w) for w in weights])
        self.trained_setting: dict[str, Any] | None = None  # from the card, for the notice
        wait = self.weights[FEATURES.index("log_wait_s")]
        # the kept ranking bounds a waiting job's score by an earlier one: only while waiting
        # does not raise it (and every weight is a number)
        self.ranked: RankedPairs | None = (
            RankedPairs(self.weights) if wait <= 0.0 and np.isfinite(self.weights).all() else None
        )
        """The fast path's kept state (`dlsched.papers.hetero.ranked`); None: the plain rule
        decides every point."""
        self._changes = ChangesOnly()

    def reset(self) -> None:
        if self.ranked is not None:
            self.ranked.clear()

    def cannot_run(self, jobs: Sequence[JobSpec], servers: Sequence[Resources]) -> str | None:
        """Fixed-size GPU jobs only (as Gavel's): no parameter servers, at least one GPU."""
        return not_fixed_gpu_jobs(self.name, jobs)

    def decide(self, view: ClusterView) -> Decision:
        ranked = self.ranked
        if ranked is None or not ranked.update(view):
            return self.decide_plain(view)
        cluster = view.cluster
        types = ranked.types
        server_types = cluster.server_types or (types[0],) * cluster.num_servers
        chosen = ranked.choose(view)  # less the running jobs taken unscored (stayers)
        decision = self._changes.place(
            view, server_types, chosen, ranked.whole, ranked.stayers, ranked.left_out
        )
        if decision is None:  # the stayers last, as the plain order with them in it places
            return place_on_types(view, server_types, chosen + ranked.stayer_pairs())
        return decision

    def decide_plain(self, view: ClusterView) -> Decision:
        """The plain rule: every active job's pairs scored and sorted (`choose`); `decide`
        gives the same decision from kept state where it can."""
        cluster = view.cluster
        types = gpu_types(view)
        server_types = cluster.server_types or (types[0],) * cluster.num_servers
        runs = view.jobs()
        rates = estimated_rates(view, runs, types)
        scores = pair_features(view, runs, types, rates) @ self.weights
        gpus = cluster.gpus_by_type() or {types[0]: int(cluster.total.gpu)}
        return place_on_types(view, server_types, choose(runs, types, rates, scores, gpus))


def choose(
    runs: Sequence[JobRun],
    types: Sequence[str],
    rates: Array,
    scores: Array,
    gpus: dict[str, int],
) -> list[tuple[JobRun, str]]:
    """The jobs to run and their types: pairs with an estimated speed, in decreasing score (ties:
    job order, then type order), each job once, while its type has room for all its GPUs."""
    jobs, kinds = np.nonzero(rates > 0.0)
    order = np.lexsort((kinds, jobs, -scores[jobs, kinds]))
    left = [int(gpus.get(t, 0)) for t in types]
    taken: set[int] = set()
    chosen: list[tuple[JobRun, str]] = []
    room = sum(left)
    for p in order:
        if room <= 0:
            break  # every job needs a GPU at least (`scale_of`): no other pair fits
        i, k = int(jobs[p]), int(kinds[p])
        need = scale_of(runs[i].spec)
        if i in taken or need > left[k]:
            continue
        left[k] -= need
        room -= need
        taken.add(i)
        chosen.append((runs[i], types[k]))
    return chosen


def load_policy(path: str | Path | None = None) -> TypeScore:
    """The scheduler of checkpoint ``path`` (None: the shipped policy), its card checked first."""
    from dlsched.rl.checkpoint import load_checkpoint

    where = SHIPPED if path is None else path
    state, card = load_checkpoint(where, algorithm=ALGORITHM, shapes={"features": len(FEATURES)})
    weights = state.get("weights")
    if weights is None or tuple(weights.shape) != (len(FEATURES),):
        raise ValueError(f"checkpoint {where}: 'weights' must hold {len(FEATURES)} numbers")
    scheduler = TypeScore(weights.tolist())
    scheduler.trained_setting = card.trained_setting or None
    return scheduler
