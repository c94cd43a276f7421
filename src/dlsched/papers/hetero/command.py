"""``dlsched train hetero``: its options are `HeteroConfig`'s documented fields and the shared
run options (`dlsched.commands.config_options.train_command`)."""

from __future__ import annotations

from dlsched.commands.common import one_line_errors, out
from dlsched.commands.config_options import Section, train_command
from dlsched.papers.hetero.config import HeteroConfig
from dlsched.rl.run_options import RunOptions


@train_command(Section(HeteroConfig))
def train_hetero(run: RunOptions, config: HeteroConfig) -> None:
    """Train the heterogeneity-aware scorer: weights of (job, GPU type) features, found by
    cross-entropy search for average JCT on gavel jobs."""
    from dlsched.papers.hetero.train import train_hetero as search

    with one_line_errors():
        result = search(config, run)
    best = result.best.row.get("avg_jct_s") if result.best is not None else None
    steps = f"after step {result.best_step} of {result.steps} ({result.wall_s:.1f} s)"
    out.print(f"{result.out}: best validation average JCT {best} s {steps}", markup=False)
