"""Registers ``deeprm`` (DeepRM's trained policies) without importing torch until it is built.

``deeprm`` runs the shipped policy ``policies/ranked`` (one policy for loads 0.3–1.9, 50-step
and long jobsets; its slots show the ten shortest waiting jobs); ``deeprm:LOAD`` runs the
paper-state policy (``policies/load0.7``, ``policies/load1.3``: slots in arrival order, as the
paper) trained nearest ``LOAD``; ``deeprm:paper`` runs ``policies/paper``, trained by DeepRM's own
method (``train deeprm --paper``; a folder named ``paper`` is ``deeprm:./paper``);
``deeprm:paper@LOAD`` runs ``policies/paper_loads/*``, ``policies/paper`` trained on at ``LOAD``;
``deeprm:PATH`` runs a checkpoint from ``dlsched train deeprm``.
See `dlsched.papers.deeprm.policy` for how the policy sees the Simulator's state.
"""

from __future__ import annotations

from dlsched.papers.deeprm.fits import paper_load_policy, refusal
from dlsched.schedulers.arguments import load_or_path
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import register


def _paper_load_or_path(name: str, arg: str) -> None:
    """``deeprm:paper`` (the policy of DeepRM's own method), ``deeprm:paper@LOAD`` (the same
    method trained on at one load), ``deeprm:LOAD`` or ``deeprm:PATH``."""
    if arg.startswith("paper@"):
        paper_load_policy(arg)
    elif arg != "paper":
        load_or_path(name, arg)


@register(
    "deeprm",
    setting="fixed-duration (deeprm)",
    source="DeepRM (Mao et al. 2016), trained here",
    description=(
        "policy network for deeprm loads 0.3-1.9 (how it was made: its card.json; "
        "deeprm:paper DeepRM's own method, deeprm:paper@LOAD the same trained on at LOAD; "
        "deeprm:LOAD paper-state; deeprm:PATH)"
    ),
    argument=("paper, paper@LOAD, LOAD or PATH", _paper_load_or_path),
    refuses=refusal,
)
def _make(arg: str | None) -> Scheduler:
    from dlsched.papers.deeprm.policy import make_deeprm_scheduler

    return make_deeprm_scheduler(arg)
