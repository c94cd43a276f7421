"""What the CLI's commands share: the consoles, one-line errors, option parsing, progress bars.

`dlsched.cli` and every command module (``dlsched/commands/live.py``, each paper's
``command.py``) import these from here, so no command module imports `dlsched.cli` (which adds
the commands to its Typer apps): the import graph has no cycle.
"""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import typer

from dlsched.cli_args import parse_options as parse_cli_options
from dlsched.cli_errors import print_error
from dlsched.commands.progress_lines import LineProgress

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import ProgressColumn

    out: Console
    """The CLI's console on stdout (made on first use, `__getattr__`)."""
    err: Console
    """The CLI's console on stderr (made on first use)."""

__all__ = [
    "ProgressBar",
    "clean",
    "err",
    "escape_markup",
    "fmt_metric",
    "metric_unit",
    "metrics_line",
    "one_line_errors",
    "out",
    "parse_options",
    "progress_bar",
    "run_notes",
]


def __getattr__(name: str) -> Any:
    """``out`` and ``err``, the CLI's Rich consoles on stdout and stderr, made on first use
    (`dlsched.commands.consoles`): a run that prints no table, help or bar imports no Rich."""
    if name in ("out", "err"):
        from dlsched.commands.consoles import console

        return console(stderr=name == "err")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def escape_markup(text: str) -> str:
    """``text`` escaped so that Rich prints it as it is (`rich.markup.escape`), importing Rich
    only when ``text`` has what Rich would escape (a ``[`` or a final backslash)."""
    if "[" not in text and not text.endswith("\\"):
        return text  # what rich.markup.escape returns for it
    from rich.markup import escape

    return escape(text)


@contextmanager
def one_line_errors(hold_warnings: bool = False) -> Iterator[None]:
    """Turn expected failures into a one-line message and exit code 2, never a traceback.

    With ``hold_warnings`` the warnings logged inside (deprecated options, a policy outside
    its setting) are printed when the block succeeds, and left out when it fails: the error is
    then the last and only line on stderr. For commands that end soon; a long one (training,
    a controller) prints its warnings as they come.
    """
    from dlsched.sim import SimulationStalled

    with _held_warnings(hold_warnings) as release:
        try:
            yield
        except (ValueError, OSError, KeyError, SimulationStalled) as exc:
            from dlsched.commands.consoles import console

            print_error(str(exc) or type(exc).__name__, console(stderr=True))
            raise typer.Exit(2) from None
        release()


