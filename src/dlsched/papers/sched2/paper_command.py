"""``dlsched train sched2 --paper``: progress display around `dlsched.papers.sched2.paper`."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import typer

from dlsched.commands.common import err, one_line_errors, out, progress_bar
from dlsched.rl.tensorboard import CurveMirror


def train_paper_command(
    out_dir: Path,
    episodes: int,
    budget_s: float | None,
    seed: int,
    load: float | None,
    device: str,
    num_envs: int,
    mirror: CurveMirror | None,
) -> None:
    """Run `run_paper` with ``episodes`` (the paper's 2,400 unless given) and show progress."""
    from dlsched.papers.sched2.batched_env import resolve_device
    from dlsched.papers.sched2.paper import PaperConfig, PaperLog, run_paper

    with one_line_errors():
        resolve_device(device)
    config = PaperConfig(
        seed=seed,
        episodes=episodes,
        time_budget_s=budget_s,
        num_envs=num_envs,
        load=1.8 if load is None else load,
        device=device,
    )
    with one_line_errors(), progress_bar() as progress:
        task = progress.add_task("sched2 --paper episodes", total=episodes)

        def show(row: PaperLog) -> None:
            if mirror is not None:
                mirror.add(asdict(row), row.episode)
            progress.update(task, completed=row.episode)
            evaluated = row.eval_effectiveness == row.eval_effectiveness
            if not err.is_terminal and (evaluated or row.episode % 20 == 0):
                err.print(
                    f"episode {row.episode}: steps {row.transitions}, grad {row.grad_steps}, "
                    f"eps {row.epsilon:.3f}, train E {row.train_effectiveness:.4f} JCT "
                    f"{row.train_avg_jct_s:.0f} s, loss {row.loss:.3g}, Q {row.q_mean:.3f}"
                    + (
                        f", eval E {row.eval_effectiveness:.4f} JCT {row.eval_avg_jct_s:.0f} s "
                        f"makespan {row.eval_makespan_s:.0f} s"
                        if evaluated
                        else ""
                    )
                    + f", {row.wall_s:.0f} s",
                    highlight=False,
                )

        path, best = run_paper(
            out_dir, config, command="dlsched " + " ".join(sys.argv[1:]), on_episode=show
        )
    if mirror is not None:
        mirror.close()
    if not best:
        raise typer.Exit(0)
    out.print(f"policy written to [bold]{path}[/] · validation {best}")
