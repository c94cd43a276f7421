"""The ``dlsched`` command: a thin Typer + Rich layer over the Python API (no logic here)."""

from __future__ import annotations

import json
import logging
import math
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from dlsched.cli_args import (
    MAX_HORIZON_S,
    MAX_LOAD,
    MAX_NOISE,
    MAX_SEED,
    MAX_SEEDS,
    MAX_SERVERS,
    MAX_WORKERS,
)
from dlsched.cli_errors import OneLineErrorsGroup, finite_range
from dlsched.commands.common import clean as _clean
from dlsched.commands.common import err, out, progress_bar
from dlsched.commands.common import fmt_metric as _fmt_metric
from dlsched.commands.common import metric_unit as _metric_unit
from dlsched.commands.common import off_terminal_width as _off_terminal_width
from dlsched.commands.common import one_line_errors as _one_line_errors
from dlsched.commands.common import parse_options as _parse_options
from dlsched.commands.paths import check_out_folder, check_outputs, workload_inputs
from dlsched.plugins import plugins, resolve
from dlsched.when_imported import when_imported

if TYPE_CHECKING:  # SciPy comes with it: imported only by the commands that need it
    from dlsched.experiments.compare import Summary

log = logging.getLogger("dlsched.cli")

app = typer.Typer(
    help="Schedule deep-learning training jobs on GPU clusters: simulate, compare, reproduce.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=OneLineErrorsGroup,
)
trace_app = typer.Typer(help="Inspect job traces.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")
train_app = typer.Typer(help="Train a learned scheduler.", no_args_is_help=True)
app.add_typer(train_app, name="train")
live_app = typer.Typer(help="Run real elastic training jobs on this machine.", no_args_is_help=True)
app.add_typer(live_app, name="live")
k8s_app = typer.Typer(help="Schedule DLJobs on a Kubernetes cluster.", no_args_is_help=True)
app.add_typer(k8s_app, name="k8s")

