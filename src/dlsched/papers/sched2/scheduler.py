"""The ``sched2`` scheduler: SCED²'s trained Q-network behind the `Scheduler` protocol.

``--scheduler sched2`` loads the policy shipped in ``dlsched/papers/sched2/policies/sched2``
(trained on the ``sched2`` workload: 15 servers × 8 GPUs, J = 10, k = 4); ``sched2:PATH`` loads
another checkpoint (a directory with ``policy.pt`` and ``card.json``, `dlsched.rl.checkpoint`). At
each scheduling point it repeats: observe (`sched2_state`), take the legal action with the highest
Q-value, until φ or nothing fits; the picked jobs start on their packing placements.
Non-preemptive.

It works on any fixed-GPU workload — ``sched2``, ``philly[:VC]``, ``trace:PATH`` — whose
cluster has the N servers × M GPUs the policy was trained for; otherwise the first decision
raises a one-line ValueError naming both shapes (pass ``--servers N``, or train a policy for
that trace with ``dlsched train sched2 --workload philly:VC``).

This module only registers the scheduler; PyTorch is imported when one is built
(`dlsched.papers.sched2.policy`), so listing schedulers stays fast.
"""

from __future__ import annotations

from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import register


@register(
    "sched2",
    setting="fixed-GPU (sched2, philly, trace)",
    source="SCED² §III",
    description="SCED²'s DQN job selection with packing; sched2:PATH loads a checkpoint",
)
def _make(arg: str | None) -> Scheduler:
    from dlsched.papers.sched2.policy import load_scheduler

    scheduler, _ = load_scheduler(arg)
    return scheduler