class _Hold(logging.Handler):
    """Keeps the records it is given, to hand on later."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def _held_warnings(hold: bool) -> Iterator[Callable[[], None]]:
    """While open (and ``hold``), the root logger's stream handlers get no records (Python's
    last-resort stderr handler neither, when the root has no handler); the callable yielded
    hands them the records held so far. Files keep getting every record as it comes."""
    if not hold:
        yield lambda: None
        return
    root = logging.getLogger()
    streams = [h for h in root.handlers if type(h) is logging.StreamHandler]
    targets = streams if root.handlers else [logging.lastResort]
    holder = _Hold()
    for handler in streams:
        root.removeHandler(handler)
    root.addHandler(holder)

    def release() -> None:
        seen: set[tuple[int, str]] = set()
        for record in holder.records:
            key = (record.levelno, record.getMessage())
            if key in seen:  # one per run of a sweep would say the same thing many times
                continue
            seen.add(key)
            for handler in targets:
                if handler is not None and record.levelno >= handler.level:
                    handler.handle(record)
        holder.records.clear()

    try:
        yield release
    finally:
        root.removeHandler(holder)
        for handler in streams:
            root.addHandler(handler)


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


def fmt_metric(name: str, value: float, time_decimals: int = 1) -> str:
    """``value`` in `metric_unit` (never a unit chosen from the value): times in seconds with
    thousands separators and ``time_decimals`` decimals, other metrics to three decimals; NaN
    as a dash."""
    if math.isnan(value):
        return "—"
    if name.endswith("_s"):
        return f"{value:,.{time_decimals}f}"
    return f"{value:.3f}"


GPU_METRICS = frozenset({"gpu_util", "avg_fragmentation"})
"""Metrics that measure GPUs: shown as a dash on a cluster without any (DeepRM's)."""


def run_notes(params: Mapping[str, Any]) -> tuple[bool, str | None]:
    """(whether the workload's servers have no GPUs, a caption for step-based time) from a
    run's ``Result.params``: DeepRM's servers hold only its two abstract resources, and its
    time steps are ``step_s`` seconds each."""
    capacity = params.get("server_capacity")
    no_gpus = isinstance(capacity, tuple | list) and bool(capacity) and capacity[0] == 0
    step = params.get("step_s")
    caption = f"time: 1 step = {step:g} s" if step else None
    return no_gpus, caption


def metrics_line(metrics: Mapping[str, object]) -> str:
    """``{"avg_jct_s": 7015.4, "objective": 2.96}`` → ``avg_jct_s 7,015.4 s · objective 2.960``
    (a command's last line, never a raw Python dict)."""
    parts = []
    for key, value in metrics.items():
        if isinstance(value, int) and not isinstance(value, bool):
            parts.append(f"{key} {value:,}")  # a count
        elif isinstance(value, float):
            unit = metric_unit(key)
            parts.append(f"{key} {fmt_metric(key, float(value))}" + (f" {unit}" if unit else ""))
        else:
            parts.append(f"{key} {value}")
    return " · ".join(parts) or "none"


PROGRESS_LINE_EVERY_S = 30.0
"""Seconds between progress lines when stderr is not a terminal (no live bar there)."""


class ProgressBar(Protocol):
    """What `progress_bar` gives: Rich's `Progress` on a terminal, else a `LineProgress`."""

    def __enter__(self) -> ProgressBar: ...

    def __exit__(self, *exc: Any) -> None: ...

    def add_task(
        self,
        description: str,
        start: bool = True,
        total: float | None = 100.0,
        completed: int = 0,
        visible: bool = True,
        **fields: Any,
    ) -> Any: ...

    def update(
        self,
        task_id: Any,
        *,
        total: float | None = None,
        completed: float | None = None,
        advance: float | None = None,
        description: str | None = None,
        visible: bool | None = None,
        refresh: bool = False,
        **fields: Any,
    ) -> None: ...

    def advance(self, task_id: Any, advance: float = 1) -> None: ...


def progress_bar(
    *extra: ProgressColumn,
    label: str = "{task.description}",
    transient: bool = False,
    every_s: float = PROGRESS_LINE_EVERY_S,
) -> ProgressBar:
    """The CLI's progress bar on stderr: label, bar, done/total, elapsed, then ``extra``
    columns. When stderr is not a terminal (pipes, CI, ``nohup``) there is no bar (no control
    codes) but a plain progress line per task every ``every_s`` seconds (0: none)."""
    if _stderr_may_be_a_terminal():
        from dlsched.commands.consoles import console, live_bar

        if console(stderr=True).is_terminal:
            return live_bar(*extra, label=label, transient=transient)
    return LineProgress(every_s, _print_line)


def _stderr_may_be_a_terminal() -> bool:
    """False only where Rich's console would find stderr is not a terminal: it is no tty and
    neither ``TTY_COMPATIBLE=1`` nor ``FORCE_COLOR`` makes Rich treat it as one."""
    if os.environ.get("TTY_COMPATIBLE") == "1" or os.environ.get("FORCE_COLOR"):
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # no stream, or a closed one
        return False


def _print_line(line: str) -> None:
    """One progress line on the CLI's stderr console, as plain text."""
    from dlsched.commands.consoles import console

    console(stderr=True).print(line, markup=False, highlight=False)
