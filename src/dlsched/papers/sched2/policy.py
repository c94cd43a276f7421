"""SCED² policies as schedulers: load, save and evaluate checkpoints of both kinds.

A checkpoint is a directory with ``policy.pt`` and ``card.json`` (`dlsched.rl.checkpoint`) whose
card says ``algorithm: "sched2"`` and, in ``hyperparams["policy"]``, which kind it holds:

* ``"qnet"`` (or absent): SCED²'s Q-network over a window of J jobs (`load_policy`,
  `make_scheduler_from`); ``policies/sched2_dqn`` is the issue-6 DQfD network (15 × 8 GPUs,
  J = 10, k = 4).
* ``"lookahead"``: SCED²-L, the rule over the whole queue of `dlsched.papers.sched2.lookahead`,
  its parameters found by the cross-entropy method (`load_lookahead`, `save_lookahead`);
  ``policies/sched2`` — the shipped policy behind ``--scheduler sched2`` — is one.

`load_scheduler` builds a scheduler from either kind.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.papers.sched2.algorithm import DQNConfig, Sched2QNet, make_net
from dlsched.papers.sched2.lookahead import LookaheadParams, LookaheadScheduler
from dlsched.papers.sched2.profiling import Profiler
from dlsched.papers.sched2.state import WINDOW_ORDERS, Sched2Encoder, Sched2Shape
from dlsched.rl.checkpoint import (
    PolicyCard,
    check_card,
    load_checkpoint,
    read_card,
    save_checkpoint,
)
from dlsched.rl.policy_scheduler import PolicyScheduler
from dlsched.schedulers.base import Scheduler
from dlsched.workloads.base import Workload

POLICY_DIR = Path(__file__).resolve().parent / "policies" / "sched2"
"""The shipped policy (``policy.pt`` + ``card.json``): SCED²-L."""
DQN_POLICY_DIR = Path(__file__).resolve().parent / "policies" / "sched2_dqn"
"""The issue-6 Q-network (DQfD from DSIF demonstrations), kept for comparison."""
PAPER_POLICY_DIR = Path(__file__).resolve().parent / "policies" / "sched2_paper"
"""SCED²'s own method: the Q-network of ``dlsched train sched2 --paper`` (its card says how)."""
PAPER_ARG = "paper"
"""``sched2:paper`` names `PAPER_POLICY_DIR`."""
MASKED_POLICY_DIR = Path(__file__).resolve().parent / "policies" / "sched2_paper_masked"
"""The paper's DQN with one more deviation, φ masked beside a job that fits at its best
locality (``train sched2 --paper --hold-mask local``; its card says how)."""
MASKED_ARG = "paper-masked"
"""``sched2:paper-masked`` names `MASKED_POLICY_DIR`."""
SHIPPED_ARGS = {PAPER_ARG: PAPER_POLICY_DIR, MASKED_ARG: MASKED_POLICY_DIR}
LOOKAHEAD = "lookahead"
PARAMS_KEY = "params"


def shape_from_card(card: PolicyCard) -> Sched2Shape:
    """The `Sched2Shape` a card describes; ValueError if a field is missing."""
    try:
        s = card.shapes
        order = WINDOW_ORDERS[s.get("order", 0)]
        return Sched2Shape(s["N"], s["M"], s["J"], s["k"], order)
    except KeyError as exc:
        raise ValueError(f"sched2 checkpoint card lacks shape field {exc.args[0]!r}") from None


def make_scheduler_from(
    net: Sched2QNet,
    shape: Sched2Shape,
    *,
    profile_seed: int = 0,
    where: str = "sched2",
    hold_mask: str = "none",
) -> PolicyScheduler:
    """A greedy `PolicyScheduler` over ``net`` for clusters of ``shape`` (``hold_mask``:
    `Sched2Encoder`'s)."""
    profiler = Profiler(shape.gpus_per_server, k=shape.k, seed=profile_seed)
    encoder = Sched2Encoder(shape, profiler, where, hold_mask)
    return PolicyScheduler("sched2", encoder, net, preemptive=False)


def load_policy(path: str | Path | None = None) -> tuple[Sched2QNet, Sched2Shape, PolicyCard]:
    """Load a sched2 checkpoint (default: the shipped one) without unpickling objects."""
    where = Path(path) if path is not None else DQN_POLICY_DIR
    card = read_card(where)
    check_card(card, algorithm="sched2", where=f"checkpoint {where}")  # before its shape fields
    if card.hyperparams.get("policy") == LOOKAHEAD:
        raise ValueError(f"checkpoint {where}: holds a SCED²-L rule, not a Q-network")
    shape = shape_from_card(card)
    state, card = load_checkpoint(where, algorithm="sched2", shapes=shape.as_card())
    config = DQNConfig(**{k: v for k, v in card.hyperparams.items() if k in _NET_FIELDS})
    net = make_net(shape, config)
    try:
        net.load_state_dict(state)
    except RuntimeError as exc:
        first = str(exc).splitlines()[0]
        raise ValueError(f"checkpoint {where}: weights do not fit the network ({first})") from None
    return net, shape, card


_NET_FIELDS = ("server_hidden", "server_out", "job_hidden", "hidden", "dueling")


def dqn_files(
    net: Sched2QNet,
    config: DQNConfig,
    *,
    workload: str,
    workload_params: dict[str, Any],
    seeds: dict[str, list[int]],
    steps: int,
    validation: dict[str, float],
    notes: str = "",
) -> tuple[dict[str, Any], PolicyCard]:
    """``net``'s checkpoint: its tensors and card (`dlsched.rl.checkpoint`)."""
    hyper = {k: v for k, v in vars(config).items() if k != "extra"}
    card = PolicyCard(
        algorithm="sched2",
        workload=workload,
        workload_params=workload_params,
        shapes=net.shape.as_card(),
        seeds=seeds,
        steps={"env_steps": steps},
        validation=validation,
        hyperparams=hyper,
        notes=notes,
    )
    return net.state_dict(), card


