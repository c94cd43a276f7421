"""DL2's training settings without PyTorch: the network's and learners' hyper-parameters
(`Dl2Config`), evolution strategies' (`EsConfig`), OfflineRL's fit (`FitSpec`), what a run
trains (`TrainSpec`) and what ``dlsched train dl2`` adds (`Dl2RunArgs`). The command's options
are generated from these documented fields (`dlsched.commands.config_options`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from dlsched.cli_args import MAX_LOAD, MAX_SEED, MAX_SERVERS, MAX_STEPS, parse_hidden
from dlsched.models.noise import DL2_LEVEL
from dlsched.option_fields import Opt
from dlsched.workloads.dl2 import JOB_TYPES

if TYPE_CHECKING:
    from dlsched.papers.dl2.state import Dl2Shape


def _teacher(text: str, flag: str) -> str | None:
    """``--teacher``: a heuristic's name, or ``none`` (no supervised phase)."""
    return None if text.lower() == "none" else text


def _seeds(text: str, flag: str) -> tuple[int, ...]:
    """``--val-seeds``: ``"201-203"``, ``"1,3,5"`` or a mix."""
    from dlsched.experiments.compare import parse_seeds

    return tuple(parse_seeds(text, flag))


@dataclass
class Dl2Config:
    """Hyper-parameters of DL2 (defaults: DL2 §6.2 unless said otherwise)."""

    J: Annotated[int, Opt(flags=("--J",), min=1, max=1000)] = 40
    """Job rows of the state (jobs decided per batch)."""
    job_types: Annotated[tuple[str, ...], Opt(cli=False)] = JOB_TYPES
    """The L job types of the one-hot."""
    hidden: Annotated[tuple[int, ...], Opt(parse=parse_hidden)] = (256, 256)
    """Hidden layer sizes of the policy and value networks (§6.2: two of 256)."""
    arch: Annotated[str, Opt(choices=("rows", "mlp"))] = "rows"
    """``"mlp"``: DL2's flat MLP over the whole state; ``"rows"`` (ours, default): the same
    layers applied to every job row with the rows' mean as context (`RowNet`), so ranking jobs
    is learnt once for all rows instead of per row position."""
    sl_lr: Annotated[float, Opt(min=0.0, max=10.0)] = 0.005
    """Adam learning rate of supervised learning (§6.2)."""
    rl_lr: Annotated[float, Opt(min=0.0, max=10.0)] = 1e-4
    """Adam learning rate of RL, policy and value (§6.2)."""
    batch_size: Annotated[int, Opt(min=1, max=100_000)] = 256
    """Mini-batch size, samples (§6.2)."""
    gamma: Annotated[float, Opt(min=0.0, max=1.0)] = 0.9
    """Discount per time slot (§6.2)."""
    epsilon: Annotated[float, Opt(min=0.0, max=1.0)] = 0.4
    """Probability of the job-aware exploration override in a poor state (§6.2)."""
    entropy_beta: Annotated[float, Opt(min=0.0, max=1e3)] = 0.1
    """Entropy regularisation weight β (§6.2)."""
    replay_size: Annotated[int, Opt(min=1, max=1_000_000)] = 8192
    """Experience replay capacity, samples (§6.2)."""
    slots_per_update: Annotated[int, Opt(min=1, max=100_000)] = 8
    """Time slots simulated between two RL updates (ours)."""
    value_net: bool = True
    """Ablation: False replaces the value network by a moving-average baseline."""
    exploration: bool = True
    """Ablation: False disables job-aware exploration."""
    replay: bool = True
    """Ablation: False trains on the latest rollout only."""
    baseline_decay: Annotated[float, Opt(min=0.0, max=1.0)] = 0.95
    """Moving-average factor of the baseline when ``value_net`` is False (ours)."""
    dagger: Annotated[float, Opt(min=0.0, max=1.0)] = 0.0
    """Fraction of supervised-data slots driven by the learner, labelled by the teacher (ours)."""
    normalize_advantage: bool = True
    """Standardise advantages per mini-batch (ours; CleanRL's ``norm_adv``)."""
    grad_clip: Annotated[float, Opt(min=0.0, max=1e6)] = 10.0
    """Global gradient-norm clip (ours)."""
    seed: Annotated[int, Opt(min=0, max=MAX_SEED)] = 0
    """Seeds torch, NumPy and Python's random, and the environment."""

    def shape(self) -> Dl2Shape:
        from dlsched.papers.dl2.state import Dl2Shape

        return Dl2Shape(J=self.J, job_types=tuple(self.job_types))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["hidden"] = list(self.hidden)
        data["job_types"] = list(self.job_types)
        return data


@dataclass
class EsConfig:
    """Hyper-parameters of `evolve` (ours)."""

    pairs: Annotated[int, Opt(min=1, max=1000)] = 6
    """Antithetic pairs of perturbations per iteration (2 × pairs candidates)."""
    traces_per_iter: Annotated[int, Opt(flags=("--es-traces",), min=1, max=1000)] = 1
    """Training traces every candidate of an iteration runs."""
    sigma: Annotated[float, Opt(min=1e-6, max=10.0)] = 0.02
    """Standard deviation of the weight perturbations."""
    lr: Annotated[float, Opt(min=0.0, max=1.0)] = 0.005
    """Adam step size on the weights."""
    weight_decay: Annotated[float, Opt(min=0.0, max=1.0)] = 0.0
    """L2 pull of the weights towards zero (as OpenAI's ES)."""
    workload: str = "dl2"
    """Workload the training traces come from."""
    workload_options: dict[str, Any] = field(default_factory=dict)
    """Generator options of the training traces."""
    vary: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    """Generator options drawn per iteration from the listed values (one setting per iteration,
    shared by its candidates)."""
    probes: Annotated[int, Opt(flags=("--es-stall-probes",), min=0, max=1000)] = 0
    """Small-cluster training traces (`dlsched.papers.dl2.probes`) every candidate of an
    iteration must finish without stalling, or it scores ``inf`` (0: none)."""


