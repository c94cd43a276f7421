"""The ``dlsched`` command: a thin Typer + Rich layer over the Python API (no logic here)."""

from __future__ import annotations

import gc
import json
import logging
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dlsched.cli_args import MAX_HORIZON_S
from dlsched.cli_errors import OneLineErrorsGroup, finite_range
from dlsched.cli_lazy import lazy_group
from dlsched.commands import common
from dlsched.commands.common import GPU_METRICS, escape_markup, progress_bar, run_notes
from dlsched.commands.common import clean as _clean
from dlsched.commands.common import fmt_metric as _fmt_metric
from dlsched.commands.common import metric_unit as _metric_unit
from dlsched.commands.common import one_line_errors as _one_line_errors
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
    SeedOpt,
    ServersOpt,
    WorkloadOpt,
    workload_options,
)
from dlsched.commands.paths import check_outputs, workload_inputs
from dlsched.commands.terminal_width import off_terminal_width as _off_terminal_width
from dlsched.plugins import plugins
from dlsched.when_imported import when_imported
from dlsched.workloads.traces.options import TraceOptions

if TYPE_CHECKING:
    from rich.table import Table

log = logging.getLogger("dlsched.cli")

# Every command but ``simulate`` (``compare``, ``report``, ``list``, ``reproduce``, ``trace info``,
# ``live run``, ``k8s *`` and one ``dlsched train NAME`` per plugin, `dlsched.plugins`) lives next
# to the code it drives and is built only when used (`dlsched.cli_lazy`); their modules import
# only `dlsched.commands.*`, never this module.
app = typer.Typer(
    help="Schedule deep-learning training jobs on GPU clusters: simulate, compare, reproduce.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=lazy_group(
        {
            "simulate": None,  # defined below, in help order
            "compare": "dlsched.commands.compare:compare",
            "report": "dlsched.commands.report:report",
            "list": "dlsched.commands.listing:list_all",
            "reproduce": "dlsched.commands.reproduce:reproduce",
        },
        OneLineErrorsGroup,
    ),
)
trace_app = typer.Typer(
    help="Inspect job traces.",
    no_args_is_help=True,
    cls=lazy_group({"info": "dlsched.commands.trace:trace_info"}),
)
app.add_typer(trace_app, name="trace")
train_app = typer.Typer(
    help="Train a learned scheduler.",
    no_args_is_help=True,
    cls=lazy_group({c.name: c.target for p in plugins() for c in p.train_commands}),
)
app.add_typer(train_app, name="train")
live_app = typer.Typer(
    help="Run real elastic training jobs on this machine.",
    no_args_is_help=True,
    cls=lazy_group({"run": "dlsched.commands.live:live_run"}),
)
app.add_typer(live_app, name="live")
k8s_app = typer.Typer(
    help="Schedule DLJobs on a Kubernetes cluster.",
    no_args_is_help=True,
    cls=lazy_group(
        {"run": "dlsched.commands.k8s:k8s_run", "manifests": "dlsched.commands.k8s:k8s_manifests"}
    ),
)
app.add_typer(k8s_app, name="k8s")


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
@experiment_file("simulate")
@with_sections(trace=Section(TraceOptions))
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
    report: ReportOpt = None,
    events_out: EventsOutOpt = None,
    jobs_csv: Annotated[
        Path | None, typer.Option(hidden=True, help="Deprecated: --jobs-out PATH.csv.")
    ] = None,
    *,
    trace: TraceOptions,
    variants: Mapping[str, str],
) -> None:
    """Simulate one workload under one scheduler and print its metrics.

    LAS runs of at least 2,000 jobs (pack placement, on events or in rounds, no noise) run in a
    compiled LAS core with the same results (the first use compiles it, ~15 s, once per machine;
    before that 16,000) and so do Tiresias runs of 4,000 (45,000); FIFO runs of 20,000 and more in a
    compiled FIFO core (compiled once, ~4-12 s, by a first run of 80,000 jobs and more);
    -o core=python: the simulator, -o core=compiled: the core where it replays; see core.
    """
    import dlsched
    from dlsched.commands.report import write_run_outputs
    from dlsched.experiments.parallel import labelled
    from dlsched.sim.jobs_table import write_jobs

    [(name, spec)] = scheduler_specs([scheduler], variants)
    label = escape_markup(f"{workload} · {name}")
    with _one_line_errors(hold_warnings=True), _job_progress(label) as on_job_finished:
        outputs = {"--jobs-out": jobs_out, "--jobs-csv": jobs_csv, "--plot": plot}
        _check_outputs(workload, outputs | {"--report": report, "--events-out": events_out})
        options = workload_options(option, on_bad_row, trace)
        if horizon is not None and "horizon_s" in options:
            raise ValueError("give the stop time once: --horizon or -o horizon_s, not both")
        result = labelled(
            dlsched.simulate(
                workload,
                spec,
                seed,
                servers=servers,
                load=load,
                placement=placement,
                noise=noise,
                on_job_finished=on_job_finished,
                record_events=report is not None or events_out is not None,
                **{"horizon_s": horizon, **options},
            ),
            spec,
        )
        if name != spec:
            result.scheduler = name
        if jobs_csv is not None:
            write_jobs([result], jobs_csv, "--jobs-csv")
        if jobs_out is not None:
            write_jobs([result], jobs_out, "--jobs-out")
        if plot is not None:
            from dlsched.experiments.plots import plot_run

            plot_run(result, plot)
        write_run_outputs([result], report, events_out, f"{workload} · {name} · seed {seed}")
    summary = _clean(result.summary())
    if json_out:
        print(json.dumps(summary))
        return
    common.out.print(_summary_table(summary, seed, result.params))


