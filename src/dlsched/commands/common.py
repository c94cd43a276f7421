"""What the CLI's commands share: the consoles, one-line errors, option parsing, progress bars.

`dlsched.cli` and every command module (``dlsched/commands/live.py``, each paper's
``command.py``) import these from here, so no command module imports `dlsched.cli` (which adds
the commands to its Typer apps): the import graph has no cycle.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

from dlsched.cli_args import parse_options as parse_cli_options
from dlsched.cli_errors import print_error

__all__ = [
    "clean",
    "err",
    "fmt_metric",
    "metric_unit",
    "one_line_errors",
    "out",
    "parse_options",
    "progress_bar",
]

OFF_TERMINAL_WIDTH = 200
"""Columns of tables and help written to a pipe or file: Rich's 80-column default cut names
(``tetris-star:KNO…``) and wrapped help there. ``COLUMNS`` (or ``TERMINAL_WIDTH`` for help)
still wins when set."""


def off_terminal_width(stream_is_terminal: bool) -> int | None:
    """The width for output that does not go to a terminal (None: Rich's own choice)."""
    if stream_is_terminal or os.environ.get("COLUMNS"):
        return None
    return OFF_TERMINAL_WIDTH


def _console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    width = off_terminal_width(console.is_terminal)
    if width is not None:
        console.width = width
    return console


out = _console()
err = _console(stderr=True)


@contextmanager
def one_line_errors() -> Iterator[None]:
    """Turn expected failures into a one-line message and exit code 2, never a traceback."""
    from dlsched.sim import SimulationStalled

    try:
        yield
    except (ValueError, OSError, KeyError, SimulationStalled) as exc:
        print_error(str(exc) or type(exc).__name__, err)
        raise typer.Exit(2) from None


def parse_options(options: list[str] | None) -> dict[str, Any]:
    """``-o KEY=VALUE`` items, typed and bounded (`dlsched.cli_args.parse_options`)."""
    return parse_cli_options(options)


def clean(obj: dict[str, Any]) -> dict[str, Any]:
    """JSON-safe: NaN and infinities become null."""
    return {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in obj.items()
    }


def metric_unit(name: str) -> str:
    """A metric's unit in tables: seconds for every ``*_s`` key (as in ``--json``), else none."""
    return "s" if name.endswith("_s") else ""


def fmt_metric(name: str, value: float) -> str:
    """``value`` in `metric_unit` (never a unit chosen from the value): times in seconds with
    thousands separators and 0.1 s, other metrics to three decimals; NaN as a dash."""
    if math.isnan(value):
        return "—"
    if name.endswith("_s"):
        return f"{value:,.1f}"
    return f"{value:.3f}"


def progress_bar(
    *extra: ProgressColumn, label: str = "{task.description}", transient: bool = False
) -> Progress:
    """The CLI's progress bar on stderr: label, bar, done/total, elapsed, then ``extra``
    columns. Disabled when stderr is not a terminal (pipes and CI get no control codes)."""
    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        *extra,
        console=err,
        transient=transient,
        disable=not err.is_terminal,
    )