@dataclasses.dataclass(frozen=True)
class FitSpec:
    """How Optimus' model is fitted for OfflineRL's simulator."""

    samples: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 10
    """With --speed-model optimus: observed (p, w) configurations per job type (≥ 5 to fit
    all five θ)."""
    noise: Annotated[float, Opt(min=0.0, max=1.0)] = DL2_LEVEL
    """Relative std of the interference noise on each observed speed."""
    seed: Annotated[int, Opt(min=0, max=MAX_SEED)] = 0
    """Seeds which configurations are observed and their noise."""


@dataclass
class TrainSpec:
    """What a DL2 run trains (`dlsched.papers.dl2.train.train_dl2`); where the files go, the
    budget, TensorBoard and resuming are the run's (`dlsched.rl.run_options.RunOptions`)."""

    workload: Annotated[str, Opt(flags=("--workload", "-w"))] = "dl2"
    """Elastic workload."""
    workload_options: dict[str, Any] = field(default_factory=dict)
    """Generator options (servers, load, num_jobs) of the training traces."""
    validation_options: dict[str, Any] | None = None
    """Generator options of the validation traces when they differ from training's (your
    trace's validation part of its split; None: workload_options)."""
    teacher: Annotated[str | None, Opt(parse=_teacher, metavar="NAME")] = "drf"
    """Heuristic to imitate first (drf, fifo, srtf, tetris, optimus, …); none: RL from
    scratch."""
    sl_episodes: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 4
    """Traces the teacher is replayed on for the supervised data."""
    sl_steps: Annotated[int, Opt(min=0, max=MAX_STEPS)] = 2000
    """Supervised mini-batch updates."""
    rl_steps: Annotated[int, Opt(min=0, max=MAX_STEPS)] = 500
    """RL updates (actor-critic) or iterations (es)."""
    eval_every: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 100
    """Updates between validations, CSV rows and checkpoints."""
    val_seeds: Annotated[Sequence[int], Opt(parse=_seeds, metavar="SEEDS")] = (201, 202, 203)
    """Validation trace seeds, e.g. 201-203 (never trained on)."""
    config: Dl2Config = field(default_factory=Dl2Config)
    """DL2's hyper-parameters."""
    speed_model: Annotated[str, Opt(choices=("measured", "optimus"))] = "measured"
    """Training simulator's speeds: measured, or optimus (Optimus' model fitted to a few noisy
    measured samples: the OfflineRL baseline, `dlsched.papers.dl2.offline_rl`)."""
    fit: FitSpec = field(default_factory=FitSpec)
    """How the Optimus model is fitted when speed_model is optimus."""
    clusters: Annotated[int, Opt(min=1, max=64)] = 1
    """Simulated clusters training one global policy in RL (> 1: federated, A3C,
    `dlsched.papers.dl2.federated`)."""
    vary: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    """Generator options drawn per training episode from the listed values
    ({"servers": (8, 13, 20)}); validation uses workload_options."""
    rl_method: Annotated[str, Opt(choices=("actor-critic", "es"))] = "actor-critic"
    """actor-critic (DL2's, the paper's reward, continuing from the last supervised step) or
    es (evolution strategies on the average JCT of whole training traces, from the best
    supervised checkpoint)."""
    es: EsConfig = field(default_factory=EsConfig)
    """ES's hyper-parameters (its workload, options and vary are this spec's)."""
    rl_eval_every: Annotated[int | None, Opt(min=1, max=MAX_STEPS)] = None
    """RL updates (or ES iterations) between validations (default: eval_every)."""
    init: Path | None = None
    """Start from this policy checkpoint (same J, network arch and hidden sizes)."""
    stall_probes: Annotated[int, Opt(min=0, max=10_000)] = 0
    """Small-cluster (2-3 servers) traces run at every validation; a checkpoint that stalls
    one is never chosen over one that stalls none (0: off)."""


@dataclass
class Dl2RunArgs:
    """What ``dlsched train dl2`` adds to `TrainSpec` (the generator's options)."""

    servers: Annotated[int | None, Opt(min=1, max=MAX_SERVERS)] = None
    """Cluster size in servers."""
    load: Annotated[float | None, Opt(min=0.001, max=MAX_LOAD)] = None
    """Arrival-rate multiplier."""
    option: Annotated[list[str] | None, Opt(flags=("--option", "-o"))] = None
    """Workload generator option KEY=VALUE (repeatable)."""
    vary: list[str] | None = None
    """Generator option drawn per training episode, KEY=V1,V2,… (repeatable), e.g.
    servers=8,13,20: one policy across settings; validation keeps the fixed ones."""
    paper: Annotated[bool, Opt(flags=("--paper",))] = False
    """DL2's own method and hyper-parameters (§4, §6.2): paper state, MLP 2x256, SL from
    --teacher, then actor-critic (--rl-steps updates, one per slot) in batched environments;
    --arch/--hidden/--J are ignored."""
    device: str = "auto"
    """--paper: auto, cpu or cuda (networks and mini-batches)."""
    num_envs: Annotated[int, Opt(min=1, max=4096)] = 16
    """--paper: episodes simulated at once."""
    critic_warmup: Annotated[int, Opt(min=0, max=MAX_STEPS)] = 0
    """--paper: value-only updates before the policy learns (ours; 0 = the paper)."""