def _check_outputs(workload: str, outputs: Mapping[str, Path | None]) -> None:
    """`ValueError` naming the option for an output of ``simulate`` that would replace an
    input or is malformed, before the run; a warning for the deprecated ``--jobs-csv``."""
    from dlsched.commands.report import check_run_outputs
    from dlsched.sim.jobs_table import check_jobs_path

    check_outputs(outputs, workload_inputs(workload))
    check_run_outputs(outputs["--report"], outputs["--events-out"])
    jobs_csv = outputs["--jobs-csv"]
    if jobs_csv is not None:
        log.warning(
            "--jobs-csv is deprecated and will be removed; use --jobs-out %s (the same table)",
            jobs_csv,
        )
        check_jobs_path(jobs_csv, "--jobs-csv")
    if outputs["--jobs-out"] is not None:
        check_jobs_path(outputs["--jobs-out"], "--jobs-out")


def _summary_table(summary: dict[str, Any], seed: int, params: Mapping[str, Any]) -> Table:
    """One run's metrics, one row each, with their units (a dash for what the run cannot
    know or its cluster lacks: GPUs on DeepRM's; a caption for step-based time)."""
    from rich.table import Table
    from rich.text import Text

    title = f"{summary['workload']} · {summary['scheduler']} · seed {seed}"
    no_gpus, caption = run_notes(params)
    table = Table(title=Text(title), min_width=len(title), caption=caption)  # one-line path
    table.add_column("metric", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("unit")
    for key, value in summary.items():
        if key in ("workload", "scheduler", "seed"):
            continue
        shown = _fmt_metric(key, value) if isinstance(value, float) else str(value)
        if value is None or (no_gpus and key in GPU_METRICS):
            shown = "—"
        table.add_row(
            key, Text(shown), "no GPUs" if no_gpus and key in GPU_METRICS else _metric_unit(key)
        )
    return table


def _full_width_help() -> None:
    """Help written to a pipe or file at `OFF_TERMINAL_WIDTH` columns, not wrapped at 80
    (Typer reads ``TERMINAL_WIDTH`` once, at import; it still wins when set). Set when Typer
    imports its Rich help module (`when_imported`), which a run that prints no help skips."""

    def widen(rich_utils: ModuleType) -> None:
        width = _off_terminal_width(sys.stdout.isatty())
        if width is not None and getattr(rich_utils, "MAX_WIDTH", None) is None:
            setattr(rich_utils, "MAX_WIDTH", width)  # noqa: B010 - a module attribute

    when_imported("typer.rich_utils", widen)


def _no_type_on_flags(rich_utils: ModuleType) -> None:
    """Help shows ``--json`` and ``--help`` without a ``<bool>`` value they do not take (Typer
    0.29 prints a type for every option); set when Typer's Rich help module is imported."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich
    if getattr(shown, "dlsched_flags", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag and not self.count else shown(self, ctx)

    display_type_rich.dlsched_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


when_imported("typer.rich_utils", _no_type_on_flags)


def main() -> None:
    """Entry point of the ``dlsched`` script."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    _full_width_help()
    # The objects imports made live as long as the process: out of the collector's
    # generations, no full collection walks them again (one after a FIFO run on Philly
    # walked them for ~25 ms of CPU, issue 34).
    gc.freeze()
    try:
        app()
    except KeyboardInterrupt:
        common.err.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
