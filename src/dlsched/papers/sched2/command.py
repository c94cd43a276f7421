"""``dlsched train sched2``: train SCED²'s DQN policy (progress bar, CSV log, checkpoint)."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from dlsched.cli_args import MAX_JOBS, MAX_LOAD, MAX_SEED, MAX_SERVERS, MAX_STEPS
from dlsched.commands.common import err, one_line_errors, out, progress_bar
from dlsched.commands.train_options import MaxMinutes, OutDir, TensorBoardDir, budget_seconds
from dlsched.rl.tensorboard import CurveMirror, open_mirror


def train_sched2_command(
    out_dir: OutDir,
    workload: Annotated[
        str, typer.Option("--workload", "-w", help="sched2, philly:VC or trace:PATH.")
    ] = "sched2",
    episodes: Annotated[
        int | None,
        typer.Option(min=1, max=MAX_STEPS, help="Training episodes (traces); 100, --paper 2400."),
    ] = None,
    max_minutes: MaxMinutes = None,
    tensorboard: TensorBoardDir = None,
    minutes: Annotated[
        float | None,
        typer.Option(min=0.01, max=1e6, hidden=True, help="Deprecated: --max-minutes."),
    ] = None,
    num_jobs: Annotated[int, typer.Option(min=10, max=MAX_JOBS, help="Jobs per episode.")] = 1000,
    load: Annotated[
        float | None,
        typer.Option(min=0.001, max=MAX_LOAD, help="Arrival-rate multiplier (sched2: 1.8)."),
    ] = None,
    one_gpu_frac: Annotated[
        float | None, typer.Option(min=0.0, max=1.0, help="Share of 1-GPU jobs (sched2).")
    ] = None,
    servers: Annotated[
        int | None, typer.Option(min=1, max=MAX_SERVERS, help="Cluster size in servers.")
    ] = None,
    window: Annotated[
        str,
        typer.Option(
            help="Which waiting jobs fill the J slots: arrival (SCED²) or shortest (ideal time)."
        ),
    ] = "arrival",
    teacher: Annotated[
        str,
        typer.Option(help="dsif: start from DSIF demonstrations (DQfD); none: plain DQN."),
    ] = "none",
    demo_episodes: Annotated[
        int, typer.Option(min=0, max=MAX_STEPS, help="Teacher episodes first.")
    ] = 0,
    pretrain_steps: Annotated[
        int, typer.Option(min=0, max=MAX_STEPS, help="Gradient steps on the demonstrations alone.")
    ] = 0,
    eps_start: Annotated[float, typer.Option(min=0.0, max=1.0, help="Initial ε.")] = 1.0,
    lr: Annotated[float, typer.Option(min=0.0, max=10.0, help="Adam learning rate.")] = 2.5e-4,
    seed: Annotated[
        int, typer.Option(min=0, max=MAX_SEED, help="Seed of torch, NumPy and the trace draws.")
    ] = 0,
    eps_decay_steps: Annotated[
        int, typer.Option(min=1, max=MAX_STEPS, help="Steps of ε decay.")
    ] = 50_000,
    log_csv: Annotated[
        Path | None, typer.Option(help="Per-episode CSV log (default OUT/train_log.csv).")
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            help="lookahead: SCED²-L by cross-entropy search (the shipped policy); "
            "dqn: SCED²'s Q-network."
        ),
    ] = "dqn",
    iterations: Annotated[
        int, typer.Option(min=1, max=MAX_STEPS, help="lookahead: cross-entropy iterations.")
    ] = 12,
    population: Annotated[
        int, typer.Option(min=2, max=10_000, help="lookahead: parameter vectors per iteration.")
    ] = 16,
    traces_per_iter: Annotated[
        int, typer.Option(min=1, max=10_000, help="lookahead: training traces per iteration.")
    ] = 3,
    paper: Annotated[
        bool,
        typer.Option(
            "--paper",
            help="SCED²'s own method at its scale: plain DQN (no demonstrations), arrival "
            "window, 2,400 episodes on batched environments (README: deviations).",
        ),
    ] = False,
    device: Annotated[
        str, typer.Option(help="--paper: auto, cpu (NumPy) or cuda (PyTorch).")
    ] = "auto",
    num_envs: Annotated[
        int, typer.Option(min=1, max=4096, help="--paper: episodes stepped at once.")
    ] = 128,
    force: Annotated[
        bool, typer.Option("--force", help="--paper: replace another run's files in OUT.")
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="--paper: continue from OUT/last/train_state.pt.")
    ] = False,
) -> None:
    """Train a SCED² policy (DQN, or SCED²-L with --method lookahead): OUT/policy.pt +
    OUT/card.json is the best by validation, OUT/train_log.csv a row per episode (iteration)."""
    from dlsched.papers.sched2.algorithm import DQNConfig, EpisodeLog
    from dlsched.papers.sched2.train import train_sched2

    if method not in ("dqn", "lookahead"):
        err.print(f"error: --method must be dqn or lookahead, got {method!r}")
        raise typer.Exit(2)
    with one_line_errors():
        budget_s = budget_seconds(max_minutes, minutes, "--minutes", 60.0)
    if paper:
        from dlsched.papers.sched2.paper_command import train_paper_command

        train_paper_command(
            out_dir, episodes or 2400, budget_s, seed, load, device, num_envs, tensorboard,
            force, resume,
        )  # fmt: skip
        return
    with one_line_errors():
        mirror = open_mirror(tensorboard)
    episodes = episodes or 100
    if method == "lookahead":
        _train_lookahead(
            workload,
            out_dir,
            num_jobs,
            load,
            one_gpu_frac,
            servers,
            seed,
            budget_s,
            iterations,
            population,
            traces_per_iter,
            log_csv,
            mirror,
        )
        return
    with one_line_errors():
        config = DQNConfig(
            seed=seed,
            episodes=episodes,
            time_budget_s=budget_s,
            eps_decay_steps=eps_decay_steps,
            eps_start=eps_start,
            lr=lr,
            demo_episodes=demo_episodes if teacher != "none" else 0,
            pretrain_steps=pretrain_steps if teacher != "none" else 0,
        )
        with progress_bar() as progress:
            task = progress.add_task("sched2 episodes", total=episodes)

            def show(row: EpisodeLog) -> None:
                if mirror is not None:
                    mirror.add(asdict(row), row.episode)
                progress.update(
                    task,
                    advance=1,
                    description=(
                        f"ep {row.episode} · ε {row.epsilon:.2f} · "
                        f"train E {row.train_effectiveness:.3f}"
                        + (
                            f" · eval E {row.eval_effectiveness:.3f}"
                            if row.eval_effectiveness == row.eval_effectiveness
                            else ""
                        )
                    ),
                )
                if not err.is_terminal:
                    err.print(
                        f"episode {row.episode}: steps {row.steps}, eps {row.epsilon:.3f}, "
                        f"train E {row.train_effectiveness:.4f}, eval E "
                        f"{row.eval_effectiveness:.4f}, {row.wall_s:.0f} s",
                        highlight=False,
                    )

            path, best = train_sched2(
                out_dir,
                workload=workload,
                config=config,
                num_jobs=num_jobs,
                load=load,
                one_gpu_frac=one_gpu_frac,
                servers=servers,
                order=window,
                teacher=None if teacher == "none" else teacher,
                log_csv=log_csv,
                on_episode=show,
            )
    if mirror is not None:
        mirror.close()
    out.print(f"policy written to [bold]{path}[/] · validation {best}")


def _train_lookahead(
    workload: str,
    out_dir: Path,
    num_jobs: int,
    load: float | None,
    one_gpu_frac: float | None,
    servers: int | None,
    seed: int,
    budget_s: float | None,
    iterations: int,
    population: int,
    traces_per_iter: int,
    log_csv: Path | None,
    mirror: CurveMirror | None,
) -> None:
    from dlsched.papers.sched2.lookahead_train import CemConfig, IterationLog
    from dlsched.papers.sched2.train import train_sched2_lookahead

    with one_line_errors():
        config = CemConfig(
            seed=seed,
            iterations=iterations,
            population=population,
            elite=max(2, population // 4),
            traces_per_iter=traces_per_iter,
            time_budget_s=budget_s,
        )
        with progress_bar() as progress:
            task = progress.add_task("sched2-L iterations", total=iterations)

            def show(row: IterationLog) -> None:
                if mirror is not None:
                    mirror.add(asdict(row), row.iteration)
                progress.update(
                    task,
                    advance=1,
                    description=f"it {row.iteration} · validation {row.validation:.3f}",
                )
                if not err.is_terminal:
                    err.print(
                        f"iteration {row.iteration}: train best {row.train_best:.4f}, "
                        f"validation {row.validation:.4f} (JCT {row.validation_avg_jct_s:.0f} s, "
                        f"makespan {row.validation_makespan_s:.0f} s, fragmentation "
                        f"{row.validation_avg_fragmentation:.3f}), params [{row.params}], "
                        f"{row.wall_s:.0f} s",
                        highlight=False,
                    )

            path, best = train_sched2_lookahead(
                out_dir,
                command="dlsched " + " ".join(sys.argv[1:]),
                workload=workload,
                config=config,
                num_jobs=num_jobs,
                load=load,
                one_gpu_frac=one_gpu_frac,
                servers=servers,
                log_csv=log_csv,
                on_iteration=show,
            )
    if mirror is not None:
        mirror.close()
    out.print(f"policy written to [bold]{path}[/] · validation {best}")
