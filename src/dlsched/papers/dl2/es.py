"""Evolution strategies for DL2's policy: RL on the exact metric, from the supervised start.

The policy is judged by the average JCT of its greedy decisions. Policy-gradient methods
(`dlsched.papers.dl2.algorithm.actor_critic`; a PPO variant was tried too, see
benchmarks/RESULTS.md) reach it only through a per-slot reward, a critic and credit assignment
over the ~30 incremental actions of each slot.
Evolution strategies (Salimans et al., 2017, "Evolution Strategies as a Scalable Alternative to
Reinforcement Learning") optimise the episode's return directly — here minus the average JCT of
a whole training trace under the deployed greedy policy — from perturbations of the weights:

* each iteration draws training traces (seeds ≥ `dlsched.papers.dl2.env.TRAIN_SEED_MIN`, never
  validation seeds) and ``pairs`` Gaussian directions ``ε_i``;
* ``θ + σ ε_i`` and ``θ − σ ε_i`` run the *same* traces (antithetic sampling and common random
  numbers: the difference between the two measures the direction, not the trace's luck);
* the fitness of a candidate is its average JCT over the iteration's traces
  (`dlsched.papers.dl2.network.evaluate`, the same function validation uses); fitnesses are
  turned into centred ranks (robust to outliers and to a candidate that stalls the simulation)
  and ``θ`` takes an Adam step along ``−Σ_i (rank⁺_i − rank⁻_i) ε_i``;
* with ``probes > 0`` each candidate first runs that many small-cluster training traces
  (`dlsched.papers.dl2.probes`, 2–3 servers, shared by the iteration's candidates): one that
  stalls any of them scores ``inf``, so ES moves away from policies that leave jobs idle for
  good on clusters unlike the main traces'.

Episodes run through `dlsched.simulate` with the deployed scheduler (`make_scheduler_for`),
so training optimises the same decisions users get; the policy only observes the scheduler's
view and no true speed is read. `EsConfig` holds every hyper-parameter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from dlsched.papers.dl2.config import EsConfig as EsConfig  # re-exported
from dlsched.papers.dl2.env import TRAIN_SEED_MIN
from dlsched.papers.dl2.network import Dl2Config, evaluate
from dlsched.papers.dl2.probes import Probe, count_stalls, training_probes

log = logging.getLogger(__name__)


def centred_ranks(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Ranks of ``x`` scaled to ``[-0.5, 0.5]`` (finite ties broken by position; every ``inf``
    shares the mean of the last ranks, so stalled candidates push no direction among them)."""
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[np.argsort(x, kind="stable")] = np.arange(len(x), dtype=np.float64)
    stalled = np.isinf(x)
    if stalled.any():
        ranks[stalled] = ranks[stalled].mean()
    return ranks / max(len(x) - 1, 1) - 0.5


class Es:
    """ES learner over all weights of ``policy`` (changed in place).

    Args:
        policy: the network to improve (its supervised start).
        dl2: DL2's configuration (state shape, for the scheduler).
        cfg: ES hyper-parameters.
        seed: seeds the perturbations and the training traces.
    """

    def __init__(self, policy: nn.Module, dl2: Dl2Config, cfg: EsConfig, seed: int) -> None:
        self.policy = policy
        self.dl2 = dl2
        self.cfg = cfg
        self.rng = np.random.default_rng(seed)
        self.theta = nn.utils.parameters_to_vector(policy.parameters()).detach().clone()
        self.opt = torch.optim.Adam([self.theta.requires_grad_(True)], lr=cfg.lr)
        self.iterations = 0

    def _fitness(
        self,
        theta: torch.Tensor,
        seeds: list[int],
        options: dict[str, Any],
        probes: list[Probe],
    ) -> float:
        """Average JCT (s) of the greedy policy with weights ``theta`` over the traces (inf if
        it stalls one of them or of the probes)."""
        nn.utils.vector_to_parameters(theta, self.policy.parameters())
        cfg = self.cfg
        if probes and count_stalls(
            self.policy, self.dl2, probes, cfg.workload, first_only=True, **cfg.workload_options
        ):
            return float("inf")
        return evaluate(self.policy, self.dl2, seeds, cfg.workload, **options)

    def _traces(self) -> tuple[list[int], dict[str, Any], list[Probe]]:
        """This iteration's training trace seeds, their (shared) generator options and its
        stall probes."""
        cfg = self.cfg
        options = dict(cfg.workload_options)
        for key, values in cfg.vary.items():
            options[key] = values[int(self.rng.integers(len(values)))]
        seeds = self.rng.integers(TRAIN_SEED_MIN, 2**31 - 1, cfg.traces_per_iter)
        probes = training_probes(cfg.probes, self.rng) if cfg.probes else []
        return [int(s) for s in seeds], options, probes

    def iterate(self) -> dict[str, float]:
        """One iteration; returns the centre's training JCT, the best candidate's, the
        gradient's norm and how many candidates stalled."""
        cfg = self.cfg
        seeds, options, probes = self._traces()
        theta = self.theta.detach()
        with torch.no_grad():
            centre = self._fitness(theta, seeds, options, probes)
            noise = torch.from_numpy(
                self.rng.standard_normal((cfg.pairs, theta.numel()), dtype=np.float32)
            )
            plus = [self._fitness(theta + cfg.sigma * e, seeds, options, probes) for e in noise]
            minus = [self._fitness(theta - cfg.sigma * e, seeds, options, probes) for e in noise]
            ranks = centred_ranks(np.asarray(plus + minus))
            # lower JCT is better: a candidate's weight is minus its rank
            weights = torch.from_numpy(-(ranks[: cfg.pairs] - ranks[cfg.pairs :])).float()
            grad = (weights @ noise) / (2 * cfg.pairs * cfg.sigma)
            nn.utils.vector_to_parameters(theta, self.policy.parameters())
        self.opt.zero_grad()
        # Adam minimises: hand it minus the ascent direction, plus weight decay
        self.theta.grad = -grad + cfg.weight_decay * theta
        self.opt.step()
        with torch.no_grad():
            nn.utils.vector_to_parameters(self.theta.detach(), self.policy.parameters())
        self.iterations += 1
        finite = [x for x in plus + minus if np.isfinite(x)]
        return {
            "train_avg_jct_s": centre,
            "best_candidate_s": min(finite) if finite else float("inf"),
            "grad_norm": float(grad.norm()),
            "stalled_candidates": float(len(plus + minus) - len(finite)),
        }


def evolve(
    learner: Es,
    iterations: int,
    *,
    on_iteration: Callable[[int, dict[str, float]], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> None:
    """``iterations`` ES iterations (fewer if ``stop``, asked before each, says True)."""
    for _ in range(iterations):
        if stop is not None and stop():
            break
        stats = learner.iterate()
        log.debug("es iteration %d: %s", learner.iterations, stats)
        if on_iteration is not None:
            on_iteration(learner.iterations, stats)
