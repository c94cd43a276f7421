"""``dlsched live run``: a stream of real elastic jobs on this machine, driven by any scheduler."""

from __future__ import annotations

import json
import shutil
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Group
from rich.live import Live
from rich.table import Table

from dlsched.commands.common import clean, err, fmt_metric, one_line_errors, out
from dlsched.schedulers.registry import make_scheduler

if TYPE_CHECKING:  # the live runtime imports PyTorch: only when `live run` runs
    from dlsched.live.snapshot import LiveSnapshot

SNAPSHOT_EVERY = 20
"""`dlsched.live.stream.SNAPSHOT_EVERY` (not imported: the live runtime imports PyTorch)."""
HEARTBEAT_TIMEOUT_S = 3.0
"""`dlsched.live.stream.HEARTBEAT_TIMEOUT_S`."""


def render(snap: LiveSnapshot, scheduler: str) -> Group:
    """The live view: one row per job, then the machine's usage."""
    table = Table(title=f"live · {scheduler} · {snap.now_s:6.1f} s · slot {snap.slot}")
    for column, justify in [
        ("job", "right"),
        ("model", "left"),
        ("state", "left"),
        ("PS", "right"),
        ("workers", "right"),
        ("steps", "right"),
        ("steps/s", "right"),
        ("rescales", "right"),
    ]:
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    colours = {"running": "green", "suspended": "yellow", "failed": "red", "finished": "dim"}
    for row in snap.jobs:
        colour = colours.get(row.state, "")
        state = f"[{colour}]{row.state}[/]" if colour else row.state
        table.add_row(
            str(row.job_id),
            row.model,
            state,
            str(row.num_ps),
            str(row.num_workers),
            f"{row.steps}/{row.total_steps}",
            f"{row.speed:.1f}" if row.speed > 0 else "—",
            str(row.rescales),
        )
    usage = Table.grid(padding=(0, 2))
    (g_used, c_used, _), (g_total, c_total, _) = snap.used, snap.total
    usage.add_row(
        f"cores as GPUs {g_used:g}/{g_total:g}",
        f"CPU slots {c_used:g}/{c_total:g}",
        f"processes {snap.processes}",
    )
    return Group(table, usage)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C so that every job is stopped on the way out."""

    def handler(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def live_run(
    scheduler: Annotated[str, typer.Option("--scheduler", "-s", help="Scheduler name.")] = "drf",
    jobs: Annotated[int, typer.Option("--jobs", "-n", min=1, help="Jobs in the stream.")] = 4,
    slot: Annotated[float, typer.Option(min=0.01, help="Seconds between decisions.")] = 5.0,
    cores: Annotated[int, typer.Option(min=1, help="CPU cores offered as GPUs.")] = 2,
    steps: Annotated[int, typer.Option(min=1, help="Mean synchronous steps of a job.")] = 300,
    arrival_gap: Annotated[
        float, typer.Option(min=0.0, help="Mean seconds between arrivals.")
    ] = 2.0,
    step_sleep: Annotated[
        float, typer.Option(min=0.0, help="Seconds each worker sleeps per step (throttle).")
    ] = 0.0,
    models: Annotated[str, typer.Option(help="Comma-separated live models.")] = "mlp,cnn,smooth",
    seed: Annotated[int, typer.Option(help="Seed of the job stream.")] = 0,
    horizon: Annotated[
        float | None, typer.Option(min=0.0, help="Stop after this many seconds.")
    ] = None,
    snapshot_every: Annotated[
        int,
        typer.Option(
            min=1, help="Steps between snapshots of each job (the most a fault makes it redo)."
        ),
    ] = SNAPSHOT_EVERY,
    heartbeat_timeout: Annotated[
        float,
        typer.Option(
            min=0.3,
            help="Seconds of silence before a worker or PS is declared dead (at least: "
            "longer when heartbeats come late on a loaded machine).",
        ),
    ] = HEARTBEAT_TIMEOUT_S,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write summary.json, jobs.csv and scaling_events.csv here, as things happen "
            "(and the jobs' snapshots to OUT/work until the run is complete).",
        ),
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            help="Continue the killed run whose --out was this folder, with its settings "
            "(other options are ignored): ended jobs keep their rows, the others go on from "
            "their last snapshot.",
        ),
    ] = None,
    learn: Annotated[
        bool,
        typer.Option(help="dl2 only: continue online RL from live feedback, save the policy."),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON metrics.")] = False,
) -> None:
    """Launch a stream of real jobs on this machine and let a scheduler drive them every slot.

    Jobs are real PyTorch training jobs (coordinator, parameter servers, workers over ZeroMQ on
    127.0.0.1); decisions are applied with hot scaling. Faults are repaired as they happen (a
    dead worker or PS replaced, a dead coordinator restarted, a job with no PS or worker left
    relaunched from its last snapshot). Exits 1 if a job failed for good. All processes are
    stopped on exit, Ctrl-C included.
    """
    from dlsched.live.cluster import LiveCluster
    from dlsched.live.job import LiveJobError
    from dlsched.live.models import MODELS
    from dlsched.live.online import make_learning_scheduler, online_learner
    from dlsched.live.run_log import (
        RunLog,
        ended_jobs,
        first_starts,
        load_settings,
        resumed_at,
        save_settings,
    )
    from dlsched.live.stream import make_stream

    with one_line_errors():
        settings: dict[str, Any] = {
            "scheduler": scheduler,
            "jobs": jobs,
            "slot": slot,
            "cores": cores,
            "steps": steps,
            "arrival_gap": arrival_gap,
            "step_sleep": step_sleep,
            "models": models,
            "seed": seed,
            "horizon": horizon,
            "snapshot_every": snapshot_every,
            "heartbeat_timeout": heartbeat_timeout,
            "learn": learn,
        }
        if resume is not None:
            if out_dir is not None and out_dir.resolve() != resume.resolve():
                raise ValueError("--resume OUT writes to OUT: leave --out out")
            settings.update(load_settings(resume))
            out_dir = resume
            if settings["learn"]:
                raise ValueError("--resume: a run with --learn cannot be resumed")
        names = tuple(m.strip() for m in str(settings["models"]).split(",") if m.strip())
        unknown = [m for m in names if m not in MODELS]
        if not names or unknown:
            raise ValueError(
                f"--models: unknown {unknown or 'none given'}; choose from {sorted(MODELS)}"
            )
        name = str(settings["scheduler"])
        policy = make_learning_scheduler(name) if learn else make_scheduler(name)
        learner = online_learner(policy, out_dir) if learn else None
        requests = make_stream(
            int(settings["jobs"]),
            seed=int(settings["seed"]),
            cores=int(settings["cores"]),
            steps=int(settings["steps"]),
            arrival_gap_s=float(settings["arrival_gap"]),
            step_sleep_s=float(settings["step_sleep"]),
            models=names,
            snapshot_every=int(settings["snapshot_every"]),
            heartbeat_timeout_s=float(settings["heartbeat_timeout"]),
        )
        run_log = None
        if out_dir is not None:
            run_log = RunLog(out_dir, resume=resume is not None)
            if resume is None:
                save_settings(out_dir, settings)
        view = Live(console=err, auto_refresh=False, transient=False)
        cluster = LiveCluster(
            requests,
            policy,
            slot_s=float(settings["slot"]),
            cores=int(settings["cores"]),
            seed=int(settings["seed"]),
            horizon_s=settings["horizon"],
            workdir=None if run_log is None else run_log.work_dir,
            on_slot=lambda snap: view.update(render(snap, policy.name), refresh=True),
            on_decision=learner.observe if learner is not None else None,
            run_log=run_log,
            params_dir=None if out_dir is None else out_dir / "params",
            time_offset_s=0.0 if resume is None else resumed_at(resume),
        )
        if resume is not None:
            cluster.adopt(ended_jobs(resume), first_starts(resume))
        try:
            with _sigterm_as_interrupt(), view:
                result = cluster.run()
            if not err.is_terminal:
                err.print()
        except KeyboardInterrupt:
            if not err.is_terminal:
                err.print()
            cluster.close()
            left = cluster.alive_pids()
            kept = f"; continue with --resume {out_dir}" if out_dir is not None else ""
            err.print(f"interrupted: every job stopped ({len(left)} processes left){kept}")
            raise typer.Exit(130) from None
        except LiveJobError as exc:
            raise ValueError(f"live run: {exc}") from None
        summary = clean(result.summary())
        summary.update(cluster.counts())
        summary["scaling_actions"] = len(cluster.events)
        summary["complete"] = True
        if learner is not None:
            summary["policy"] = str(learner.save())
        if run_log is not None:
            run_log.summary(summary)
            shutil.rmtree(run_log.work_dir, ignore_errors=True)  # the run is complete
    failed = int(summary["failed"])
    if json_out:
        print(json.dumps(summary))
    else:
        _print_summary(summary, int(settings["jobs"]))
        if out_dir is not None:
            err.print(f"wrote {out_dir}/summary.json, jobs.csv, scaling_events.csv")
    if failed:
        err.print(f"{failed} job(s) failed: see the status and error columns of jobs.csv")
        raise typer.Exit(1)


def _print_summary(summary: dict[str, Any], jobs: int) -> None:
    table = Table(title=f"live · {summary['scheduler']} · {summary['finished']}/{jobs} jobs")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        if key in ("workload", "scheduler", "seed"):
            continue
        shown = fmt_metric(key, value) if isinstance(value, float) else str(value)
        table.add_row(key, shown)
    out.print(table)
