"""One-line errors for the ``dlsched`` command, whatever fails: Typer's usage errors (bad
option values, unknown options, missing arguments) and the library's ``ValueError``\\ s.

Every error is one line on stderr, ``error: <message>``, exit code 2 (Typer's own usage boxes are
replaced), and the message is printed as plain text: user text such as ``data/x[/].csv`` or
``deeprm:abc`` is never read as Rich markup or emoji codes.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

if TYPE_CHECKING:
    from rich.console import Console

USAGE_EXIT = 2
"""Exit code of every bad-input error."""

# Typer vendors Click from 0.16 on and exports only some of its exceptions: find the base class
# of Click's errors through one it does export.
_CLICK_ERROR: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)
_ABORT: type[BaseException] = typer.Abort


def print_error(message: str, console: Console | None = None) -> None:
    """``error: <first line of message>`` on stderr, the message as plain text (no markup)."""
    from rich.console import Console  # Rich only on an error (start-up, issue 34)
    from rich.text import Text

    first = message.strip().splitlines()[0] if message.strip() else "failed"
    line = Text.assemble(("error:", "bold red"), " ", first)
    (console or Console(stderr=True)).print(
        line, highlight=False, soft_wrap=True, emoji=False, markup=False
    )


class OneLineErrorsGroup(TyperGroup):
    """The top-level command group: Typer's multi-line usage errors become one line, exit 2."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _CLICK_ERROR as exc:
            code = getattr(exc, "exit_code", USAGE_EXIT)
            if type(exc).__name__ != "NoArgsIsHelpError":  # Typer has printed the help
                print_error(_message(exc))
                code = USAGE_EXIT
            sys.exit(code)
        except _ABORT:
            print_error("aborted")
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)


def _message(exc: Exception) -> str:
    """Click's message, one line; ``Invalid value for '--seed': …`` names the option."""
    format_message: Callable[[], str] | None = getattr(exc, "format_message", None)
    text = format_message() if format_message is not None else str(exc)
    return " ".join(text.split()) + _no_option_o_hint(exc)


def _no_option_o_hint(exc: Exception) -> str:
    """For ``-o KEY=VALUE`` on a command without ``-o`` but with the trace options (``train
    sched2``): where those settings go instead (issue 36)."""
    if type(exc).__name__ != "NoSuchOption" or getattr(exc, "option_name", "") not in (
        "-o",
        "--option",
    ):
        return ""
    ctx = getattr(exc, "ctx", None)
    flags = {flag for p in getattr(ctx and ctx.command, "params", []) for flag in p.opts}
    if "--columns" not in flags:
        return ""
    return (
        " (here a trace's settings are options of their own: --columns NAME=COLUMN,…, "
        "--time-unit, --drop-status, --split …; see --help)"
    )


def finite_range(
    low: float, high: float, *, low_open: bool = False
) -> Callable[[typer.Context, typer.CallbackParam, float | None], float | None]:
    """A Typer option callback refusing NaN, infinities and values outside [low, high] (or
    (low, high] with ``low_open``); Typer's own ``min``/``max`` let NaN through."""
    left = "(" if low_open else "["

    def check(ctx: typer.Context, param: typer.CallbackParam, value: float | None) -> float | None:
        if value is None:
            return None
        too_low = value <= low if low_open else value < low
        if not math.isfinite(value) or too_low or value > high:
            raise typer.BadParameter(
                f"{value} is not a finite number in {left}{low:g}, {high:g}]",
                ctx,
                param,  # type: ignore[arg-type]  # Typer's CallbackParam is the parameter
            )
        return value

    return check
