"""Hyper-parameters of ``train sched2 --paper`` (`dlsched.papers.sched2.paper`): the
documented dataclass, the ``--reward incremental`` preset and the validation traces."""

from __future__ import annotations

from dataclasses import dataclass

NEW_PRIORITIES = ("max", "td")
"""`PaperConfig.new_priority`'s choices."""

PAPER_VALIDATION_SEEDS = tuple(range(90_001, 90_009))
"""Validation traces (held out from training and from the test seeds 100001-100030)."""


@dataclass
class PaperConfig:
    """Hyper-parameters of ``train sched2 --paper`` (SCED² leaves all numbers but J, k, the
    cluster, the trace length and the episode count open; each is documented here)."""

    seed: int = 0
    """Seeds torch, NumPy and the training trace draws."""
    episodes: int = 2400
    """Training episodes, each a fresh 1,000-job trace (SCED² §IV-A: 2,400)."""
    time_budget_s: float | None = 3600.0
    """Stop after this many wall-clock seconds (None: run every episode)."""
    num_envs: int = 128
    """Episodes stepped at once by the batched environment."""
    load: float = 1.8
    """Arrival-rate multiplier of the ``sched2`` traces."""
    num_jobs: int = 1000
    """Jobs per trace (SCED² §IV-A)."""
    gamma: float = 0.99
    """Discount per action (per ``discount_time_s`` when that is > 0)."""
    discount_time_s: float = 0.0
    """0: γ per action (as DQN); > 0: semi-MDP discounting, γ^(Δt / discount_time_s) with Δt
    the simulated seconds between a decision and the next (decisions of one frozen-time round
    undiscounted; a deviation: SCED² does not say how it discounts, README table)."""
    reward: str = "paper"
    """``paper``: each picked job's execution effectiveness (SCED² §III-D); ``incremental``:
    the same objective paid as it accrues (`BatchedSched2Env.effectiveness_potential`; a
    deviation, README table)."""
    reward_scale: float = 0.01
    """Rewards are multiplied by this in the loss (1 − γ: Q-values of order 1, not 1/(1 − γ));
    a constant factor, so the greedy policy it defines is the same."""
    lr: float = 1e-4
    """Adam learning rate."""
    batch_size: int = 256
    """Transitions per gradient step."""
    updates_per_step: int = 1
    """Gradient steps per batched environment step (``num_envs`` transitions)."""
    buffer_size: int = 400_000
    """Replay capacity, transitions."""
    learning_starts: int = 20_000
    """Transitions stored before the first gradient step."""
    target_update: int = 500
    """Gradient steps between copies of the online network into the target network."""
    eps_start: float = 1.0
    """Initial ε of ε-greedy (uniform over legal actions)."""
    eps_end: float = 0.05
    """Final ε."""
    eps_decay_episodes: int = 600
    """Episodes over which ε decays linearly."""
    alpha: float = 0.6
    """Prioritization exponent."""
    beta_start: float = 0.4
    """Initial importance-sampling exponent, annealed linearly to 1 over the episodes."""
    prio_eps: float = 1e-3
    """Added to |TD error| so every transition keeps a chance."""
    new_priority: str = "max"
    """Priority of a new transition: ``max``, the largest ever set and at least 1.0 (Schaul et
    al. 2016; every transition is replayed once soon, at a small importance weight), or
    ``td``, its own |TD error| under the current networks (Ape-X, Horgan et al. 2018; a
    deviation, README table). `dlsched.papers.sched2.replay`."""
    hold_mask: str = "none"
    """``none``: φ legal whenever something runs (SCED² §III-C); ``local``: φ also illegal while
    a window job fits at its best locality, in training and scheduling (a deviation, README)."""
    grad_clip: float = 10.0
    """Max gradient norm."""
    dueling: bool = False
    """Dueling head (value + advantage streams, Q = V + A − mean(A); Wang et al. 2016): not in
    SCED², a deviation (README table). `Sched2QNet`."""
    server_hidden: int = 32
    """Width of the shared per-server encoder's hidden layer (w_shared)."""
    server_out: int = 16
    """Features per server (F_i)."""
    job_hidden: int = 128
    """Features of the job/statistics encoder (G, w_1)."""
    hidden: int = 256
    """Width of the head's hidden layer (w_2)."""
    eval_every: int = 100
    """Episodes between greedy validation runs."""
    threads: int = 1
    """torch threads (the shared machine has 2 cores)."""
    device: str = "auto"
    """``auto``, ``cpu`` (NumPy environment) or ``cuda`` (PyTorch environment and network)."""


INCREMENTAL = {"reward": "incremental", "gamma": 0.9, "reward_scale": 1.0, "target_update": 50,
               "updates_per_step": 2}  # fmt: skip
"""``train sched2 --paper --reward incremental``: the reward paid as it accrues with the
discount, scale and target period it needs (RESULTS 2026-11-26, "why the paper's DQN stalls":
at γ = 0.99 and reward scale 0.01 the Q-values drift away from the true values, of the wrong
sign, and the paper's reward at any γ < 1 prefers picking over the holds that pay)."""
