"""The ``sched2`` scheduler: a shipped SCED² policy behind the `Scheduler` protocol.

``--scheduler sched2`` loads the policy shipped in ``dlsched/papers/sched2/policies/sched2``:
SCED²-L (`dlsched.papers.sched2.lookahead`), a rule over the whole waiting queue — priority,
locality holds and a reservation planned over profiled (estimated) durations — whose parameters
were trained by cross-entropy search on the ``sched2`` workload at load 1.8 (its card says how).
It works on any fixed-GPU workload whose servers have the 8 GPUs it was trained for, at any
number of servers. ``sched2:paper`` loads ``policies/sched2_paper``, SCED²'s own method (plain
DQN, the paper's state, its objective paid as it accrues, no demonstrations; ``dlsched train
sched2 --paper --reward incremental``); ``sched2:paper-masked`` loads
``policies/sched2_paper_masked``, the same method with hold masking (``--hold-mask local``, a
deviation: φ is illegal while a window job fits at its best locality).
``sched2:PATH`` loads another checkpoint (a directory with ``policy.pt`` and
``card.json``, `dlsched.rl.checkpoint`) of either kind, e.g. ``policies/sched2_dqn``, SCED²'s
Q-network (issue 6): at each scheduling point it repeats observe (`dlsched.papers.sched2.state`)
and take the legal action with the highest Q-value, until φ or nothing fits; the picked jobs
start on their packing placements. A Q-network works only on the N servers × M GPUs it was
trained for; otherwise the first decision raises a one-line ValueError naming both shapes (pass
``--servers N``, or train one for that trace with
``dlsched train sched2 -w philly:VC --out DIR``).
Both are non-preemptive.

This module only registers the scheduler; PyTorch is imported when one is built
(`dlsched.papers.sched2.policy`), so listing schedulers stays fast.
"""

from __future__ import annotations

from collections.abc import Sequence

from dlsched.core import JobSpec, Resources
from dlsched.schedulers.arguments import checkpoint_path
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import register


def _paper_or_path(name: str, arg: str) -> None:
    """``sched2:paper`` / ``sched2:paper-masked`` (the shipped paper-method DQNs) or an
    existing checkpoint path."""
    if arg not in ("paper", "paper-masked"):
        checkpoint_path(name, arg)


def _unprofiled(
    arg: str | None, jobs: Sequence[JobSpec], servers: Sequence[Resources]
) -> str | None:
    """The built scheduler's refusal (`Profiler.cannot_profile`), asked before a checkpoint
    loads: every SCED² policy profiles with the default locality model, whatever its cluster."""
    from dlsched.papers.sched2.profiling import Profiler

    return Profiler(gpus_per_server=8).cannot_profile(jobs)


@register(
    "sched2",
    setting="fixed-GPU (sched2, philly, trace)",
    source="SCED² §III",
    description="SCED²-L: learned locality-aware selection over the whole queue with a "
    "reservation over estimated durations; sched2:paper the paper's DQN (train sched2 "
    "--paper); sched2:paper-masked that DQN with hold masking (a deviation); sched2:PATH "
    "loads a checkpoint (DQN or rule)",
    argument=("paper|paper-masked|PATH", _paper_or_path),
    refuses=_unprofiled,
)
def _make(arg: str | None) -> Scheduler:
    from dlsched.papers.sched2.policy import load_scheduler

    scheduler, _ = load_scheduler(arg)
    return scheduler