WorkloadOpt = Annotated[
    str,
    typer.Option("--workload", "-w", help="dl2, deeprm, sched2, kubeflow, philly[:VC], trace:PATH"),
]
SeedOpt = Annotated[
    int,
    typer.Option(min=0, max=MAX_SEED, help="Seed of the workload generator and the simulator."),
]
ServersOpt = Annotated[
    int | None, typer.Option(min=1, max=MAX_SERVERS, help="Cluster size in servers.")
]
LoadOpt = Annotated[
    float | None,
    typer.Option(
        callback=finite_range(0.0, MAX_LOAD, low_open=True),
        help=f"Arrival-rate multiplier (DeepRM: load), in (0, {MAX_LOAD:g}].",
    ),
]
PlacementOpt = Annotated[
    str | None,
    typer.Option(help="Placement policy: load_balance, pack, gang (default: workload's)."),
]
NoiseOpt = Annotated[
    float | None,
    typer.Option(
        callback=finite_range(0.0, MAX_NOISE),
        help="Relative std of speed noise, in [0, 1] (default: workload's).",
    ),
]
OptionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-o",
        help="Workload generator option KEY=VALUE (repeatable); num_jobs <= 1,000,000; "
        "simulator: horizon_s, interval_s, on_events, restart_s (s per restart).",
    ),
]
OnBadRowOpt = Annotated[
    str | None,
    typer.Option(
        "--on-bad-row",
        help="Trace workloads: fail on the first bad row (default) or skip bad rows (counted).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
PlotOpt = Annotated[Path | None, typer.Option(help="Write a PNG figure to this path.")]
JobsOutOpt = Annotated[
    Path | None,
    typer.Option(
        "--jobs-out",
        help="Write per-job results (trace ID, times in s, GPUs, scheduler, seed) to a .csv "
        "or .parquet file.",
    ),
]


def _workload_options(option: list[str] | None, on_bad_row: str | None) -> dict[str, Any]:
    """Generator options from ``-o KEY=VALUE`` plus ``--on-bad-row``."""
    options = _parse_options(option)
    if on_bad_row is not None:
        if on_bad_row not in ("fail", "skip"):
            raise ValueError(f"--on-bad-row must be 'fail' or 'skip', got {on_bad_row!r}")
        options["on_bad_row"] = on_bad_row
    return options


@contextmanager
def _job_progress(description: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar of finished jobs on stderr (only on a terminal), and its callback."""
    with progress_bar(transient=True) as progress:
        task = progress.add_task(description, total=None)

        def on_job_finished(finished: int, total: int) -> None:
            if finished == 1 or finished == total or finished % max(1, total // 500) == 0:
                progress.update(task, completed=finished, total=total)

        yield on_job_finished


@app.command()
def simulate(
    workload: WorkloadOpt = "dl2",
    scheduler: Annotated[str, typer.Option("--scheduler", "-s", help="Scheduler name.")] = "drf",
    seed: SeedOpt = 0,
    servers: ServersOpt = None,
    load: LoadOpt = None,
    placement: PlacementOpt = None,
    noise: NoiseOpt = None,
    horizon: Annotated[
        float | None,
        typer.Option(
            callback=finite_range(0.0, MAX_HORIZON_S), help="Stop at this time (s), >= 0."
        ),
    ] = None,
    option: OptionOpt = None,
    on_bad_row: OnBadRowOpt = None,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    jobs_out: JobsOutOpt = None,
    jobs_csv: Annotated[
        Path | None, typer.Option(hidden=True, help="Deprecated: --jobs-out PATH.csv.")
    ] = None,
) -> None:
    """Simulate one workload under one scheduler and print its metrics."""
    import dlsched
    from dlsched.experiments.parallel import labelled
    from dlsched.sim.jobs_table import check_jobs_path, write_jobs

    label = escape(f"{workload} · {scheduler}")
    with _one_line_errors(hold_warnings=True), _job_progress(label) as on_job_finished:
        check_outputs(
            {"--jobs-out": jobs_out, "--jobs-csv": jobs_csv, "--plot": plot},
            workload_inputs(workload),
        )
        if jobs_csv is not None:
            log.warning(
                "--jobs-csv is deprecated and will be removed; use --jobs-out %s (the same table)",
                jobs_csv,
            )
            check_jobs_path(jobs_csv, "--jobs-csv")
        if jobs_out is not None:
            check_jobs_path(jobs_out, "--jobs-out")
        options = _workload_options(option, on_bad_row)
        if horizon is not None and "horizon_s" in options:
            raise ValueError("give the stop time once: --horizon or -o horizon_s, not both")
        result = labelled(
            dlsched.simulate(
                workload,
                scheduler,
                seed,
                servers=servers,
                load=load,
                placement=placement,
                noise=noise,
                on_job_finished=on_job_finished,
                **{"horizon_s": horizon, **options},
            ),
            scheduler,
        )
        if jobs_csv is not None:
            write_jobs([result], jobs_csv, "--jobs-csv")
        if jobs_out is not None:
            write_jobs([result], jobs_out, "--jobs-out")
        if plot is not None:
            from dlsched.experiments.plots import plot_run

            plot_run(result, plot)
    summary = _clean(result.summary())
    if json_out:
        print(json.dumps(summary))
        return
    out.print(_summary_table(summary, seed))


def _summary_table(summary: dict[str, Any], seed: int) -> Table:
    """One run's metrics, one row each, with their units."""
    title = f"{summary['workload']} · {summary['scheduler']} · seed {seed}"
    table = Table(title=Text(title), min_width=len(title))  # a long trace path stays one line
    table.add_column("metric", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("unit")
    for key, value in summary.items():
        if key in ("workload", "scheduler", "seed"):
            continue
        shown = _fmt_metric(key, value) if isinstance(value, float) else str(value)
        table.add_row(key, Text(shown), _metric_unit(key))
    return table


@app.command()
def compare(
    workload: WorkloadOpt = "dl2",
    schedulers: Annotated[str, typer.Option(help="Comma-separated scheduler names.")] = "fifo,drf",
    seeds: Annotated[
        str,
        typer.Option(
            help=f"Seeds: 1-10, 1,3,5 or a mix; each in [0, {MAX_SEED}], at most {MAX_SEEDS:,}."
        ),
    ] = "1-5",
    servers: ServersOpt = None,
    load: LoadOpt = None,
    placement: PlacementOpt = None,
    noise: NoiseOpt = None,
    option: OptionOpt = None,
    on_bad_row: OnBadRowOpt = None,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    jobs_out: JobsOutOpt = None,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            max=MAX_WORKERS,
            help="Local processes running the scheduler × seed runs; same results as 1.",
        ),
    ] = 1,
    dask: Annotated[
        str | None,
        typer.Option(
            "--dask",
            help="Run the runs on a Dask cluster: its scheduler address (tcp://host:8786) or "
            "'local' (one started on this machine); same results. Needs dlsched[dask].",
        ),
    ] = None,
) -> None:
    """Compare schedulers over seeds: means with 95 % confidence intervals."""
    from dlsched.cli_args import parse_seed_list
    from dlsched.experiments.compare import METRICS, run_grid, summarise
    from dlsched.schedulers.registry import make_scheduler
    from dlsched.sim.jobs_table import check_jobs_path, write_jobs

    with _one_line_errors(hold_warnings=True):
        check_outputs({"--jobs-out": jobs_out, "--plot": plot}, workload_inputs(workload))
        if jobs_out is not None:
            check_jobs_path(jobs_out, "--jobs-out")
        if dask is not None and workers > 1:
            raise ValueError("give --workers or --dask, not both")
        names = _scheduler_names(schedulers)
        seed_list = parse_seed_list(seeds)
        for name in names:
            make_scheduler(name)  # fail fast on unknown names, before any run
        options: dict[str, Any] = dict(servers=servers, load=load, placement=placement, noise=noise)
        options.update(_workload_options(option, on_bad_row))
        with progress_bar(transient=True) as progress:
            task = progress.add_task(escape(workload), total=len(names) * len(seed_list))
            results = run_grid(
                workload,
                names,
                seed_list,
                workers=workers,
                dask=dask,
                on_run=lambda r: progress.advance(task),
                **options,
            )
        rows = summarise(results)
        if jobs_out is not None:
            write_jobs(results, jobs_out, "--jobs-out")
        if plot is not None:
            from dlsched.experiments.plots import plot_comparison

            plot_comparison(rows, plot, title=f"{workload}: average JCT, seeds {seeds}")
    if json_out:
        print(json.dumps([_clean(r.summary()) for r in results]))
        return
    out.print(_comparison_table(rows, METRICS, f"{workload} · seeds {seeds}"))
    if plot is not None:
        err.print(f"wrote {plot}", markup=False, emoji=False, highlight=False)


def _scheduler_names(text: str) -> list[str]:
    """``--schedulers``' names, each once; ValueError for none or a repeated one."""
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise ValueError("--schedulers: give at least one name")
    repeated = [name for name, n in Counter(names).items() if n > 1]
    if repeated:
        raise ValueError(f"--schedulers: {repeated[0]!r} given twice")
    return names


_HEADERS = {
    "avg_jct_s": "avg\nJCT",
    "jct_over_bound": "JCT\n÷\nbound",
    "p95_jct_s": "p95\nJCT",
    "makespan_s": "make-\nspan",
    "avg_slowdown": "avg\nslow-\ndown",
    "avg_wait_s": "avg\nwait",
    "gpu_util": "GPU\nutil",
}


def _comparison_table(rows: Sequence[Summary], metrics: tuple[str, ...], title: str) -> Table:
    """Means with their 95 % CI below (none for one run). Every time column is in whole
    seconds, named in its header, whatever the values (as ``--json``, whose keys end in
    ``_s``), so that the table fits 80 columns. Unfinished jobs get a column only when there
    are any."""
    show_unfinished = any(row.unfinished for row in rows)
    title += " · mean ± 95 % CI" if any(row.runs > 1 for row in rows) else " · one run each"
    table = Table(title=Text(title), box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
    table.add_column("scheduler", no_wrap=True)
    formats: list[str] = []
    for metric in metrics:
        header = _HEADERS.get(metric, metric)
        unit = _metric_unit(metric)
        if unit:
            header += f"\n({unit})"
        table.add_column(header, justify="right")
        formats.append(metric)
    if show_unfinished:
        table.add_column("jobs\nleft", justify="right")
    for row in rows:
        cells = []
        for metric in formats:
            mean, ci = row.mean[metric], row.ci95[metric]
            text = _fmt_metric(metric, mean, time_decimals=0)
            if row.runs > 1 and not math.isnan(ci) and not math.isnan(mean):
                text += f"\n± {_fmt_metric(metric, ci, time_decimals=0)}"
            cells.append(text)
        if show_unfinished:
            cells.append(str(row.unfinished))
        table.add_row(Text(row.scheduler), *cells)
    if not show_unfinished:
        table.caption = "every job finished"
    return table


@app.command("list")
def list_all() -> None:
    """List workloads, schedulers and experiments."""
    from dlsched.experiments.registry import experiments as all_experiments
    from dlsched.schedulers.registry import schedulers
    from dlsched.workloads.registry import workloads as all_workloads

    workloads = Table(title="workloads")
    workloads.add_column("name", no_wrap=True)
    workloads.add_column("description")
    for w in all_workloads().values():
        workloads.add_row(w.name + (":PATH" if w.name == "trace" else ""), w.description)
    out.print(workloads)
    table = Table(title="schedulers")
    table.add_column("name", no_wrap=True)
    for column in ("setting", "source", "description"):
        table.add_column(column)
    for entry in schedulers().values():
        table.add_row(entry.name, entry.setting, entry.source, entry.description)
    out.print(table)
    experiments = Table(title="experiments (dlsched reproduce NAME)")
    experiments.add_column("name", no_wrap=True)
    experiments.add_column("description")
    for e in all_experiments().values():
        experiments.add_row(e.name, e.description)
    out.print(experiments)


@trace_app.command("info")
def trace_info(
    path: Annotated[str, typer.Argument(help="A CSV/Parquet trace, or philly[:VC].")],
    json_out: JsonOpt = False,
    columns: Annotated[
        str | None, typer.Option(help="Column names: submit_time=submission_time,num_gpus=gpus")
    ] = None,
) -> None:
    """Summarise a trace: jobs, span, GPU-count histogram, duration percentiles."""
    from dataclasses import asdict

    from dlsched.workloads.traces import trace_info as summarise_trace

    with _one_line_errors(hold_warnings=True), err.status("reading the trace") as status:
        info = summarise_trace(
            path, progress=lambda line: status.update(escape(line)), columns=columns
        )
    data = asdict(info)
    if json_out:
        print(json.dumps(data, default=str))
        return
    table = Table(title=Text(f"trace {path}"))
    table.add_column("field")
    table.add_column("value")
    for key, value in data.items():
        if value is None or value == [] or value == {}:
            continue  # undated trace, nothing skipped
        if key in ("first_submit_s", "last_submit_s"):
            shown = f"{value:.0f}"  # as in the file (often a Unix time)
        elif isinstance(value, float):
            shown = f"{_fmt_metric(key, value)} s" if key.endswith("_s") else f"{value:,.1f}"
        elif isinstance(value, bool):
            shown = "yes" if value else "no"
        elif isinstance(value, int):
            shown = f"{value:,}"
        else:
            shown = str(value)
        table.add_row(key, Text(shown))
    out.print(table)


@app.command()
def reproduce(
    name: Annotated[str, typer.Argument(help="Experiment name (see dlsched list).")],
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Output folder, used as given; its parent must exist [default: out/NAME].",
        ),
    ] = None,
    full: Annotated[bool, typer.Option(help="Run the paper's full size (slow).")] = False,
) -> None:
    """Regenerate a paper's table or figure as CSV + PNG + Markdown."""
    from dlsched.experiments.registry import experiments, run_experiment

    with _one_line_errors():
        if out_dir is not None and name in experiments():
            check_out_folder(out_dir, "--out")
        paths = run_experiment(name, out_dir or Path("out") / name, full=full)
    for path in paths:
        out.print(f"wrote {path}", markup=False, emoji=False, highlight=False)


# The commands that live next to the code they drive: ``dlsched live run`` and one
# ``dlsched train NAME`` per plugin (`dlsched.plugins`). Their modules are light (PyTorch is
# imported inside the commands) and import only `dlsched.commands.common`, never this module.
live_app.command("run")(resolve("dlsched.commands.live:live_run"))
k8s_app.command("run")(resolve("dlsched.commands.k8s:k8s_run"))
k8s_app.command("manifests")(resolve("dlsched.commands.k8s:k8s_manifests"))
for _plugin in plugins():
    for _command in _plugin.train_commands:
        train_app.command(_command.name)(resolve(_command.target))


def _full_width_help() -> None:
    """Help written to a pipe or file at `OFF_TERMINAL_WIDTH` columns, not wrapped at 80
    (Typer reads ``TERMINAL_WIDTH`` once, at import; it still wins when set). Set when Typer
    imports its Rich help module (`when_imported`), which a run that prints no help skips."""

    def widen(rich_utils: ModuleType) -> None:
        width = _off_terminal_width(sys.stdout.isatty())
        if width is not None and getattr(rich_utils, "MAX_WIDTH", None) is None:
            setattr(rich_utils, "MAX_WIDTH", width)  # noqa: B010 - a module attribute

    when_imported("typer.rich_utils", widen)


def main() -> None:
    """Entry point of the ``dlsched`` script."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    _full_width_help()
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
