"""``dlsched train example``: its options are `ExampleConfig`'s documented fields and the shared
run options (`dlsched.commands.config_options.train_command`)."""

from __future__ import annotations

from dlsched.commands.common import one_line_errors, out
from dlsched.commands.config_options import Section, train_command
from dlsched.papers.example.config import ExampleConfig
from dlsched.rl.run_options import RunOptions


@train_command(Section(ExampleConfig))
def train_example(run: RunOptions, config: ExampleConfig) -> None:
    """Train the example policy: three weights ordering the waiting jobs, found by cross-entropy
    search on deeprm jobsets in seconds (the template for a new paper)."""
    from dlsched.papers.example.train import train_example as search

    with one_line_errors():
        result = search(config, run)
    best = result.best.row.get("avg_slowdown") if result.best is not None else None
    steps = f"after step {result.best_step} of {result.steps} ({result.wall_s:.1f} s)"
    out.print(f"{result.out}: best validation average slowdown {best} {steps}", markup=False)
