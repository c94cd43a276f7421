"""SCED²'s trained Q-network as a scheduler: load, save and evaluate policies.

The registered ``sched2`` scheduler (`dlsched.papers.sched2.scheduler`) loads the policy shipped in
``dlsched/papers/sched2/policies/sched2`` (trained on the ``sched2`` workload: 15 servers × 8 GPUs,
J = 10, k = 4) or another checkpoint (a directory with ``policy.pt`` and ``card.json``,
`dlsched.rl.checkpoint`) through `load_policy` and `make_scheduler_from`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.papers.sched2.algorithm import DQNConfig, Sched2QNet, make_net
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
from dlsched.workloads.base import Workload

POLICY_DIR = Path(__file__).resolve().parent / "policies" / "sched2"
"""The shipped policy (``policy.pt`` + ``card.json``)."""


def shape_from_card(card: PolicyCard) -> Sched2Shape:
    """The `Sched2Shape` a card describes; ValueError if a field is missing."""
    try:
        s = card.shapes
        order = WINDOW_ORDERS[s.get("order", 0)]
        return Sched2Shape(s["N"], s["M"], s["J"], s["k"], order)
    except KeyError as exc:
        raise ValueError(f"sched2 checkpoint card lacks shape field {exc.args[0]!r}") from None


def make_scheduler_from(
    net: Sched2QNet, shape: Sched2Shape, *, profile_seed: int = 0, where: str = "sched2"
) -> PolicyScheduler:
    """A greedy `PolicyScheduler` over ``net`` for clusters of ``shape``."""
    encoder = Sched2Encoder(shape, Profiler(shape.gpus_per_server, k=shape.k, seed=profile_seed))
    encoder.where = where
    return PolicyScheduler("sched2", encoder, net, preemptive=False)


def load_policy(path: str | Path | None = None) -> tuple[Sched2QNet, Sched2Shape, PolicyCard]:
    """Load a sched2 checkpoint (default: the shipped one) without unpickling objects."""
    where = Path(path) if path is not None else POLICY_DIR
    card = read_card(where)
    check_card(card, algorithm="sched2", where=f"checkpoint {where}")  # before its shape fields
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


_NET_FIELDS = ("server_hidden", "server_out", "job_hidden", "hidden")


def save_policy(
    directory: str | Path,
    net: Sched2QNet,
    config: DQNConfig,
    *,
    workload: str,
    workload_params: dict[str, Any],
    seeds: dict[str, list[int]],
    steps: int,
    validation: dict[str, float],
    notes: str = "",
) -> Path:
    """Write ``net`` with a JSON card (`dlsched.rl.checkpoint`)."""
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
    return save_checkpoint(directory, net.state_dict(), card)


def evaluate(
    net: Sched2QNet, workloads: Sequence[Workload], *, profile_seed: int = 0
) -> dict[str, float]:
    """Greedy policy on each workload through `dlsched.simulate`; mean of the summaries."""
    from dlsched.api import simulate

    scheduler = make_scheduler_from(net, net.shape, profile_seed=profile_seed)
    was_training = net.training
    summaries = [simulate(w, scheduler).summary() for w in workloads]
    net.train(was_training)
    keys = ("avg_effectiveness", "avg_jct_s", "makespan_s", "avg_fragmentation", "avg_wait_s")
    return {k: float(np.mean([s[k] for s in summaries])) for k in keys}
