"""``dlsched live run``: a stream of real elastic jobs on this machine, driven by any scheduler."""

from __future__ import annotations

import dataclasses
import json
import shutil
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Group
from rich.live import Live
from rich.table import Table

from dlsched.commands.common import clean, err, fmt_metric, one_line_errors, out
from dlsched.commands.config_options import Section, options_command
from dlsched.option_fields import Opt
from dlsched.schedulers.registry import make_scheduler

if TYPE_CHECKING:  # the live runtime imports PyTorch: only when `live run` runs
    from wsgiref.simple_server import WSGIServer

    from dlsched.live.cluster import LiveCluster
    from dlsched.live.online import OnlineLearner
    from dlsched.live.snapshot import LiveSnapshot
    from dlsched.report.dashboard import Dashboard
    from dlsched.report.data import RunInput
    from dlsched.sim.result import Result as LiveResult

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


@dataclass(frozen=True)
class LiveSettings:
    """The settings of a live run: its options, saved to ``OUT/run.json`` so that
    ``--resume OUT`` runs on with them."""

    scheduler: Annotated[str, Opt(flags=("--scheduler", "-s"))] = "drf"
    """Scheduler name."""
    jobs: Annotated[int, Opt(flags=("--jobs", "-n"), min=1)] = 4
    """Jobs in the stream."""
    slot: Annotated[float, Opt(min=0.01)] = 5.0
    """Seconds between decisions."""
    cores: Annotated[int, Opt(min=1)] = 2
    """CPU cores offered as GPUs."""
    steps: Annotated[int, Opt(min=1)] = 300
    """Mean synchronous steps of a job."""
    arrival_gap: Annotated[float, Opt(min=0.0)] = 2.0
    """Mean seconds between arrivals."""
    step_sleep: Annotated[float, Opt(min=0.0)] = 0.0
    """Seconds each worker sleeps per step (throttle)."""
    models: str = "mlp,cnn,smooth"
    """Comma-separated live models."""
    seed: int = 0
    """Seed of the job stream."""
    horizon: Annotated[float | None, Opt(min=0.0)] = None
    """Stop after this many seconds."""
    snapshot_every: Annotated[int, Opt(min=1)] = SNAPSHOT_EVERY
    """Steps between snapshots of each job (the most a fault makes it redo)."""
    heartbeat_timeout: Annotated[float, Opt(min=0.3)] = HEARTBEAT_TIMEOUT_S
    """Seconds of silence before a worker or PS is declared dead (at least: longer when
    heartbeats come late on a loaded machine)."""
    learn: bool = False
    """dl2 only: continue online RL from live feedback, save the policy."""


@dataclass(frozen=True)
class LiveOutput:
    """Where a live run writes, and how it reports."""

    out: Path | None = None
    """Write summary.json, jobs.csv and scaling_events.csv here, as things happen (and the
    jobs' snapshots to OUT/work until the run is complete)."""
    resume: Path | None = None
    """Continue the killed run whose --out was this folder, with its settings (other options
    are ignored): ended jobs keep their rows, the others go on from their last snapshot."""
    json_out: Annotated[bool, Opt(flags=("--json",))] = False
    """Print JSON metrics."""
    dashboard: str | None = None
    """[HOST:]PORT: serve a live dashboard of the run there (host 127.0.0.1 unless given; port
    0 picks a free one): the report's views updating as the run goes, and Prometheus metrics
    at /metrics. Needs dlsched[dashboard]."""
    metrics_port: Annotated[int, Opt(min=0, max=65535)] = 0
    """Serve Prometheus metrics on 127.0.0.1:PORT/metrics (0: off), as k8s run does: events by
    kind, jobs running and waiting, GPUs held, jobs finished and failed, repairs, steps redone.
    Needs prometheus-client (dlsched[dashboard] or dlsched[k8s])."""
    report: Path | None = None
    """Write an interactive HTML report of the run (timeline, usage, CDFs, job table) to this
    .html file at the end; with --out the run's event log is OUT/events.csv (dlsched report OUT
    draws it again)."""


