"""Federated DL2 training (DL2 §6.3, Fig. 18): several clusters train one global policy, A3C-style.

Each simulated cluster runs in its own process (``multiprocessing`` *spawn* context) with its
own environment, trace seeds, experience replay and exploration — a DL2 scheduler on its own
cluster. The parent holds the **global** `Learner` (policy, value network, Adam optimisers).
One round trip, asynchronous per cluster (A3C, Mnih et al. 2016):

1. the parent sends a cluster the global weights (NumPy arrays, so nothing but plain data
   crosses the process boundary);
2. the cluster loads them, simulates ``slots_per_update`` slots with them, draws a mini-batch
   from its replay buffer and computes the actor-critic gradients (`Learner.backward`);
3. the parent applies those gradients to the global networks as they arrive, in whatever
   order the clusters finish (`Learner.step`: clip, Adam), and sends that cluster the new
   weights — while the other clusters are still working with older ones.

`FederatedPool.train` runs exactly ``steps`` global updates and counts each cluster's
contributions (``pool.contributions``); the pool keeps its processes (and their replay
buffers) between calls, so `dlsched.papers.dl2.train` validates between chunks.
``dlsched train dl2 --clusters N`` uses it for the RL phase (N = 1 is the single-process path).
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import queue
import traceback
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from dlsched.papers.dl2.algorithm import Learner, Rollout, next_batch
from dlsched.papers.dl2.env import Dl2Env
from dlsched.papers.dl2.network import Dl2Config
from dlsched.workloads.base import Workload

log = logging.getLogger(__name__)

Arrays = list[npt.NDArray[np.float32]]

POLL_S = 1.0
"""Seconds between liveness checks of the cluster processes while waiting for gradients."""


def _weights(module: nn.Module) -> Arrays:
    return [p.detach().numpy().copy() for p in module.parameters()]


def _grads(module: nn.Module) -> Arrays:
    return [
        (p.grad.detach().numpy().copy() if p.grad is not None else np.zeros(p.shape, np.float32))
        for p in module.parameters()
    ]


def _load(module: nn.Module, arrays: Arrays) -> None:
    with torch.no_grad():
        for p, a in zip(module.parameters(), arrays, strict=True):
            p.copy_(torch.from_numpy(a))


def cluster_seed(base: int, rank: int) -> int:
    """Seed of cluster ``rank``'s environment, exploration and mini-batches."""
    return base + 7919 * (rank + 1)


def _cluster(
    rank: int,
    cfg: Dl2Config,
    workload: str,
    options: dict[str, Any],
    transform: Callable[[Workload], Workload] | None,
    seed: int,
    inbox: Any,
    outbox: Any,
) -> None:
    """Worker process: one simulated cluster computing gradients for the global learner."""
    try:
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        learner = Learner.create(cfg)
        env = Dl2Env(workload, shape=cfg.shape(), transform=transform, **options)
        env.reset(seed=seed)
        rollout = Rollout(env, learner, seed=seed)
        rng = np.random.default_rng(seed)
        while True:
            msg = inbox.get()
            if msg is None:
                break
            policy_w, value_w = msg
            _load(learner.policy, policy_w)
            _load(learner.value, value_w)
            stats = learner.backward(next_batch(cfg, rollout, rng))
            stats["episode_return"] = rollout.last_return
            outbox.put(("grads", rank, _grads(learner.policy), _grads(learner.value), stats))
    except Exception:  # report, so the parent fails loudly instead of waiting forever
        outbox.put(("error", rank, traceback.format_exc(), None, None))


class FederatedPool:
    """``clusters`` worker processes feeding gradients to one global `Learner`.

    Use as a context manager (or call `close`)::

        with FederatedPool(cfg, 4, "dl2", {"servers": 13}) as pool:
            pool.train(learner, 500)

    Args:
        cfg: DL2 hyper-parameters (the same for every cluster; the global learner's).
        clusters: worker processes (≥ 1).
        workload: elastic workload name each cluster simulates.
        options: workload generator options (``servers``, ``load``, ``num_jobs``).
        transform: trace transform (OfflineRL's fitted speeds); must be picklable.
        seed: base seed; cluster ``k`` uses `cluster_seed` (seed, k).
    """

    def __init__(
        self,
        cfg: Dl2Config,
        clusters: int,
        workload: str = "dl2",
        options: dict[str, Any] | None = None,
        *,
        transform: Callable[[Workload], Workload] | None = None,
        seed: int = 0,
    ) -> None:
        if clusters < 1:
            raise ValueError(f"clusters must be >= 1, got {clusters}")
        ctx = mp.get_context("spawn")
        self.outbox: Any = ctx.Queue()
        self.inboxes: list[Any] = [ctx.Queue() for _ in range(clusters)]
        self.contributions = [0] * clusters
        self.procs: list[BaseProcess] = []
        for rank in range(clusters):
            proc = ctx.Process(
                target=_cluster,
                args=(
                    rank,
                    cfg,
                    workload,
                    dict(options or {}),
                    transform,
                    cluster_seed(seed, rank),
                    self.inboxes[rank],
                    self.outbox,
                ),
                daemon=True,
                name=f"dl2-cluster-{rank}",
            )
            proc.start()
            self.procs.append(proc)
        log.info("federated DL2: %d cluster processes started", clusters)

    def __enter__(self) -> FederatedPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, rank: int, learner: Learner) -> None:
        self.inboxes[rank].put((_weights(learner.policy), _weights(learner.value)))

    def _receive(self) -> tuple[int, Arrays, Arrays, dict[str, float]]:
        while True:
            try:
                kind, rank, a, b, stats = self.outbox.get(timeout=POLL_S)
            except queue.Empty:
                dead = [p.name for p in self.procs if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"federated DL2: {', '.join(dead)} exited") from None
                continue
            if kind == "error":
                raise RuntimeError(f"federated DL2: cluster {rank} failed:\n{a}")
            return rank, a, b, stats

    def train(
        self,
        learner: Learner,
        steps: int,
        *,
        on_step: Callable[[int, dict[str, float]], None] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> None:
        """Apply exactly ``steps`` asynchronous gradients from the clusters to ``learner``
        (fewer once ``stop`` says True: no more rollouts are sent out, and the gradients of
        those out are applied).

        Args:
            on_step: called as ``on_step(learner.updates, stats)`` after every global update;
                ``stats`` are the contributing cluster's, plus ``"cluster"`` (its rank).
        """
        dispatched = 0
        for rank in range(len(self.procs)):
            if dispatched < steps and not (stop is not None and stop()):
                self._send(rank, learner)
                dispatched += 1
        applied = 0
        while applied < dispatched:
            rank, policy_g, value_g, stats = self._receive()
            for p, g in zip(learner.policy.parameters(), policy_g, strict=True):
                p.grad = torch.from_numpy(g)
            for p, g in zip(learner.value.parameters(), value_g, strict=True):
                p.grad = torch.from_numpy(g)
            learner.step()
            applied += 1
            self.contributions[rank] += 1
            if dispatched < steps and not (stop is not None and stop()):
                self._send(rank, learner)
                dispatched += 1
            if on_step is not None:
                on_step(learner.updates, {**stats, "cluster": float(rank)})

    def close(self) -> None:
        """Stop the cluster processes (idempotent)."""
        for inbox, proc in zip(self.inboxes, self.procs, strict=True):
            if proc.is_alive():
                inbox.put(None)
        for proc in self.procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
                proc.join()
        self.procs = []
        self.inboxes = []
