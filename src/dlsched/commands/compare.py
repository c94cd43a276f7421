"""``dlsched compare``: several schedulers over seeds, means with 95 % confidence intervals; a
table (or JSON), a bar chart, per-job and per-scheduler CSV files."""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from dlsched.cli_args import MAX_SEED, MAX_SEEDS, MAX_WORKERS
from dlsched.commands.common import (
    GPU_METRICS,
    clean,
    err,
    fmt_metric,
    metric_unit,
    one_line_errors,
    out,
    progress_bar,
    run_notes,
)
from dlsched.commands.config_options import Section, with_sections
from dlsched.commands.experiment import experiment_file, scheduler_specs
from dlsched.commands.options import (
    EventsOutOpt,
    JobsOutOpt,
    JsonOpt,
    LoadOpt,
    NoiseOpt,
    OnBadRowOpt,
    OptionOpt,
    PlacementOpt,
    PlotOpt,
    ReportOpt,
    ServersOpt,
    WorkloadOpt,
    workload_options,
)
from dlsched.commands.paths import check_outputs, workload_inputs
from dlsched.option_fields import Opt
from dlsched.workloads.traces.options import TraceOptions

if TYPE_CHECKING:  # SciPy comes with it: imported only when the command runs
    from dlsched.experiments.compare import Summary
    from dlsched.sim import Result


@dataclass(frozen=True)
class CompareOptions:
    """``dlsched compare``'s options beyond the workload and scheduler ones: what to show, where
    to write the summary and where to run."""

    metric: str | None = None
    """Comma-separated summary fields to show (any key of simulate --json, e.g.
    p95_jct_s,jain_fairness); the plot shows the first (default: avg and p95 JCT, JCT ÷ bound,
    makespan, slowdown, wait, GPU util)."""
    log_scale: Annotated[bool, Opt(flags=("--log-scale",))] = False
    """--plot: logarithmic value and JCT axes."""
    summary_out: Path | None = None
    """Write one row per scheduler (runs, mean and 95 % CI half-width of every summary field)
    to this .csv file, e.g. beside --jobs-out."""
    workers: Annotated[int, Opt(min=1, max=MAX_WORKERS)] = 1
    """Local processes running the scheduler × seed runs; same results as 1."""
    dask: str | None = None
    """Run the runs on a Dask cluster: its scheduler address (tcp://host:8786) or 'local' (one
    started on this machine); same results. Needs dlsched[dask]."""


