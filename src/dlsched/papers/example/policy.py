"""The example's policy: waiting jobs in increasing order of a learned linear score.

Each waiting job scores ``weights · FEATURES``; jobs are taken in increasing score (ties:
arrival, then id) and each starts at its requested size if it fits. Zero weights are first come,
first served with skipping. The features are what DeepRM's scheduler sees (§2: demands and
duration known on arrival, as SJF assumes); nothing measured after a job starts.

A checkpoint is ``policy.pt`` (the tensor ``weights``) and ``card.json`` (`dlsched.rl.checkpoint`,
its limits in `dlsched.papers.example.card_check`); PyTorch is imported only to read or write one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from dlsched.core import ClusterView, Decision, JobRun, Resources
from dlsched.schedulers.base import BaseScheduler
from dlsched.schedulers.ordered import start_in_order

ALGORITHM = "example"
"""The ``algorithm`` of this paper's cards."""
FEATURES = ("log_duration", "dominant_share", "log_wait")
"""log(1 + declared duration in s), dominant share of the cluster asked for (0-1),
log(1 + seconds waited)."""
SHIPPED = Path(__file__).resolve().parent / "policies" / "example"


def features(run: JobRun, now_s: float, total: Resources) -> tuple[float, float, float]:
    """`FEATURES` of a waiting job at time ``now_s`` (seconds) on a cluster of ``total``."""
    spec = run.spec
    share = spec.demand(spec.num_workers, spec.num_ps).dominant_share(total)
    return (math.log1p(spec.total_work), share, math.log1p(max(0.0, now_s - spec.submit_time_s)))


class LinearOrder(BaseScheduler):
    """Start waiting jobs in increasing ``weights · features`` (one weight per `FEATURES`)."""

    name = ALGORITHM
    preemptive: ClassVar[bool] = False

    def __init__(self, weights: Sequence[float]) -> None:
        if len(weights) != len(FEATURES):
            raise ValueError(f"example: {len(FEATURES)} weights needed, got {len(weights)}")
        self.weights = tuple(float(w) for w in weights)
        self.trained_setting: dict[str, Any] | None = None  # from the card, for the notice

    def decide(self, view: ClusterView) -> Decision:
        now, total = view.now_s, view.cluster.total

        def key(run: JobRun) -> tuple[float, float, int]:
            score = sum(w * f for w, f in zip(self.weights, features(run, now, total), strict=True))
            return (score, run.spec.submit_time_s, run.job_id)

        return start_in_order(view, sorted(view.pending, key=key))


def load_policy(path: str | Path | None = None) -> LinearOrder:
    """The scheduler of checkpoint ``path`` (None: the shipped policy), its card checked first."""
    from dlsched.rl.checkpoint import load_checkpoint

    where = SHIPPED if path is None else path
    state, card = load_checkpoint(where, algorithm=ALGORITHM, shapes={"features": len(FEATURES)})
    weights = state.get("weights")
    if weights is None or tuple(weights.shape) != (len(FEATURES),):
        raise ValueError(f"checkpoint {where}: 'weights' must hold {len(FEATURES)} numbers")
    scheduler = LinearOrder(weights.tolist())
    scheduler.trained_setting = card.trained_setting or None
    return scheduler
