"""Registers ``deeprm`` (DeepRM's trained policies) without importing torch until it is built.

``deeprm`` runs the shipped policies (``src/dlsched/papers/deeprm/policies/``), each decision with
the one trained at the load nearest the offered load seen so far; ``deeprm:LOAD`` fixes the shipped
policy nearest ``LOAD``; ``deeprm:PATH`` runs a checkpoint from ``dlsched train deeprm``. See
`dlsched.papers.deeprm.policy` for how the policy sees the Simulator's state.
"""

from __future__ import annotations

from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import register


@register(
    "deeprm",
    setting="fixed-duration (deeprm)",
    source="DeepRM (Mao et al. 2016), trained here",
    description="REINFORCE policy on DeepRM's image state (deeprm:LOAD or deeprm:PATH)",
)
def _make(arg: str | None) -> Scheduler:
    from dlsched.papers.deeprm.policy import make_deeprm_scheduler

    return make_deeprm_scheduler(arg)