@options_command(Section(LiveSettings), Section(LiveOutput))
def live_run(settings: LiveSettings, output: LiveOutput) -> None:
    """Launch a stream of real jobs on this machine and let a scheduler drive them every slot.

    Jobs are real PyTorch training jobs (coordinator, parameter servers, workers over ZeroMQ on
    127.0.0.1); decisions are applied with hot scaling. Faults are repaired as they happen (a
    dead worker or PS replaced, a dead coordinator restarted, a job with no PS or worker left
    relaunched from its last snapshot). Exits 1 if a job failed for good. All processes are
    stopped on exit, Ctrl-C included.
    """
    from dlsched.live.job import LiveJobError

    with one_line_errors():
        if output.report is not None:
            from dlsched.report import check_report_path

            check_report_path(output.report, "--report")
        if output.dashboard is not None:
            from dlsched.report.dashboard import parse_address

            parse_address(output.dashboard)  # a bad address before any job starts
        settings, out_dir = _resolve(settings, output)
        names = _model_names(settings.models)
        view = Live(console=err, auto_refresh=False, transient=False)
        cluster, learner = _cluster(settings, names, out_dir, output.resume, view)
        dashboard = _dashboard(cluster, output.dashboard)
        metrics = None
        try:
            metrics = _metrics_server(cluster, output.metrics_port)
            result = _run_in_view(cluster, view, out_dir)
        except LiveJobError as exc:
            raise ValueError(f"live run: {exc}") from None
        finally:
            if dashboard is not None:
                dashboard.stop()
            if metrics is not None:
                metrics.shutdown()
                metrics.server_close()
        summary = _finish(cluster, result, learner)
        _write_report(result, out_dir, output.report)
    failed = int(summary["failed"])
    if output.json_out:
        print(json.dumps(summary))
    else:
        _print_summary(summary, settings.jobs)
        if out_dir is not None:
            err.print(f"wrote {out_dir}/summary.json, jobs.csv, scaling_events.csv, events.csv")
    if failed:
        err.print(f"{failed} job(s) failed: see the status and error columns of jobs.csv")
        raise typer.Exit(1)


def _resolve(settings: LiveSettings, output: LiveOutput) -> tuple[LiveSettings, Path | None]:
    """(the run's settings, its output folder): those of the command line, or with
    ``--resume OUT`` those saved in OUT and OUT itself."""
    from dlsched.live.run_log import load_settings

    resume = output.resume
    if resume is None:
        return settings, output.out
    if output.out is not None and output.out.resolve() != resume.resolve():
        raise ValueError("--resume OUT writes to OUT: leave --out out")
    known = {f.name for f in dataclasses.fields(LiveSettings)}
    saved = {k: v for k, v in load_settings(resume).items() if k in known}
    settings = dataclasses.replace(settings, **saved)
    if settings.learn:
        raise ValueError("--resume: a run with --learn cannot be resumed")
    return settings, resume


def _model_names(models: str) -> tuple[str, ...]:
    """The live models of ``--models`` (`ValueError` naming an unknown one)."""
    from dlsched.live.models import MODELS

    names = tuple(m.strip() for m in models.split(",") if m.strip())
    unknown = [m for m in names if m not in MODELS]
    if not names or unknown:
        raise ValueError(
            f"--models: unknown {unknown or 'none given'}; choose from {sorted(MODELS)}"
        )
    return names


def _cluster(
    settings: LiveSettings,
    names: tuple[str, ...],
    out_dir: Path | None,
    resume: Path | None,
    view: Live,
) -> tuple[LiveCluster, OnlineLearner | None]:
    """The cluster that runs the stream (with the ended jobs of a resumed run), showing each
    slot in ``view``, and the online learner if ``--learn``."""
    from dlsched.live.cluster import LiveCluster
    from dlsched.live.online import make_learning_scheduler, online_learner
    from dlsched.live.run_log import RunLog, ended_jobs, first_starts, resumed_at, save_settings
    from dlsched.live.stream import make_stream

    if settings.learn:
        policy = make_learning_scheduler(settings.scheduler)
        learner = online_learner(policy, out_dir)
    else:
        policy, learner = make_scheduler(settings.scheduler), None
    requests = make_stream(
        settings.jobs,
        seed=settings.seed,
        cores=settings.cores,
        steps=settings.steps,
        arrival_gap_s=settings.arrival_gap,
        step_sleep_s=settings.step_sleep,
        models=names,
        snapshot_every=settings.snapshot_every,
        heartbeat_timeout_s=settings.heartbeat_timeout,
    )
    run_log = None
    if out_dir is not None:
        run_log = RunLog(out_dir, resume=resume is not None)
        if resume is None:
            save_settings(out_dir, dataclasses.asdict(settings))
    cluster = LiveCluster(
        requests,
        policy,
        slot_s=settings.slot,
        cores=settings.cores,
        seed=settings.seed,
        horizon_s=settings.horizon,
        workdir=None if run_log is None else run_log.work_dir,
        on_slot=lambda snap: view.update(render(snap, policy.name), refresh=True),
        on_decision=learner.observe if learner is not None else None,
        run_log=run_log,
        params_dir=None if out_dir is None else out_dir / "params",
        time_offset_s=0.0 if resume is None else resumed_at(resume),
    )
    if resume is not None:
        cluster.adopt(ended_jobs(resume), first_starts(resume))
    return cluster, learner


