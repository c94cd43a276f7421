"""Registers ``example`` (the shipped policy; ``example:PATH`` loads another) without importing
PyTorch until it is built."""

from __future__ import annotations

from dlsched.schedulers.arguments import checkpoint_path
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import register


@register(
    "example",
    setting="fixed-duration (deeprm)",
    source="the example paper (dlsched.papers.example), trained here",
    description="learned order by duration, demand and wait (the paper template); example:PATH",
    argument=("PATH", checkpoint_path),
)
def _make(arg: str | None) -> Scheduler:
    from dlsched.papers.example.policy import load_policy

    return load_policy(arg)
