"""Registers ``hetero-score`` (the shipped policy; ``hetero-score:PATH`` loads another) without
importing PyTorch or SciPy until it is built."""

from __future__ import annotations

from dlsched.schedulers.arguments import checkpoint_path
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import register


@register(
    "hetero-score",
    setting="fixed-GPU, heterogeneous (gavel, philly, trace)",
    source="dlsched's own (dlsched.papers.hetero), trained here by cross-entropy search",
    description="learned score of (job, GPU type) pairs from estimated per-type speeds and "
    "remaining work, in rounds; hetero-score:PATH",
    argument=("PATH", checkpoint_path),
)
def _make(arg: str | None) -> Scheduler:
    from dlsched.papers.hetero.policy import load_policy

    return load_policy(arg)
