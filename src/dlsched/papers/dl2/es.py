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
  and ``θ`` takes an Adam step along ``−Σ_i (rank⁺_i − rank⁻_i) ε_i``.

Episodes run through `dlsched.simulate` with the deployed scheduler (`make_scheduler_for`),
so training optimises the same decisions users get; the policy only observes the scheduler's
view and no true speed is read. `EsConfig` holds every hyper-parameter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from dlsched.papers.dl2.env import TRAIN_SEED_MIN
from dlsched.papers.dl2.network import Dl2Config, evaluate

log = logging.getLogger(__name__)


@dataclass
class EsConfig:
    """Hyper-parameters of `evolve` (ours)."""

    pairs: int = 6
    """Antithetic pairs of perturbations per iteration (2 × pairs candidates)."""
    traces_per_iter: int = 1
    """Training traces every candidate of an iteration runs."""
    sigma: float = 0.02
    """Standard deviation of the weight perturbations."""
    lr: float = 0.005
    """Adam step size on the weights."""
    weight_decay: float = 0.0
    """L2 pull of the weights towards zero (as OpenAI's ES)."""
    workload: str = "dl2"
    """Workload the training traces come from."""
    workload_options: dict[str, Any] = field(default_factory=dict)
    """Generator options of the training traces."""
    vary: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    """Generator options drawn per iteration from the listed values (one setting per iteration,
    shared by its candidates)."""


def centred_ranks(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Ranks of ``x`` scaled to ``[-0.5, 0.5]`` (ties broken by position; ``inf`` ranks last)."""
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[np.argsort(x, kind="stable")] = np.arange(len(x), dtype=np.float64)
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

    def _fitness(self, theta: torch.Tensor, seeds: list[int], options: dict[str, Any]) -> float:
        """Average JCT (s) of the greedy policy with weights ``theta`` over the traces (inf if
        it stalls one)."""
        nn.utils.vector_to_parameters(theta, self.policy.parameters())
        return evaluate(self.policy, self.dl2, seeds, self.cfg.workload, **options)

    def _traces(self) -> tuple[list[int], dict[str, Any]]:
        """This iteration's training trace seeds and their (shared) generator options."""
        cfg = self.cfg
        options = dict(cfg.workload_options)
        for key, values in cfg.vary.items():
            options[key] = values[int(self.rng.integers(len(values)))]
        seeds = self.rng.integers(TRAIN_SEED_MIN, 2**31 - 1, cfg.traces_per_iter)
        return [int(s) for s in seeds], options

    def iterate(self) -> dict[str, float]:
        """One iteration; returns the centre's training JCT, the best candidate's and the
        gradient's norm."""
        cfg = self.cfg
        seeds, options = self._traces()
        theta = self.theta.detach()
        with torch.no_grad():
            centre = self._fitness(theta, seeds, options)
            noise = torch.from_numpy(
                self.rng.standard_normal((cfg.pairs, theta.numel()), dtype=np.float32)
            )
            plus = [self._fitness(theta + cfg.sigma * e, seeds, options) for e in noise]
            minus = [self._fitness(theta - cfg.sigma * e, seeds, options) for e in noise]
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
        }


def evolve(
    learner: Es,
    iterations: int,
    *,
    on_iteration: Callable[[int, dict[str, float]], None] | None = None,
) -> None:
    """``iterations`` ES iterations."""
    for _ in range(iterations):
        stats = learner.iterate()
        log.debug("es iteration %d: %s", learner.iterations, stats)
        if on_iteration is not None:
            on_iteration(learner.iterations, stats)
