"""SCED²'s training settings without PyTorch: the DQN's (`DQNConfig`), SCED²-L's cross-entropy
search (`CemConfig`) and what ``dlsched train sched2`` adds (`Sched2RunArgs`). The command's
options are generated from these documented fields (`dlsched.commands.config_options`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from dlsched.cli_args import MAX_JOBS, MAX_LAYER, MAX_LOAD, MAX_SEED, MAX_SERVERS, MAX_STEPS
from dlsched.option_fields import Opt


@dataclass
class DQNConfig:
    """Hyper-parameters of SCED²'s DQN (every field has a unit or a range)."""

    seed: Annotated[int, Opt(min=0, max=MAX_SEED)] = 0
    """Seeds torch, NumPy and the episodes' trace draws."""
    episodes: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 100
    """Training episodes (traces); SCED² trained 2,400 (the command: 100, --paper 2400)."""
    gamma: Annotated[float, Opt(min=0.0, max=1.0)] = 0.99
    """Discount per action."""
    lr: Annotated[float, Opt(min=0.0, max=10.0)] = 2.5e-4
    """Adam learning rate."""
    batch_size: Annotated[int, Opt(min=1, max=100_000)] = 64
    """Transitions per gradient step."""
    buffer_size: Annotated[int, Opt(min=1, max=1_000_000)] = 100_000
    """Replay capacity, transitions."""
    learning_starts: Annotated[int, Opt(min=0, max=MAX_STEPS)] = 2_000
    """Steps of experience before the first gradient step."""
    train_freq: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 4
    """Environment steps per gradient step."""
    target_update: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 1_000
    """Environment steps between copies of the online network into the target network."""
    eps_start: Annotated[float, Opt(min=0.0, max=1.0)] = 1.0
    """Initial ε of ε-greedy."""
    eps_end: Annotated[float, Opt(min=0.0, max=1.0)] = 0.05
    """Final ε."""
    eps_decay_steps: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 50_000
    """Steps over which ε decays linearly."""
    alpha: Annotated[float, Opt(min=0.0, max=1.0)] = 0.6
    """Prioritization exponent (0 = uniform replay)."""
    beta_start: Annotated[float, Opt(min=0.0, max=1.0)] = 0.4
    """Initial importance-sampling exponent; annealed linearly to 1 over training."""
    prio_eps: Annotated[float, Opt(min=0.0, max=1.0)] = 1e-3
    """Added to |TD error| so every transition keeps a chance."""
    grad_clip: Annotated[float, Opt(min=0.0, max=1e6)] = 10.0
    """Max gradient norm."""
    double: bool = True
    """Double-DQN targets."""
    dueling: bool = False
    """Dueling Q-network head: value + advantage streams, Q = V + A − mean(A) (Wang et al.
    2016; not in SCED², a deviation, README table). Also applies to --paper."""
    server_hidden: Annotated[int, Opt(min=1, max=MAX_LAYER)] = 32
    """Width of the shared per-server encoder's hidden layer."""
    server_out: Annotated[int, Opt(min=1, max=MAX_LAYER)] = 16
    """Features per server (F_i)."""
    job_hidden: Annotated[int, Opt(min=1, max=MAX_LAYER)] = 128
    """Features of the job/statistics encoder (G)."""
    hidden: Annotated[int, Opt(min=1, max=MAX_LAYER)] = 256
    """Width of the head's hidden layer (w_2)."""
    demo_episodes: Annotated[int, Opt(min=0, max=MAX_STEPS)] = 0
    """Episodes played by the teacher first; their transitions are flagged as demonstrations."""
    pretrain_steps: Annotated[int, Opt(min=0, max=MAX_STEPS)] = 0
    """Gradient steps on the demonstrations alone, after the demo episodes."""
    margin: Annotated[float, Opt(min=0.0, max=1e6)] = 0.8
    """Large-margin value of DQfD's supervised loss (Q of other actions + margin ≤ Q of the
    demonstrated one)."""
    margin_weight: Annotated[float, Opt(min=0.0, max=1e6)] = 1.0
    """Weight of the large-margin loss on demonstration transitions (0 disables it)."""
    teacher_explore: Annotated[float, Opt(min=0.0, max=1.0)] = 0.5
    """Share of ε-exploration actions taken from the teacher (the rest uniform over legal)."""
    eval_every: Annotated[int, Opt(min=0, max=MAX_STEPS)] = 5
    """Episodes between greedy evaluations on the validation traces (0: never)."""
    threads: Annotated[int, Opt(min=1, max=256)] = 1
    """torch threads (the shared machine has 2 cores)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Free-form settings recorded with the run (workload options, …)."""


