"""``--report`` and ``--events-out`` of ``simulate``, ``compare``, ``reproduce`` and ``live run``
(``k8s run`` has its own, `dlsched.commands.k8s`), and ``dlsched report``: the interactive HTML
page of runs (`dlsched.report`) and their event logs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dlsched.commands import common
from dlsched.commands.common import one_line_errors

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
        common.err.print(f"wrote {report}", markup=False, emoji=False, highlight=False)


@contextmanager
def reproduce_report(report: Path | None, title: str) -> Iterator[list[Path]]:
    """Around an experiment: with ``report``, keep every run it simulates (in this process,
    and its comparisons' runs in worker processes: `dlsched.runner.keeping_runs`) and draw
    them, labelled scheduler · workload when it ran several workloads; the paths written (the
    experiment's, then the page) are the list yielded."""
    written: list[Path] = []
    if report is None:
        yield written
        return
    from dlsched.report import check_report_path, report_results
    from dlsched.runner import keeping_runs

    check_report_path(report, "--report")
    with keeping_runs() as kept:
        yield written
    if not kept:
        raise ValueError("--report: the experiment simulated nothing in this process to draw")
    if len({r.workload for r in kept}) > 1:
        for r in kept:
            r.scheduler = f"{r.scheduler} · {r.workload}"
    note = (f"The {len(kept)} runs this experiment simulated (in this process, and its "
            "comparisons' runs in worker processes); training rollouts are not drawn.")  # fmt: skip
    written.append(report_results(kept, report, title, [note]))


def report(
    source: Annotated[
        Path,
        typer.Argument(
            help="An event log (.csv or .parquet, from --events-out), a per-job table (from "
            "--jobs-out: one bar a job, no allocation changes), or a run folder holding "
            "events.csv/.parquet and maybe jobs.csv (live run --out)."
        ),
    ],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="The .html file to write.")] = Path(
        "report.html"
    ),
    jobs: Annotated[
        Path | None,
        typer.Option(help="A per-job table of the same runs (--jobs-out): slowdown and model."),
    ] = None,
    title: Annotated[
        str | None, typer.Option(help="The page's title [default: the file's].")
    ] = None,
) -> None:
    """Draw runs written earlier as one self-contained interactive HTML page."""
    from dlsched.report import check_report_path, render
    from dlsched.report.page import write_page
    from dlsched.report.read import is_event_log, read_runs, runs_from_jobs, with_jobs

    with one_line_errors():
        check_report_path(out_path, "--out")
        notes = []
        if source.is_dir():
            names = ("events.parquet", "events.csv", "jobs.parquet", "jobs.csv")
            found = [source / n for n in names if (source / n).is_file()]
            if not found:
                raise ValueError(f"{source}: no events.csv, events.parquet or jobs.csv here")
            source = found[0]
            beside = [p for p in found[1:] if p.stem == "jobs"]
            jobs = jobs or (beside[0] if beside and source.stem == "events" else None)
        if not source.is_file():
            raise ValueError(f"{source}: no such event log or jobs file")
        if is_event_log(source):
            runs = read_runs(source)
            if jobs is not None:
                runs = with_jobs(runs, jobs)
        else:
            runs = runs_from_jobs(source)
            notes.append(
                "Drawn from a per-job table: one bar a job from its first start to its finish "
                "(no rescales, preemptions or servers: write --events-out for those)."
            )
        page = render(title or f"{source.name}", runs, notes=notes)
        write_page(out_path, page, "--out")
    common.err.print(f"wrote {out_path}", markup=False, emoji=False, highlight=False)
