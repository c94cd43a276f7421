"""Interactive HTML reports of runs: one self-contained file (``--report FILE.html`` on
``simulate``, ``compare``, ``reproduce`` and ``live run``; ``dlsched report EVENTS|JOBS|RUN_DIR``
for runs written earlier) with the schedule timeline, utilisation, queue and fragmentation over
time, JCT and slowdown CDFs, per-scheduler means with 95 % intervals, a sortable, filterable job
table and, for DL2 and DeepRM, the decision view (`dlsched.rl.decision_trace`); and the live
dashboard serving the same page as a run goes (`dlsched.report.dashboard`).

Everything the page shows comes from the runs' event logs (`dlsched.sim.event_log`), plus the
simulator's records (slowdown), timeline (fragmentation) and decision trace where the run is at
hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dlsched.report.data import RunInput
from dlsched.report.page import MEAN_METRICS, render, run_metrics, write_page
from dlsched.sim.result import Result

MAX_DRAWN = 12
"""Runs a page draws in full (timeline, series, job table); the means take every run."""

__all__ = [
    "RunInput",
    "check_report_path",
    "render",
    "report_results",
    "run_input",
    "run_metrics",
]


def check_report_path(path: str | Path, option: str = "--report") -> Path:
    """``path`` if it ends in .html and is not a folder; ValueError naming ``option`` if not."""
    path = Path(path)
    if path.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"{option}: {str(path)!r} must end in .html")
    if path.is_dir():
        raise ValueError(f"{option}: {str(path)!r} is a folder, give a file name")
    return path


def run_input(result: Result) -> RunInput:
    """What the report reads of a simulated run (recorded with ``record_events=True``)."""
    if result.event_log is None:
        raise ValueError(f"{result.scheduler} seed {result.seed}: the run kept no event log")
    return RunInput(
        workload=result.workload,
        scheduler=result.scheduler,
        seed=result.seed,
        log=result.event_log,
        trace_ids=result.params.get("trace_ids") or {},
        records=result.records,
        timeline=result.timeline,
        jct_bound_s=result.jct_bound_s,
        decisions=result.decision_trace,
    )


def report_results(
    results: Sequence[Result], path: str | Path, title: str, notes: Sequence[str] = ()
) -> Path:
    """Write the page of ``results`` to ``path``: the first seed of each scheduler drawn in
    full, every run in the means (their summaries); ``notes`` shown first on the page."""
    drawn: dict[str, Result] = {}
    for result in results:
        drawn.setdefault(result.scheduler, result)
    seeds = sorted({r.seed for r in results})
    notes = list(notes)
    if len(drawn) > MAX_DRAWN:
        notes.append(f"{len(drawn)} schedulers (or scheduler × workload): the first {MAX_DRAWN} "
                     "are drawn, every one is in the means.")  # fmt: skip
        drawn = dict(list(drawn.items())[:MAX_DRAWN])
    if len(seeds) > 1:
        notes.append(
            f"Timelines, series, CDFs and job tables: the first seed of each scheduler; "
            f"means over all {len(seeds)} seeds ({', '.join(map(str, seeds[:10]))}"
            f"{', …' if len(seeds) > 10 else ''})."
        )
    per_run = [(r.scheduler, _summary_metrics(r)) for r in results]
    html = render(title, [run_input(r) for r in drawn.values()], per_run, notes)
    return write_page(path, html)


def _summary_metrics(result: Result) -> dict[str, float]:
    summary = result.summary()
    return {k: summary[k] for k in MEAN_METRICS}
