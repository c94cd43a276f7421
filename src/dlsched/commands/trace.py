"""``dlsched trace info``: a trace's summary (built on first use, `dlsched.cli_lazy`)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from dlsched.commands import common
from dlsched.commands.common import fmt_metric as _fmt_metric
from dlsched.commands.common import one_line_errors as _one_line_errors
from dlsched.commands.config_options import Section, with_sections
from dlsched.commands.experiment import experiment_file
from dlsched.commands.options import JsonOpt
from dlsched.workloads.traces.options import TraceOptions


@experiment_file("trace")
@with_sections(trace=Section(TraceOptions))
def trace_info(
    path: Annotated[
        str | None,
        typer.Argument(help="A CSV/Parquet trace, or philly[:VC] (default: --experiment's)."),
    ] = None,
    json_out: JsonOpt = False,
    workload: Annotated[str | None, typer.Option(hidden=True)] = None,  # --experiment's trace
    *,
    trace: TraceOptions,
) -> None:
    """Summarise a trace: jobs, span, GPU-count histogram, duration percentiles."""
    from dataclasses import asdict

    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from dlsched.workloads.traces import trace_info as summarise_trace

    path = path or workload
    if path is None:
        with _one_line_errors():
            raise ValueError("trace info: give a trace PATH (or an --experiment with a workload)")
    with _one_line_errors(hold_warnings=True), common.err.status("reading the trace") as status:
        info = summarise_trace(
            path, progress=lambda line: status.update(escape(line)), **trace.given()
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
    common.out.print(table)