def save_policy(directory: str | Path, net: Sched2QNet, config: DQNConfig, **card: Any) -> Path:
    """Write ``net`` with a JSON card (`dqn_files`'s keyword arguments)."""
    return save_checkpoint(directory, *dqn_files(net, config, **card))


class _Stopped(Exception):
    """Raised from a simulation's job-finished callback to cut it (`evaluate`'s ``stop``)."""


def evaluate(
    net: Sched2QNet,
    workloads: Sequence[Workload],
    *,
    profile_seed: int = 0,
    stop: Callable[[], bool] | None = None,
) -> dict[str, float]:
    """Greedy policy on each workload through `dlsched.simulate`; mean of the summaries. With
    ``stop`` (asked before each workload and after each job finishes), only the workloads
    finished before it said True count, and ``workloads_validated`` says how many (every
    mean NaN if none)."""
    from dlsched.runner import simulate

    def check(finished: int, total: int) -> None:
        if stop is not None and stop():
            raise _Stopped

    scheduler = make_scheduler_from(net, net.shape, profile_seed=profile_seed)
    was_training = net.training
    summaries = []
    for workload in workloads:
        try:
            if stop is not None and stop():
                raise _Stopped
            hook = None if stop is None else check
            summaries.append(simulate(workload, scheduler, on_job_finished=hook).summary())
        except _Stopped:
            break
    net.train(was_training)
    keys = ("avg_effectiveness", "avg_jct_s", "makespan_s", "avg_fragmentation", "avg_wait_s")
    means = {k: float(np.mean([s[k] for s in summaries])) if summaries else math.nan for k in keys}
    if len(summaries) < len(workloads):
        means["workloads_validated"] = len(summaries)
    return means


def lookahead_files(
    params: LookaheadParams,
    *,
    gpus_per_server: int,
    workload: str,
    workload_params: dict[str, Any],
    seeds: dict[str, list[int]],
    steps: int,
    validation: dict[str, float],
    hyperparams: dict[str, Any],
    notes: str = "",
) -> tuple[dict[str, Any], PolicyCard]:
    """A SCED²-L checkpoint: the parameter vector as a tensor, the card alongside.

    ``trained_setting`` is the workload and ``workload_params`` it was trained at.
    """
    import torch

    card = PolicyCard(
        algorithm="sched2",
        workload=workload,
        workload_params=workload_params,
        shapes={"M": gpus_per_server},
        seeds=seeds,
        steps={"simulations": steps},
        validation=validation,
        hyperparams={"policy": LOOKAHEAD, PARAMS_KEY: params.as_dict(), **hyperparams},
        notes=notes,
        trained_setting={"workload": workload, "params": dict(workload_params)},
    )
    state = {PARAMS_KEY: torch.tensor(params.vector(), dtype=torch.float64)}
    return state, card


def save_lookahead(directory: str | Path, params: LookaheadParams, **card: Any) -> Path:
    """Write a SCED²-L checkpoint (`lookahead_files`'s keyword arguments)."""
    return save_checkpoint(directory, *lookahead_files(params, **card))


def load_lookahead(path: str | Path | None = None) -> tuple[LookaheadParams, int, PolicyCard]:
    """Load a SCED²-L checkpoint (default: the shipped one): (parameters, M, card)."""
    where = Path(path) if path is not None else POLICY_DIR
    card = read_card(where)
    check_card(card, algorithm="sched2", where=f"checkpoint {where}")
    if card.hyperparams.get("policy") != LOOKAHEAD:
        raise ValueError(f"checkpoint {where}: holds a Q-network, not a SCED²-L rule")
    m = card.shapes.get("M")
    if m is None:
        raise ValueError(f"checkpoint {where}: card has no shape field 'M'")
    state, card = load_checkpoint(where, algorithm="sched2", shapes={"M": m})
    vector = state.get(PARAMS_KEY)
    if vector is None or vector.numel() != len(LookaheadParams.NAMES):
        raise ValueError(
            f"checkpoint {where}: needs a {PARAMS_KEY!r} tensor of "
            f"{len(LookaheadParams.NAMES)} values"
        )
    return LookaheadParams.from_vector(vector.tolist()), int(m), card


def load_scheduler(path: str | Path | None = None) -> tuple[Scheduler, PolicyCard]:
    """A scheduler from a checkpoint of either kind (default: the shipped SCED²-L policy;
    ``"paper"`` / ``"paper-masked"``: a shipped paper-method DQN, `SHIPPED_ARGS`)."""
    if isinstance(path, str) and path in SHIPPED_ARGS:
        path = SHIPPED_ARGS[path]
    where = Path(path) if path is not None else POLICY_DIR
    card = read_card(where)
    check_card(card, algorithm="sched2", where=f"checkpoint {where}")
    seed = int(card.hyperparams.get("profile_seed", 0))
    source = f"checkpoint {path}" if path is not None else "shipped policy"
    if card.hyperparams.get("policy") == LOOKAHEAD:
        params, m, card = load_lookahead(where)
        scheduler = LookaheadScheduler(params, m, profile_seed=seed)
        scheduler.trained_setting = card.trained_setting or None  # warns outside it
        return scheduler, card
    net, shape, card = load_policy(where)
    label = f"sched2 ({source}, trained on {card.workload})"
    hold_mask = str(card.hyperparams.get("hold_mask", "none"))
    dqn = make_scheduler_from(net, shape, profile_seed=seed, where=label, hold_mask=hold_mask)
    dqn.trained_setting = card.trained_setting or None
    return dqn, card
