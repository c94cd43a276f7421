"""Tetris★ (DeepRM §4.1's comparable): a combined score of packing and shortness.

Rule: repeatedly start the pending job with the highest score ``knob · a / max(a) + (1 − knob) ·
s / max(s)`` among jobs that fit, where ``a`` is Packer's alignment of the job's demand with the
free resources and ``s = 1 / duration`` is SJF's preference (DeepRM's code,
``get_packer_sjf_action``, combines the same two terms with a knob; we divide each by its
maximum over the candidates so that the knob weighs comparable numbers — the raw alignment is in
squared resource units). ``knob`` defaults to 0.5; ``tetris-star:KNOB`` sets it (1 = Packer,
0 = SJF). Work-conserving, non-preemptive.

Sources: Mao et al., DeepRM (HotNets 2016) §4.1; Grandl et al., Tetris (SIGCOMM 2014).
"""

from __future__ import annotations

from typing import ClassVar

from dlsched.core import ClusterView, Decision, JobRun
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.ordered import alignment, start_greedy
from dlsched.schedulers.registry import register


class TetrisStar(BaseScheduler):
    """Packing and shortest-job preferences in one score.

    Args:
        knob: weight of packing in [0, 1]; the rest goes to shortness.
    """

    name = "tetris-star"
    preemptive: ClassVar[bool] = False

    def __init__(self, knob: float = 0.5) -> None:
        if not 0.0 <= knob <= 1.0:
            raise ValueError(f"tetris-star: knob must be in [0, 1], got {knob}")
        self.knob = knob

    def decide(self, view: ClusterView) -> Decision:
        total = view.cluster.total.as_tuple()

        def score(runs: list[JobRun], free: tuple[float, float, float]) -> list[float]:
            align = [alignment(run, free, total) for run in runs]
            short = [1.0 / max(run.spec.total_work, 1e-9) for run in runs]
            top_a = max(align) or 1.0
            top_s = max(short) or 1.0
            k = self.knob
            pairs = zip(align, short, strict=True)
            return [k * a / top_a + (1.0 - k) * s / top_s for a, s in pairs]

        return start_greedy(view, view.pending, score)


@register(
    "tetris-star",
    setting="fixed-duration (deeprm)",
    source="DeepRM §4.1 (Tetris★)",
    description="packing + shortest-job score (tetris-star:KNOB); work-conserving",
)
def _make(arg: str | None) -> Scheduler:
    if arg is None:
        return TetrisStar()
    try:
        return TetrisStar(float(arg))
    except ValueError as err:
        raise ValueError(f"tetris-star:KNOB needs a number in [0, 1]: {err}") from None
