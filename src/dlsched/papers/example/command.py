"""``dlsched train example``: the example policy's search (`dlsched.papers.example.train`).

Light to import (the CLI imports it to list the command): NumPy, PyTorch and the simulator are
imported when the command runs.
"""

from __future__ import annotations

from typing import Annotated

import typer

from dlsched.cli_args import MAX_SEED, MAX_STEPS
from dlsched.commands.common import one_line_errors, out
from dlsched.commands.train_options import Force, MaxMinutes, OutDir, Resume, TensorBoardDir


def train_example(
    out_dir: OutDir,
    iterations: Annotated[
        int, typer.Option(min=1, max=MAX_STEPS, help="Cross-entropy iterations.")
    ] = 12,
    population: Annotated[
        int, typer.Option(min=2, max=10_000, help="Weight vectors tried per iteration.")
    ] = 16,
    elite: Annotated[
        int, typer.Option(min=1, max=10_000, help="Best vectors the search refits to.")
    ] = 4,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the search.")] = 0,
    max_minutes: MaxMinutes = None,
    tensorboard: TensorBoardDir = None,
    resume: Resume = False,
    force: Force = False,
) -> None:
    """Train the example policy: three weights ordering the waiting jobs, found by cross-entropy
    search on deeprm jobsets in seconds (the template for a new paper)."""
    from dlsched.papers.example.train import ExampleConfig
    from dlsched.papers.example.train import train_example as run_search
    from dlsched.rl.training import RunOptions

    with one_line_errors():
        config = ExampleConfig(iterations=iterations, population=population, elite=elite, seed=seed)
        options = RunOptions(out_dir, max_minutes, tensorboard, resume, force)
        result = run_search(config, options)
    best = result.best.row.get("avg_slowdown") if result.best is not None else None
    out.print(
        f"{result.out}: best validation average slowdown {best} after step {result.best_step} "
        f"of {result.steps} ({result.wall_s:.1f} s)",
        markup=False,
        highlight=False,
    )
