"""``dlsched train dl2 --paper``'s run and summary table (`dlsched.papers.dl2.paper`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from dlsched.commands.common import out
from dlsched.papers.dl2.paper import PaperSpec, paper_config, train_paper
from dlsched.rl.checkpoint import read_card
from dlsched.rl.training import RunOptions


def run_paper(
    run: RunOptions,
    options: dict[str, Any],
    teacher: str,
    sl_traces: int,
    sl_steps: int,
    rl_updates: int,
    eval_every: int,
    val_seeds: Sequence[int],
    seed: int,
    value_net: bool,
    exploration: bool,
    replay: bool,
    device: str,
    num_envs: int,
    init: Path | None,
    critic_warmup: int = 0,
) -> None:
    """Train with the paper preset into ``run.out`` (the command's ``--max-minutes``,
    ``--resume``, ``--force``, ``--tensorboard``) and print where the policy is."""
    spec = PaperSpec(
        out=run.out,
        workload_options=options,
        config=paper_config(
            seed=seed,
            value_net=value_net,
            exploration=exploration,
            replay=replay,
        ),
        critic_warmup=critic_warmup,
        teacher=teacher,
        sl_traces=sl_traces,
        sl_steps=sl_steps,
        rl_updates=rl_updates,
        num_envs=num_envs,
        eval_every=eval_every,
        val_seeds=tuple(val_seeds),
        device=device,
        max_wall_s=None if run.max_minutes is None else 60.0 * run.max_minutes,
        init=init,
    )
    result = train_paper(spec, run)
    best = result.out
    card = read_card(best)
    table = Table(title=f"DL2 (paper method) policy in {best}")
    table.add_column("field")
    table.add_column("value")
    table.add_row(
        "validation avg JCT (s)", f"{card.validation.get('avg_jct_s', float('nan')):,.0f}"
    )
    steps = card.steps
    table.add_row(
        "steps (SL, RL, slots)",
        f"{steps.get('sl', 0)}, {steps.get('rl', 0)}, {steps.get('slots', 0)}",
    )
    table.add_row("log", str(best / "train_log.csv"))
    out.print(table)
    out.print(f"use it with: --scheduler dl2:{best}")
