"""``dlsched train sched2 --paper``: progress display around `dlsched.papers.sched2.paper`."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from rich.markup import escape

from dlsched.commands.common import err, metrics_line, one_line_errors, out, progress_bar


def train_paper_command(
    out_dir: Path,
    episodes: int,
    budget_s: float | None,
    seed: int,
    load: float | None,
    device: str,
    num_envs: int,
    reward: str,
    replay_priority: str,
    hold_mask: str,
    dueling: bool,
    discount_time_s: float,
    tensorboard: Path | None,
    force: bool,
    resume: bool,
) -> None:
    """Run `train_paper` for ``episodes`` episodes and show progress (a line per validation
    and every 20 episodes when stderr is not a terminal)."""
    from dlsched.papers.sched2.batched_env import resolve_device
    from dlsched.papers.sched2.paper import train_paper
    from dlsched.papers.sched2.paper_config import INCREMENTAL, PaperConfig

    with one_line_errors():
        resolve_device(device)
    config = PaperConfig(
        seed=seed,
        episodes=episodes,
        time_budget_s=budget_s,
        num_envs=num_envs,
        load=1.8 if load is None else load,
        device=device,
        new_priority=replay_priority,
        hold_mask=hold_mask,
        dueling=dueling,
        discount_time_s=discount_time_s,
        **(INCREMENTAL if reward == "incremental" else {}),  # type: ignore[arg-type]
    )
    with one_line_errors(), progress_bar() as progress:
        task = progress.add_task("sched2 --paper episodes", total=episodes)

        def show(done: int, row: Mapping[str, object]) -> None:
            progress.update(task, completed=done)
            evaluated = row.get("eval_effectiveness") is not None
            if err.is_terminal or not (evaluated or done % 20 == 0):
                return
            text = ", ".join(
                f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()
            )
            err.print(f"episode {done}: {text}", highlight=False)

        result = train_paper(
            config,
            out_dir,
            force=force,
            resume=resume,
            tensorboard=tensorboard,
            progress=show,
            command="dlsched " + " ".join(sys.argv[1:]),
        )
    best = result.best.row if result.best is not None else {}
    shown = escape(str(result.out))
    out.print(f"policy written to [bold]{shown}[/] · validation {metrics_line(best)}")
    out.print(f"use it with: --scheduler sched2:{result.out}", markup=False, highlight=False)
