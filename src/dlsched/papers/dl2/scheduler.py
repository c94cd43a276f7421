"""The ``dl2`` scheduler: DL2's trained policy network behind the `Scheduler` protocol.

``dl2`` loads the policy shipped in the package (``dlsched/papers/dl2/policies/dl2/``, trained on
the ``dl2`` workload; its ``card.json`` says how); ``dl2:PATH`` loads another checkpoint directory
made by ``dlsched train dl2``. ``offline-rl`` (DL2 §6.1's OfflineRL baseline) is the same
network trained only in a simulator of fitted Optimus speeds (``dlsched train dl2 --speed-model
optimus``), shipped in ``dlsched/papers/dl2/policies/offline_rl/``; ``offline-rl:PATH`` loads
another. The checkpoint must have been made for the same state shape (J job rows, L job types) or
loading fails with a one-line ValueError. torch is imported only when the scheduler is built, so
listing schedulers stays fast.
"""

from __future__ import annotations

from pathlib import Path

from dlsched.schedulers.arguments import checkpoint_path
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import register

SHIPPED = Path(__file__).resolve().parent / "policies" / "dl2"
"""Directory of the policy shipped with the package."""
SHIPPED_OFFLINE_RL = SHIPPED.parent / "offline_rl"
"""Directory of the shipped OfflineRL policy (trained on fitted Optimus speeds only)."""


def load_dl2(
    path: str | Path | None = None, *, default: Path = SHIPPED, name: str = "dl2"
) -> Scheduler:
    """The greedy DL2 policy scheduler from ``path`` (None: ``default``, the shipped policy)."""
    from dlsched.papers.dl2.network import load, make_scheduler_for
    from dlsched.rl.checkpoint import read_card

    where = Path(path) if path is not None else default
    policy, cfg = load(where)
    scheduler = make_scheduler_for(policy, cfg, name=name)
    scheduler.trained_setting = read_card(where).trained_setting or None  # setting notice
    return scheduler


@register(
    "dl2",
    setting="elastic PS (dl2)",
    source="DL2 (Peng et al. 2019), trained here",
    description="policy network (shipped: see its card.json); dl2:PATH loads another",
    argument=("PATH", checkpoint_path),
)
def _make(arg: str | None) -> Scheduler:
    return load_dl2(arg)


@register(
    "offline-rl",
    setting="elastic PS (dl2)",
    source="DL2 §6.1's OfflineRL baseline, trained here",
    description="DL2's RL trained only on fitted Optimus speeds; offline-rl:PATH loads another",
    argument=("PATH", checkpoint_path),
)
def _make_offline_rl(arg: str | None) -> Scheduler:
    return load_dl2(arg, default=SHIPPED_OFFLINE_RL, name="offline-rl")
