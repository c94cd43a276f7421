"""Options shared by the CLI's commands (``simulate``, ``compare``): their types and help, and
how they become workload options."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from dlsched.cli_args import MAX_LOAD, MAX_NOISE, MAX_SEED, MAX_SERVERS
from dlsched.cli_errors import finite_range
from dlsched.commands.common import parse_options
from dlsched.workloads.traces.options import TraceOptions

WorkloadOpt = Annotated[
    str,
    typer.Option(
        "--workload", "-w", help="dl2, deeprm, sched2, kubeflow, pollux, philly[:VC], trace:PATH"
    ),
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
        "simulator: horizon_s, interval_s, on_events, restart_s (s per restart), "
        "cross_server_slowdown=false, repack=true (move split jobs onto one server), "
        "core=compiled (LAS and FIFO on fixed-GPU traces in a compiled core; says which ran).",
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
ReportOpt = Annotated[
    Path | None,
    typer.Option(
        "--report",
        help="Write an interactive HTML report (schedule timeline, utilisation, queue, CDFs, "
        "job table) to this .html file: one self-contained file that opens offline.",
    ),
]
EventsOutOpt = Annotated[
    Path | None,
    typer.Option(
        "--events-out",
        help="Write the event log (submit/start/rescale/migrate/preempt/finish, time in s, "
        "GPUs per server) to a .csv or .parquet file; `dlsched report` draws it.",
    ),
]
JobsOutOpt = Annotated[
    Path | None,
    typer.Option(
        "--jobs-out",
        help="Write per-job results (trace ID, times in s, GPUs, scheduler, seed) to a .csv "
        "or .parquet file.",
    ),
]


def workload_options(
    option: list[str] | None, on_bad_row: str | None, trace: TraceOptions | None = None
) -> dict[str, Any]:
    """Workload options from ``-o KEY=VALUE``, ``--on-bad-row`` and the trace options (each
    key given once)."""
    options = parse_options(option)
    if on_bad_row is not None:
        if on_bad_row not in ("fail", "skip"):
            raise ValueError(f"--on-bad-row must be 'fail' or 'skip', got {on_bad_row!r}")
        options["on_bad_row"] = on_bad_row
    for key, value in (trace.given() if trace is not None else {}).items():
        if key in options:
            flag = "--" + key.replace("_", "-")
            raise ValueError(f"give {key} once: {flag} or -o {key}, not both")
        options[key] = value
    return options
