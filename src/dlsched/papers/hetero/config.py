"""Hyper-parameters of ``dlsched train hetero``, without NumPy or PyTorch: the command's options
are generated from these documented fields (`dlsched.commands.config_options`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from dlsched.cli_args import MAX_JOBS, MAX_SEED, MAX_STEPS
from dlsched.option_fields import Opt

VALIDATION_SEED0 = 10_001
"""Validation workloads use seeds 10,001-19,999; training seeds are drawn below 10,001."""
TEST_SEED0 = 20_001
"""Held-out test workloads (`benchmarks/hetero_learned.py`) use seeds from here on."""


@dataclass
class HeteroConfig:
    """Hyper-parameters of ``dlsched train hetero`` (each field is one option)."""

    iterations: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 10
    """Cross-entropy iterations (learning steps)."""
    population: Annotated[int, Opt(min=2, max=10_000)] = 12
    """Weight vectors tried per iteration."""
    elite: Annotated[int, Opt(min=1, max=10_000)] = 3
    """Best vectors the Gaussian is refitted to."""
    init_std: Annotated[float, Opt(min=0.0, max=1e6)] = 1.0
    """Initial standard deviation of every weight."""
    start: Literal["zero", "hand"] = "zero"
    """Initial mean: all weights 0 (arrival order) or the hand-set shortest-remaining-time rule."""
    min_std: Annotated[float, Opt(min=0.0, max=1e6)] = 0.05
    """Added to the refitted deviation so that the search keeps exploring."""
    train_seeds: Annotated[int, Opt(min=1, max=10_000)] = 2
    """Fresh training workloads per iteration and input rate."""
    validation_seeds: Annotated[int, Opt(min=1, max=9_999)] = 3
    """Held-out workloads per input rate scoring the mean weights."""
    rates: Annotated[tuple[float, ...], Opt(min=0.01, max=1e6)] = (4.0, 8.0)
    """Input job rates (jobs per hour) of the training and validation workloads."""
    num_jobs: Annotated[int, Opt(min=1, max=MAX_JOBS)] = 120
    """Jobs per training and validation workload."""
    multi_gpu: bool = False
    """Draw jobs of 1, 2, 4 and 8 GPUs (Gavel's ``--generate-multi-gpu-jobs``), not only 1."""
    workload: Annotated[str, Opt(cli=False)] = "gavel"
    """Registered workload to train on (Gavel's generated jobs, 36 GPUs of each type)."""
    seed: Annotated[int, Opt(min=0, max=MAX_SEED)] = 0
    """Seed of the search (the samples and the training workloads)."""