@experiment_file("compare")
@with_sections(trace=Section(TraceOptions), more=Section(CompareOptions))
def compare(
    workload: WorkloadOpt = "dl2",
    schedulers: Annotated[
        str,
        typer.Option(
            help="Comma-separated scheduler names, NAME=SPEC to name one "
            "(mine=sched2:runs/mine/policy.pt), a variant named in --experiment, or 'all' "
            "(every scheduler made for the workload, and the variants)."
        ),
    ] = "fifo,drf",
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
    report: ReportOpt = None,
    events_out: EventsOutOpt = None,
    *,
    trace: TraceOptions,
    more: CompareOptions,
    variants: Mapping[str, str],
) -> None:
    """Compare schedulers over seeds: means with 95 % confidence intervals."""
    from dlsched.cli_args import parse_seed_list
    from dlsched.commands.report import write_run_outputs
    from dlsched.experiments.compare import METRICS, QUEUEING_AND_FAIRNESS, run_grid, summarise
    from dlsched.schedulers.registry import make_scheduler
    from dlsched.sim.jobs_table import write_jobs

    with one_line_errors(hold_warnings=True):
        _check_outputs(workload, jobs_out, plot, more, report, events_out)
        pairs = scheduler_specs(_scheduler_names(schedulers, workload, variants), variants)
        seed_list = parse_seed_list(seeds)
        for _, spec in pairs:
            make_scheduler(spec)  # fail fast on unknown names, before any run
        options: dict[str, Any] = dict(servers=servers, load=load, placement=placement, noise=noise)
        options.update(workload_options(option, on_bad_row, trace))
        options["record_events"] = report is not None or events_out is not None
        with progress_bar(transient=True) as progress:
            task = progress.add_task(escape(workload), total=len(pairs) * len(seed_list))
            results = run_grid(
                workload,
                [spec for _, spec in pairs],
                seed_list,
                workers=more.workers,
                dask=more.dask,
                on_run=lambda r: progress.advance(task),
                **options,
            )
        _relabel(results, pairs)
        metrics = METRICS if more.metric is None else _metrics(more.metric, results)
        rows = summarise(results, _metrics(None, results))
        if jobs_out is not None:
            write_jobs(results, jobs_out, "--jobs-out")
        if more.summary_out is not None:
            write_summary(rows, more.summary_out)
        if plot is not None:
            _plot(rows, plot, metrics[0], f"{workload}, seeds {seeds}", more.log_scale, results)
        write_run_outputs(results, report, events_out, f"{workload} · seeds {seeds}")
    if json_out:
        print(json.dumps([clean(r.summary()) for r in results]))
        return
    title = f"{workload} · seeds {seeds}"
    out.print(comparison_table(rows, metrics, title, results[0].params))
    if more.metric is None:  # a second table: the first fits 80 columns
        title += " · queueing and fairness"
        out.print(comparison_table(rows, QUEUEING_AND_FAIRNESS, title, results[0].params))
    for path in (plot, more.summary_out):
        if path is not None:
            err.print(f"wrote {path}", markup=False, emoji=False, highlight=False)


def _check_outputs(
    workload: str,
    jobs_out: Path | None,
    plot: Path | None,
    more: CompareOptions,
    report: Path | None = None,
    events_out: Path | None = None,
) -> None:
    """`ValueError` for an output that would replace an input, or a bad ``--summary-out``,
    ``--jobs-out``, ``--report``, ``--events-out``, or both ``--workers`` and ``--dask``: before
    any run."""
    from dlsched.commands.report import check_run_outputs
    from dlsched.sim.jobs_table import check_jobs_path

    outputs = {"--jobs-out": jobs_out, "--plot": plot, "--summary-out": more.summary_out}
    outputs |= {"--report": report, "--events-out": events_out}
    check_outputs(outputs, workload_inputs(workload))
    check_run_outputs(report, events_out)
    if jobs_out is not None:
        check_jobs_path(jobs_out, "--jobs-out")
    if more.summary_out is not None and more.summary_out.suffix.lower() != ".csv":
        raise ValueError(f"--summary-out: {str(more.summary_out)!r} must end in .csv")
    if more.dask is not None and more.workers > 1:
        raise ValueError("give --workers or --dask, not both")


def _plot(
    rows: Sequence[Summary],
    path: Path,
    metric: str,
    title: str,
    log: bool,
    results: Sequence[Result],
) -> None:
    from dlsched.experiments.plots import plot_comparison

    plot_comparison(rows, path, metric=metric, title=title, log=log, results=results)


def _scheduler_names(text: str, workload: str, variants: Mapping[str, str]) -> list[str]:
    """``--schedulers``' names, each once (``all``: every scheduler made for ``workload``'s
    family, then the variants); ValueError for none or a repeated one."""
    names = [s.strip() for s in text.split(",") if s.strip()]
    if names == ["all"]:
        from dlsched.schedulers.registry import made_for, schedulers

        family = workload.partition(":")[0]
        fits = [n for n in schedulers() if made_for(n) is None or family in (made_for(n) or ())]
        return fits + [v for v in variants if v not in fits]
    if not names:
        raise ValueError("--schedulers: give at least one name")
    repeated = [name for name, n in Counter(names).items() if n > 1]
    if repeated:
        raise ValueError(f"--schedulers: {repeated[0]!r} given twice")
    return names


