"""What a learned policy saw and weighed at its decision points, for the report's decision view
(``--report`` on a run of DL2, DeepRM or SCED²'s Q-network, ``sched2:policies/sched2_dqn``; the
shipped ``sched2`` is a look-ahead rule with no scores, and records nothing).

A `DecisionTrace` set on a `dlsched.rl.policy_scheduler.SlotLoopScheduler` (``scheduler.trace``;
None, the default, costs one test an action) records, at each of the first `max_points`
scheduling points: the time, what the view showed (jobs waiting and running, free GPUs), and
for each action of the round the legal actions with the highest scores, their softmax and the
action taken. Scores are the network's outputs: DL2's and DeepRM's policy logits (the softmax
is their action distribution), SCED²'s Q-values (the softmax only ranks them). Reading them
changes no decision: the scores are those the greedy choice itself computed, or a second pass
of the same network on the same observation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dlsched.core import ClusterView


@dataclass
class DecisionTrace:
    """Decision points of one run (see the module docstring).

    Args:
        max_points: scheduling points recorded (the first ones); later ones are counted only.
        top: legal actions kept per step, by score.
        max_steps: actions kept per point (a large round keeps its first ones).
    """

    max_points: int = 200
    top: int = 8
    max_steps: int = 60
    points: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0
    _on: bool = False

    def begin(self, view: ClusterView) -> None:
        """A scheduling point starts: record it if there is room."""
        self._on = len(self.points) < self.max_points
        if not self._on:
            self.skipped += 1
            return
        free = float(view.cluster.free_array[:, 0].sum()) if view.cluster.num_servers else 0.0
        self.points.append(
            {
                "t": round(view.now_s, 1),
                "waiting": len(view.pending),
                "running": len(view.running),
                "free_gpus": round(free, 2),
                "steps": [],
            }
        )

    def step(
        self,
        builder: Any,
        scores: npt.NDArray[np.floating[Any]] | None,
        mask: npt.NDArray[np.bool_],
        action: int,
    ) -> None:
        """One action of the current point: ``scores`` of every action (None: unknown), the
        legal ones (``mask``) and the one taken."""
        steps = self.points[-1]["steps"] if self._on and self.points else None
        if steps is None or len(steps) >= self.max_steps:
            return
        label = getattr(builder, "action_label", None)
        name = (lambda a: label(int(a))) if label is not None else (lambda a: f"action {int(a)}")
        entry: dict[str, Any] = {"chosen": name(action), "legal": int(mask.sum())}
        if scores is not None:
            legal = np.flatnonzero(mask)
            values = np.asarray(scores, dtype=np.float64)[legal]
            shifted = np.exp(values - values.max()) if values.size else values
            soft = shifted / shifted.sum() if values.size else shifted
            best = np.argsort(-values, kind="stable")[: self.top]
            entry["actions"] = [name(legal[k]) for k in best]
            entry["scores"] = [round(float(values[k]), 4) for k in best]
            entry["p"] = [round(float(soft[k]), 4) for k in best]
        steps.append(entry)

    def as_dict(self) -> dict[str, Any]:
        """The trace for the report page."""
        return {"points": self.points, "skipped": self.skipped, "top": self.top}
