"""``dlsched train deeprm``: REINFORCE with per-timestep baselines on DeepRM's image state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import typer
from rich.table import Table

from dlsched.cli_args import MAX_LOAD, MAX_SEED, MAX_STEPS, parse_hidden
from dlsched.commands.common import one_line_errors, out, progress_bar
from dlsched.commands.train_options import (
    Force,
    MaxMinutes,
    OutDir,
    Resume,
    TensorBoardDir,
    budget_seconds,
)


def train_deeprm_command(
    out_dir: OutDir,
    load: Annotated[
        float, typer.Option(min=0.01, max=MAX_LOAD, help="Load of the training jobsets.")
    ] = 0.7,
    iterations: Annotated[
        int, typer.Option(min=1, max=MAX_STEPS, help="Training iterations.")
    ] = 1000,
    objective: Annotated[str, typer.Option(help="slowdown or completion (reward).")] = "slowdown",
    jobsets: Annotated[int, typer.Option(min=1, max=MAX_STEPS, help="Training jobsets.")] = 100,
    episodes: Annotated[
        int, typer.Option(min=1, max=MAX_STEPS, help="Episodes per jobset (N).")
    ] = 20,
    hidden: Annotated[str, typer.Option(help="Hidden layer sizes, comma-separated.")] = "20",
    lr: Annotated[float, typer.Option(min=0.0, max=10.0, help="RMSProp learning rate.")] = 1e-3,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Rollout processes.")] = 2,
    pretrain_epochs: Annotated[
        int,
        typer.Option(
            min=0, max=MAX_STEPS, help="Supervised epochs on SJF decisions first (0: none)."
        ),
    ] = 0,
    unmasked: Annotated[
        bool, typer.Option("--unmasked", help="Paper's policy: invalid actions not masked.")
    ] = False,
    max_minutes: MaxMinutes = None,
    tensorboard: TensorBoardDir = None,
    resume: Resume = False,
    force: Force = False,
    time_budget: Annotated[
        float | None,
        typer.Option(min=1.0, max=1e7, hidden=True, help="Deprecated: seconds; --max-minutes."),
    ] = None,
    validate_every: Annotated[
        int, typer.Option(min=1, max=MAX_STEPS, help="Iterations per validation.")
    ] = 10,
    seed: Annotated[
        int, typer.Option(min=0, max=MAX_SEED, help="Seed of torch, sampling and training jobsets.")
    ] = 0,
    loads: Annotated[
        str | None,
        typer.Option(help="Several training loads, comma-separated (dealt over the jobsets)."),
    ] = None,
    long_jobs: Annotated[
        int,
        typer.Option(
            min=0, max=MAX_STEPS, help="Every other jobset has this many jobs (0: 50-step only)."
        ),
    ] = 0,
    ranked: Annotated[
        bool,
        typer.Option("--ranked", help="Slots show the M shortest waiting jobs (not the paper's)."),
    ] = False,
    max_steps: Annotated[
        int, typer.Option(min=1, max=MAX_STEPS, help="Truncate training episodes here.")
    ] = 400,
    teacher: Annotated[
        str, typer.Option(help="Pre-training teacher: sjf or withhold (SJF keeping room).")
    ] = "sjf",
    pretrain_lr: Annotated[
        float, typer.Option(min=0.0, max=10.0, help="Adam learning rate of pre-training.")
    ] = 1e-3,
    pretrain_temperature: Annotated[
        float,
        typer.Option(min=0.01, max=1000.0, help="Divide the pre-trained output layer by this."),
    ] = 1.0,
    validation_jobsets: Annotated[
        int, typer.Option(min=1, max=MAX_STEPS, help="Validation jobsets per training setting.")
    ] = 20,
) -> None:
    """Train DeepRM: OUT/policy.pt + OUT/card.json is the best policy by validation, OUT/last the
    final network, OUT/train_log.csv a row per iteration."""
    import torch

    from dlsched.papers.deeprm.algorithm import ReinforceConfig
    from dlsched.papers.deeprm.state import DeepRMShape
    from dlsched.papers.deeprm.train import train_deeprm
    from dlsched.rl.training import RunOptions

    with one_line_errors():
        torch.set_num_threads(1)
        budget_s = budget_seconds(max_minutes, time_budget, "--time-budget", 1.0)
        if teacher not in ("sjf", "withhold"):
            raise ValueError(f"--teacher {teacher!r}: choose sjf or withhold")
        if objective not in ("slowdown", "completion"):
            raise ValueError(f"--objective {objective!r}: choose slowdown or completion")
        sizes = parse_hidden(hidden)
        load_list = _parse_loads(loads) if loads else ()
        config = ReinforceConfig(
            load=load_list[0] if load_list else load,
            loads=load_list,
            long_jobs=long_jobs,
            max_steps=max_steps,
            shape=DeepRMShape(ranked=ranked),
            objective=objective,  # type: ignore[arg-type]
            jobsets=jobsets,
            episodes=episodes,
            iterations=iterations,
            lr=lr,
            hidden=sizes,
            mask_invalid=not unmasked,
            workers=workers,
            seed=seed,
            pretrain_epochs=pretrain_epochs,
            pretrain_lr=pretrain_lr,
            teacher=teacher,
            pretrain_temperature=pretrain_temperature,
        )
        run = RunOptions(out_dir, None if budget_s is None else budget_s / 60.0, tensorboard)
        run.resume, run.force = resume, force
        with progress_bar(label="deeprm {task.description}") as progress:
            task = progress.add_task(f"load {loads or load}", total=iterations)

            def advance(steps: int, row: Mapping[str, object]) -> None:
                reward = float(str(row.get("mean_reward", "nan")))
                slow = float(str(row.get("mean_slowdown", "nan")))
                progress.update(
                    task, completed=steps, description=f"reward {reward:.1f} slowdown {slow:.3f}"
                )

            outcome = train_deeprm(
                config,
                run,
                validate_every=validate_every,
                validation_jobsets=validation_jobsets,
                progress=advance,
            )
    plural = "" if outcome.iterations == 1 else "s"
    table = Table(title=f"deeprm · load {loads or load} · {outcome.iterations} iteration{plural}")
    table.add_column("field")
    table.add_column("value", justify="right")
    table.add_row("best validation slowdown", f"{outcome.best_slowdown:.3f} ({outcome.best_mode})")
    table.add_row("at iteration", str(outcome.best_iteration))
    table.add_row("SJF on the slots", f"{outcome.sjf_slowdown:.3f}")
    table.add_row("wall time", f"{outcome.wall_s:.0f} s")
    table.add_row("policy", str(outcome.best_dir))
    out.print(table)


def _parse_loads(text: str) -> tuple[float, ...]:
    """``"0.3,0.7,1.9"`` → loads; ValueError naming ``--loads`` on a bad entry."""
    out = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"--loads: {part.strip()!r} is not a number") from None
        if not 0.01 <= value <= MAX_LOAD:
            raise ValueError(f"--loads: {value} is outside 0.01..{MAX_LOAD}")
        out.append(value)
    return tuple(out)