def _relabel(results: Sequence[Result], pairs: Sequence[tuple[str, str]]) -> None:
    """Name each result by its label (`run_grid` returns seed by seed, schedulers in order)."""
    for k, result in enumerate(results):
        label, spec = pairs[k % len(pairs)]
        if label != spec:
            result.scheduler = label


def _metrics(text: str | None, results: Sequence[Result]) -> tuple[str, ...]:
    """``--metric``'s fields (None: every numeric summary field), checked against the runs'."""
    first = results[0].summary()
    numeric = tuple(k for k, v in first.items() if isinstance(v, int | float) and k != "seed")
    if text is None:
        return numeric
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    for name in names:
        if name not in numeric:
            raise ValueError(f"--metric: {name!r} is not a summary field; choose from "
                             f"{', '.join(numeric)}")  # fmt: skip
    return names


def write_summary(rows: Sequence[Summary], path: Path) -> None:
    """One CSV row per scheduler: runs, jobs left, then each field's mean and CI half-width."""
    metrics = list(rows[0].mean) if rows else []
    header = ["scheduler", "runs", "unfinished"]
    header += [f"{m}_{part}" for m in metrics for part in ("mean", "ci95")]
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for row in rows:
            cells: list[object] = [row.scheduler, row.runs, row.unfinished]
            cells += [x for m in metrics for x in (row.mean[m], row.ci95[m])]
            writer.writerow(cells)


_HEADERS = {
    "avg_jct_s": "avg\nJCT",
    "jct_over_bound": "JCT\n÷\nbound",
    "p95_jct_s": "p95\nJCT",
    "makespan_s": "make-\nspan",
    "avg_slowdown": "avg\nslow-\ndown",
    "avg_wait_s": "avg\nwait",
    "avg_queued_s": "avg\nqueued,\npre-\nemptions\nin",
    "gpu_util": "GPU\nutil",
    "avg_ftf_rho": "avg\nfinish-\ntime\nfairness\nρ",
    "max_ftf_rho": "worst\nfinish-\ntime\nfairness\nρ",
    "user_fairness": "Jain's\nindex\nover\nusers'\nslowdown",
    "worst_user_slowdown": "worst\nuser's\nslowdown",
}


def comparison_table(
    rows: Sequence[Summary], metrics: Sequence[str], title: str, params: Mapping[str, Any]
) -> Table:
    """Means with their 95 % CI below (none for one run). Every time column is in whole
    seconds, named in its header, whatever the values (as ``--json``, whose keys end in
    ``_s``), so that the table fits 80 columns. Unfinished jobs get a column only when there
    are any. ``params`` (a run's): GPU columns of a cluster without GPUs are left out, and
    step-based time is said in the caption (`run_notes`)."""
    no_gpus, step_caption = run_notes(params)
    metrics = [m for m in metrics if not (no_gpus and m in GPU_METRICS)]
    show_unfinished = any(row.unfinished for row in rows)
    title += " · mean ± 95 % CI" if any(row.runs > 1 for row in rows) else " · one run each"
    table = Table(title=Text(title), box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
    table.add_column("scheduler", no_wrap=True)
    for metric in metrics:
        header = _HEADERS.get(metric, metric)
        unit = metric_unit(metric)
        if unit:
            header += f"\n({unit})"
        table.add_column(header, justify="right")
    if show_unfinished:
        table.add_column("jobs\nleft", justify="right")
    for row in rows:
        cells = []
        for metric in metrics:
            mean, ci = row.mean[metric], row.ci95[metric]
            text = fmt_metric(metric, mean, time_decimals=0)
            if row.runs > 1 and not math.isnan(ci) and not math.isnan(mean):
                text += f"\n± {fmt_metric(metric, ci, time_decimals=0)}"
            cells.append(text)
        if show_unfinished:
            cells.append(str(row.unfinished))
        table.add_row(Text(row.scheduler), *cells)
    notes = [] if show_unfinished else ["every job finished"]
    table.caption = " · ".join(notes + ([step_caption] if step_caption else [])) or None
    return table