@dataclass
class CemConfig:
    """Cross-entropy search settings (every field has a unit)."""

    seed: Annotated[int, Opt(min=0, max=MAX_SEED)] = 0
    """Seeds the sampling and the training trace draws."""
    iterations: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 12
    """CEM iterations."""
    population: Annotated[int, Opt(min=2, max=10_000)] = 16
    """Parameter vectors per iteration."""
    elite: Annotated[int, Opt(min=1, max=10_000)] = 4
    """Best vectors kept per iteration."""
    traces_per_iter: Annotated[int, Opt(min=1, max=10_000)] = 3
    """Fresh training traces per iteration (every vector runs on the same ones)."""
    frag_weight: Annotated[float, Opt(min=0.0, max=1e6)] = 1.0
    """Weight of the fragmentation term in the objective."""
    noise_floor: Annotated[float, Opt(min=0.0, max=1e6)] = 0.05
    """Added to each standard deviation after an update."""


@dataclass
class Sched2RunArgs:
    """What ``dlsched train sched2`` adds to the DQN's and the search's settings."""

    method: Literal["dqn", "lookahead"] = "dqn"
    """lookahead: SCED²-L by cross-entropy search (the shipped policy); dqn: SCED²'s
    Q-network."""
    workload: Annotated[str, Opt(flags=("--workload", "-w"))] = "sched2"
    """sched2, philly:VC or trace:PATH."""
    num_jobs: Annotated[int, Opt(min=10, max=MAX_JOBS)] = 1000
    """Jobs per episode (trace length or window)."""
    load: Annotated[float | None, Opt(min=0.001, max=MAX_LOAD)] = None
    """Arrival-rate multiplier (sched2: 1.8)."""
    one_gpu_frac: Annotated[float | None, Opt(min=0.0, max=1.0)] = None
    """Share of 1-GPU jobs (sched2)."""
    servers: Annotated[int | None, Opt(min=1, max=MAX_SERVERS)] = None
    """Cluster size in servers."""
    window: Literal["arrival", "shortest"] = "arrival"
    """Which waiting jobs fill the J slots: arrival (SCED²) or shortest (ideal time)."""
    teacher: Literal["none", "dsif"] = "none"
    """dqn: dsif starts from DSIF demonstrations (DQfD); none: plain DQN."""
    log_csv: Path | None = None
    """Per-episode (per-iteration) CSV log (default OUT/train_log.csv)."""
    paper: Annotated[bool, Opt(flags=("--paper",))] = False
    """SCED²'s own method at its scale: plain DQN (no demonstrations), arrival window, 2,400
    episodes on batched environments (README: deviations); its hyper-parameters are
    `dlsched.papers.sched2.paper_config.PaperConfig`'s (of the DQN options only --seed and
    --episodes apply)."""
    device: str = "auto"
    """--paper: auto, cpu (NumPy) or cuda (PyTorch)."""
    num_envs: Annotated[int, Opt(min=1, max=4096)] = 128
    """--paper: episodes stepped at once."""
    reward: Literal["paper", "incremental"] = "paper"
    """--paper: paper = each picked job's execution effectiveness (SCED² §III-D);
    incremental = the same objective paid as it accrues (waiting and placement losses in the
    step where they happen), with γ 0.9, reward scale 1, target copy every 50 gradient steps,
    2 gradient steps per batched step (`dlsched.papers.sched2.paper_config.INCREMENTAL`; README:
    deviations)."""
    replay_priority: Literal["max", "td"] = "max"
    """--paper: a new transition's replay priority: max = the largest ever set (Schaul et
    al.), td = its own |TD error| under the current networks (Ape-X; README: deviations)."""
    discount_time_s: Annotated[float, Opt(min=0.0, max=1e9)] = 0.0
    """--paper: 0 = γ per action; > 0 = semi-MDP discounting γ^(Δt / this) over the simulated
    seconds Δt between decisions (README: deviations)."""
    hold_mask: Literal["none", "local"] = "none"
    """--paper: none = φ (hold) legal whenever something runs (SCED²); local = φ also illegal
    while a window job fits at its best locality (action masking; README: deviations)."""