def _run_in_view(cluster: LiveCluster, view: Live, out_dir: Path | None) -> LiveResult:
    """Run the stream to its end in the live ``view``; on Ctrl-C or SIGTERM stop every job
    and exit 130."""
    try:
        with _sigterm_as_interrupt(), view:
            result = cluster.run()
        if not err.is_terminal:
            err.print()
        return result
    except KeyboardInterrupt:
        if not err.is_terminal:
            err.print()
        cluster.close()
        left = cluster.alive_pids()
        kept = f"; continue with --resume {out_dir}" if out_dir is not None else ""
        err.print(f"interrupted: every job stopped ({len(left)} processes left){kept}")
        raise typer.Exit(130) from None


def _finish(
    cluster: LiveCluster, result: LiveResult, learner: OnlineLearner | None
) -> dict[str, Any]:
    """The run's summary, with the policy learned online saved; written to ``--out`` (whose
    snapshots are then no longer needed)."""
    summary = clean(result.summary())
    summary.update(cluster.counts())
    summary["scaling_actions"] = len(cluster.events)
    summary["complete"] = True
    if learner is not None:
        summary["policy"] = str(learner.save())
    if cluster.run_log is not None:
        cluster.run_log.summary(summary)
        shutil.rmtree(cluster.run_log.work_dir, ignore_errors=True)  # the run is complete
    return summary


def _dashboard(cluster: LiveCluster, address: str | None) -> Dashboard | None:
    """The dashboard of ``cluster``'s run, serving at ``address`` ([HOST:]PORT), if given."""
    if address is None:
        return None
    from importlib.util import find_spec

    if find_spec("starlette") is None or find_spec("uvicorn") is None:
        raise ValueError("--dashboard needs the dashboard extra: pip install 'dlsched[dashboard]'")
    from dlsched.report.dashboard import Dashboard, parse_address

    dashboard = Dashboard(_run_source(cluster), *parse_address(address)).start()
    err.print(f"dashboard: {dashboard.url}", markup=False, emoji=False, highlight=False)
    return dashboard


def _run_source(cluster: LiveCluster) -> Callable[[], RunInput]:
    """The run of ``cluster`` as it stands, for the dashboard and the metrics."""
    from dlsched.report.data import RunInput

    def source() -> RunInput:
        log = cluster.event_log
        return RunInput("live", cluster.scheduler.name, cluster.seed, log, {}, now_s=log.clock())

    return source


def _metrics_server(cluster: LiveCluster, port: int) -> WSGIServer | None:
    """Prometheus metrics of ``cluster``'s run served on 127.0.0.1:``port`` (None if 0)."""
    if not port:
        return None
    from importlib.util import find_spec

    if find_spec("prometheus_client") is None:
        raise ValueError("--metrics-port needs prometheus-client: pip install 'dlsched[dashboard]'")
    from dlsched.report.metrics import registry, serve

    server = serve(registry(_run_source(cluster), cluster.counts), port)
    err.print(f"metrics: http://127.0.0.1:{server.server_address[1]}/metrics", markup=False,
              emoji=False, highlight=False)  # fmt: skip
    return server


def _write_report(result: LiveResult, out_dir: Path | None, report: Path | None) -> None:
    """The run's event log to ``out_dir/events.csv`` and its page to ``report`` (each if
    given)."""
    from dlsched.commands.report import write_run_outputs

    events = None if out_dir is None else out_dir / "events.csv"
    write_run_outputs([result], report, events, f"live · {result.scheduler} · seed {result.seed}")


def _print_summary(summary: dict[str, Any], jobs: int) -> None:
    table = Table(title=f"live · {summary['scheduler']} · {summary['finished']}/{jobs} jobs")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        if key in ("workload", "scheduler", "seed"):
            continue
        shown = fmt_metric(key, value) if isinstance(value, float) else str(value)
        table.add_row(key, "—" if value is None else shown)  # not known here (no bound live)
    out.print(table)
