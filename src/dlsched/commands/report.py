"""``--report`` and ``--events-out`` of ``simulate`` and ``compare``, and ``dlsched report``:
the interactive HTML page of runs (`dlsched.report`) and their event logs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dlsched.commands.common import err, one_line_errors

if TYPE_CHECKING:
    from dlsched.sim import Result


def check_run_outputs(report: Path | None, events_out: Path | None) -> None:
    """ValueError naming the option for a bad ``--report`` or ``--events-out``, before any run."""
    if report is not None:
        from dlsched.report import check_report_path

        check_report_path(report, "--report")
    if events_out is not None:
        from dlsched.sim.jobs_table import check_jobs_path

        check_jobs_path(events_out, "--events-out")


def write_run_outputs(
    results: Sequence[Result], report: Path | None, events_out: Path | None, title: str
) -> None:
    """Write the runs' event log to ``events_out`` and their page to ``report`` (each if given;
    the runs were recorded with ``record_events=True``)."""
    if events_out is not None:
        from dlsched.sim.event_log import write_event_rows

        rows = []
        for r in results:
            if r.event_log is not None:
                rows += r.event_log.rows(r.scheduler, r.seed, r.params.get("trace_ids"))
        try:
            write_event_rows(rows, events_out)
        except OSError as exc:
            raise ValueError(f"--events-out: cannot write {str(events_out)!r}: {exc}") from None
    if report is not None:
        from dlsched.report import report_results

        report_results(results, report, title)
        err.print(f"wrote {report}", markup=False, emoji=False, highlight=False)


def report(
    source: Annotated[
        Path,
        typer.Argument(
            help="An event log (.csv or .parquet, from --events-out), or a folder holding "
            "events.csv or events.parquet."
        ),
    ],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="The .html file to write.")] = Path(
        "report.html"
    ),
    title: Annotated[
        str | None, typer.Option(help="The page's title [default: the file's].")
    ] = None,
) -> None:
    """Draw an event log written earlier as one self-contained interactive HTML page."""
    from dlsched.report import check_report_path, render
    from dlsched.report.page import write_page
    from dlsched.report.read import read_runs

    with one_line_errors():
        check_report_path(out_path, "--out")
        if source.is_dir():
            found = [source / n for n in ("events.parquet", "events.csv") if (source / n).is_file()]
            if not found:
                raise ValueError(f"{source}: no events.csv or events.parquet in this folder")
            source = found[0]
        runs = read_runs(source)
        page = render(title or f"{source.name} · event log", runs)
        write_page(out_path, page, "--out")
    err.print(f"wrote {out_path}", markup=False, emoji=False, highlight=False)
