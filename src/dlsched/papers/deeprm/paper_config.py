"""The hyper-parameters, log row, deviations and card notes of ``dlsched train deeprm --paper``
(`dlsched.papers.deeprm.paper` runs it; split from it to keep each file small)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from dlsched.papers.deeprm.algorithm import IterationStats, ReinforceConfig

Baseline = Literal["step", "decision"]

PAPER_LOADS = (1.1, 1.3, 1.5, 1.7, 1.9)
"""Training loads of the shipped paper-method policy (issue 29's evaluation loads)."""

_SHARED_LOADS = (
    "one network for loads 1.1–1.9 (20 of the 100 jobsets at each load)",
    "one 60-minute budget for all five evaluation loads on a 2-core machine",
)

PAPER_DEVIATIONS: tuple[tuple[str, str], ...] = (
    (
        "capacity drawn as 20 cells a resource (paper's code: 10), so the image is 20 × 443",
        "§4.1's demands (0.05r–0.1r for the other resource) need cells of 0.05r",
    ),
    (
        "no 'time since the last new job' column in the image (authors' code has one)",
        "the paper's §3.2 state has none",
    ),
    _SHARED_LOADS,
    (
        "baseline per time step (the paper's text); the code's is per decision index",
        "per decision index lines up different times (benchmarks/RESULTS.md)",
    ),
    (
        "the policy is kept by validation on held-out jobsets every few iterations",
        "the paper reports the last iteration; the log keeps every row",
    ),
    (
        "episodes truncated after max_steps time steps (paper: run until every job finished)",
        "bounds a lock-step batch; the log's 'truncated' column counts them (up to 15 % of an "
        "iteration's episodes early in training, at the high loads)",
    ),
)
"""(what differs from DeepRM HotNets 2016, why) for ``train deeprm --paper``."""


@dataclass
class PaperConfig(ReinforceConfig):
    """`ReinforceConfig` with the paper's values and what the paper trainer adds."""

    loads: tuple[float, ...] = PAPER_LOADS
    mask_invalid: bool = False
    """The paper's: every action is offered; an invalid one lets time move on (§3.2)."""
    workers: int = 1
    """Processes rolling out an iteration's jobsets on the CPU (``--device cpu``; the CLI's
    ``--workers``, default 2), one torch thread each; one on CUDA. Each part of the jobsets
    samples from its own generator, seeded by seed, iteration and part: the same ``chunk``
    gives the same run whatever ``workers``."""
    init_from: str = ""
    """A policy folder (``policy.pt`` + ``card.json``) whose network the run starts from,
    counting its iterations on (continues a run whose optimiser state was not kept; RMSProp's
    accumulator then starts at the first gradient squared, not at zero)."""
    baseline: Baseline = "step"
    """``"step"``: mean return at the same time step (the paper's text); ``"decision"``: at
    the same decision index (the authors' code)."""
    device: str = "cpu"
    """``"auto"``, ``"cpu"`` (NumPy environment) or ``"cuda"`` (environment and network on
    the GPU)."""
    backend: Literal["auto", "numpy", "torch"] = "auto"
    """Environment arrays: ``"auto"`` (NumPy on the CPU, torch elsewhere), or force one
    (``"torch"`` on the CPU runs the GPU code path there: tests, rehearsals)."""
    fresh_jobsets: bool = False
    """New training jobsets every iteration (`ReinforceConfig.training_jobsets` with the
    iteration), not the paper's same ``jobsets`` every iteration."""
    chunk: int = 0
    """Jobsets per lock-step batch, a *part* (0: the jobsets split evenly over ``workers``, in
    `BUDGET_ROUNDS` rounds under a wall-time budget, so that it can stop between them; smaller
    bounds memory). Parts are the unit of the random streams: the same ``chunk`` gives the same
    run whatever ``workers``."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Free-form notes recorded on the card (machine, command)."""


@dataclass
class PaperStats(IterationStats):
    """A row of ``train_log.csv`` of a paper run: `IterationStats` and diagnostics."""

    entropy: float = float("nan")
    """Mean entropy of the policy (nats) over the iteration's decisions."""
    grad_norm: float = float("nan")
    """L2 norm of the iteration's policy gradient (before RMSProp)."""
    update_norm: float = float("nan")
    """L2 norm of the parameter change of the RMSProp step."""
    adv_std: float = float("nan")
    """Standard deviation of the advantages ``v − b`` over decisions."""
    return_std: float = float("nan")
    """Standard deviation of the returns ``v`` over decisions (the scale without baseline)."""
    void_share: float = float("nan")
    """Share of decisions that chose ∅ or an invalid slot (time moves on)."""
    withheld_share: float = float("nan")
    """Share of time steps ended by ∅ while some slot job fitted now (not work-conserving)."""
    cpu_s: float = float("nan")
    """CPU seconds of the iteration's rollouts and gradients, every process together."""


def card_notes(config: PaperConfig) -> str:
    """The card's ``notes`` of a paper run: the method, its budget, every deviation."""
    trained_loads = config.loads or (config.load,)
    loads = ", ".join(f"{x:g}" for x in trained_loads)
    # one network per load is the paper's: the shared-network deviation is a multi-load run's
    listed = [d for d in PAPER_DEVIATIONS if len(trained_loads) > 1 or d is not _SHARED_LOADS]
    deviations = "; ".join(f"({i}) {what}: {why}" for i, (what, why) in enumerate(listed, 1))
    extra = "".join(f" {k}: {v}." for k, v in config.extra.items())
    fresh = " fresh" if config.fresh_jobsets else ""
    if config.fresh_jobsets:
        deviations += (
            f"; ({len(listed) + 1}) new training jobsets every iteration (--fresh-jobsets; the "
            f"paper trains on the same {config.jobsets}): a test against over-fitting them"
        )
    if config.init_from:
        extra += (
            f" Started from the network of {config.init_from} (--init-from; its iterations "
            f"counted on, a fresh RMSProp accumulator set to the first gradient squared)."
        )
    return (
        f"DeepRM's own method (train deeprm --paper): REINFORCE from "
        f"{'a network trained before (below)' if config.init_from else 'a random network'}, no "
        f"imitation; objective {config.objective}; {config.jobsets}{fresh} jobsets at loads "
        f"{loads} x {config.episodes} episodes an iteration; RMSProp lr {config.lr:g}; baseline "
        f"per {'time step' if config.baseline == 'step' else 'decision index'}; invalid actions "
        f"{'masked' if config.mask_invalid else 'offered (the paper)'}; device {config.device}; "
        f"kept: best validation score.{extra} Deviations from the paper: {deviations}."
    )
