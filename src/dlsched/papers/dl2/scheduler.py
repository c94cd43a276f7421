"""The ``dl2`` scheduler: DL2's trained policy network behind the `Scheduler` protocol.

``dl2`` loads the policy shipped in the package (``dlsched/papers/dl2/policies/dl2/``, trained on
the ``dl2`` workload; its ``card.json`` says how); ``dl2:PATH`` loads another checkpoint directory
made by ``dlsched train dl2``; ``dl2:paper`` loads ``policies/dl2_paper/``, the policy trained by
DL2's own method (``train dl2 --paper``; a folder named ``paper`` is ``dl2:./paper``).
``offline-rl`` (DL2 §6.1's OfflineRL baseline) is the same network trained only in a simulator of
fitted Optimus speeds (``dlsched train dl2 --speed-model optimus``), shipped in
``dlsched/papers/dl2/policies/offline_rl/``; ``offline-rl:PATH`` loads another. The checkpoint
must have been made for the same state shape (J job rows, L job types) or loading fails with a
one-line ValueError. torch is imported only when the scheduler is built, so listing schedulers
stays fast.
"""

from __future__ import annotations

from pathlib import Path

from dlsched.papers.dl2.elastic import no_elastic_job
from dlsched.schedulers.arguments import checkpoint_path
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import register

SHIPPED = Path(__file__).resolve().parent / "policies" / "dl2"
"""Directory of the policy shipped with the package."""
SHIPPED_OFFLINE_RL = SHIPPED.parent / "offline_rl"
"""Directory of the shipped OfflineRL policy (trained on fitted Optimus speeds only)."""
SHIPPED_PAPER = SHIPPED.parent / "dl2_paper"
"""Directory of ``dl2:paper``: the policy trained by DL2's own method (``train dl2 --paper``)."""
PAPER_ARG = "paper"
PAPER_METHOD = "dl2:paper"
"""The spec of the policy trained by the paper's own method (``reproduce dl2`` prints the
paper's −44.1 % only beside it)."""


def policy_dir(spec: str) -> Path:
    """The checkpoint folder a ``dl2`` / ``dl2:paper`` / ``dl2:PATH`` / ``offline-rl[:PATH]``
    spec names."""
    name, _, arg = spec.partition(":")
    default = SHIPPED_OFFLINE_RL if name == "offline-rl" else SHIPPED
    if not arg:
        return default
    return SHIPPED_PAPER if name == "dl2" and arg == PAPER_ARG else Path(arg)


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


def how_trained(name: str) -> str:
    """How the policy behind a Fig. 9 row was made, from its card ('' for a rule)."""
    from dlsched.rl.checkpoint import read_card

    if name.split(":")[0] not in ("dl2", "offline-rl"):
        return ""
    card = read_card(policy_dir(name))
    if card.hyperparams.get("method") == "paper":
        kept, tried = card.steps.get("rl", 0), card.steps.get("rl_tried", 0)
        return (
            f"paper's method: SL from DRF, then actor-critic ({kept:,} of {tried:,} RL updates "
            "kept by validation)"
        )
    if name.startswith("offline-rl"):
        return "OfflineRL baseline: RL on fitted Optimus speeds only"
    notes = card.notes
    teacher = notes.split("teacher=", 1)[-1].split(";", 1)[0] if "teacher=" in notes else "?"
    rl = "evolution strategies" if "evolution strategies" in notes else "actor-critic"
    return f"ours, not the paper's method: imitation of {teacher}, then {rl}"


def _paper_or_path(name: str, arg: str) -> None:
    """``dl2:paper`` (the shipped paper-method policy) or ``dl2:PATH`` (an existing folder)."""
    checkpoint_path(name, str(policy_dir(f"{name}:{arg}")))


@register(
    "dl2",
    setting="elastic PS (dl2)",
    source="DL2 (Peng et al. 2019), trained here",
    description="policy network (shipped: see its card.json); dl2:paper is the one trained by "
    "the paper's own method; dl2:PATH loads another",
    argument=("paper|PATH", _paper_or_path),
    refuses=lambda _arg, jobs, servers: no_elastic_job(jobs, servers),
)
def _make(arg: str | None) -> Scheduler:
    return load_dl2(policy_dir(f"dl2:{arg}") if arg else None)


@register(
    "offline-rl",
    setting="elastic PS (dl2)",
    source="DL2 §6.1's OfflineRL baseline, trained here",
    description="DL2's RL trained only on fitted Optimus speeds; offline-rl:PATH loads another",
    argument=("PATH", checkpoint_path),
    refuses=lambda _arg, jobs, servers: no_elastic_job(jobs, servers),
)
def _make_offline_rl(arg: str | None) -> Scheduler:
    return load_dl2(arg, default=SHIPPED_OFFLINE_RL, name="offline-rl")
