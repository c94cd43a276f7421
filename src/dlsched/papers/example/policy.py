"""The example's policy: waiting jobs in increasing order of a learned linear score.

At every scheduling point each waiting job gets the score ``weights · features(job, now)``;
jobs are taken in increasing score (ties: arrival, then id) and each starts at its requested
size if it fits (`dlsched.schedulers.ordered.start_in_order`). Non-preemptive. Zero weights
give first come, first served with skipping; a positive duration weight is shortest job first,
a negative waiting weight lets old jobs overtake.

`FEATURES` are what DeepRM's scheduler sees (DeepRM §2: a job's resource demands and duration
are known when it arrives, as SJF assumes): the declared duration (``total_work``, seconds at
the requested size for fixed-duration jobs), the dominant share of the cluster it asks for, and
how long it has waited. No speed and nothing measured after the job starts.

A checkpoint is ``policy.pt`` (the tensor ``weights``) and ``card.json``
(`dlsched.rl.checkpoint`); PyTorch is imported only to read or write one.
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
    waited_s = max(0.0, now_s - spec.submit_time_s)
    return (math.log1p(spec.total_work), share, math.log1p(waited_s))


class LinearOrder(BaseScheduler):
    """Start waiting jobs in increasing ``weights · features`` (module docstring).

    Args:
        weights: one weight per feature of `FEATURES`.
    """

    name = ALGORITHM
    preemptive: ClassVar[bool] = False

    def __init__(self, weights: Sequence[float]) -> None:
        if len(weights) != len(FEATURES):
            raise ValueError(f"example: {len(FEATURES)} weights needed, got {len(weights)}")
        self.weights = tuple(float(w) for w in weights)
        self.trained_setting: dict[str, Any] | None = None  # from the card, for the notice

    def score(self, run: JobRun, now_s: float, total: Resources) -> float:
        """The job's score now (lower starts first)."""
        found = features(run, now_s, total)
        return sum(w * f for w, f in zip(self.weights, found, strict=True))

    def decide(self, view: ClusterView) -> Decision:
        now, total = view.now_s, view.cluster.total
        order = sorted(
            view.pending,
            key=lambda r: (self.score(r, now, total), r.spec.submit_time_s, r.job_id),
        )
        return start_in_order(view, order)


def weights_state(weights: Sequence[float]) -> dict[str, Any]:
    """The checkpoint's tensors for ``weights``."""
    import torch

    return {"weights": torch.tensor(list(weights), dtype=torch.float64)}


def load_policy(path: str | Path | None = None) -> LinearOrder:
    """The scheduler of checkpoint ``path`` (None: the shipped policy); its card is checked
    (`dlsched.rl.card_limits`) before the weights are read."""
    from dlsched.rl.checkpoint import load_checkpoint

    state, card = load_checkpoint(
        SHIPPED if path is None else path,
        algorithm=ALGORITHM,
        shapes={"features": len(FEATURES)},
    )
    weights = state.get("weights")
    if weights is None or tuple(weights.shape) != (len(FEATURES),):
        raise ValueError(f"checkpoint {path}: 'weights' must hold {len(FEATURES)} numbers")
    scheduler = LinearOrder(weights.tolist())
    scheduler.trained_setting = card.trained_setting or None
    return scheduler
