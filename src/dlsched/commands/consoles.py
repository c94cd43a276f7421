"""The CLI's Rich consoles and live progress bar, imported on first use: Rich costs ~25 ms of
start-up that a command writing no table, no help and no bar does not need (``dlsched simulate
--json`` off a terminal, issue 34). Commands reach them through `dlsched.commands.common`."""

from __future__ import annotations

import functools

from rich.console import Console, ConsoleDimensions
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

from dlsched.commands.terminal_width import off_terminal_width


class _CliConsole(Console):
    """A Rich console `OFF_TERMINAL_WIDTH` wide whenever its stream is not a terminal and no
    width was given (checked at each print: the stream and ``COLUMNS`` may change)."""

    @property
    def size(self) -> ConsoleDimensions:
        dims = super().size
        width = None if self._width is not None else off_terminal_width(self.is_terminal)
        return dims if width is None else ConsoleDimensions(width, dims.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


@functools.cache
def console(stderr: bool) -> Console:
    """The one console on stdout (``out``) or stderr (``err``) of this process."""
    return _CliConsole(stderr=stderr)


def live_bar(*extra: ProgressColumn, label: str, transient: bool) -> Progress:
    """A live bar on stderr, a terminal: label, bar, done/total, elapsed, then ``extra``."""
    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        *extra,
        console=console(stderr=True),
        transient=transient,
    )
