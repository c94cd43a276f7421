"""The example's hyper-parameters, without NumPy or PyTorch: ``dlsched train example``'s
options are generated from these documented fields (`dlsched.commands.config_options`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from dlsched.cli_args import MAX_LOAD, MAX_SEED, MAX_STEPS
from dlsched.option_fields import Opt

VALIDATION_SEED0 = 10_001
"""Validation workloads use seeds from here on; training seeds are drawn below it."""


@dataclass
class ExampleConfig:
    """Hyper-parameters of ``dlsched train example`` (each field is one option)."""

    iterations: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 12
    """Cross-entropy iterations (learning steps)."""
    population: Annotated[int, Opt(min=2, max=10_000)] = 16
    """Weight vectors tried per iteration."""
    elite: Annotated[int, Opt(min=1, max=10_000)] = 4
    """Best vectors the Gaussian is refitted to."""
    init_std: Annotated[float, Opt(min=0.0, max=1e6)] = 1.0
    """Initial standard deviation of every weight (the mean starts at 0: arrival order)."""
    min_std: Annotated[float, Opt(min=0.0, max=1e6)] = 0.05
    """Added to the refitted deviation so that the search keeps exploring."""
    train_seeds: Annotated[int, Opt(min=1, max=10_000)] = 4
    """Fresh training workloads per iteration."""
    validation_seeds: Annotated[int, Opt(min=1, max=10_000)] = 4
    """Held-out workloads scoring the mean weights."""
    workload: Annotated[str, Opt(cli=False)] = "deeprm"
    """Registered workload to train on (its default jobsets: DeepRM's 50-step ones)."""
    load: Annotated[float, Opt(min=0.01, max=MAX_LOAD)] = 1.3
    """Load of the training and validation workloads (DeepRM Fig. 5's 130 %)."""
    seed: Annotated[int, Opt(min=0, max=MAX_SEED)] = 0
    """Seed of the search (the samples and the training workloads)."""
