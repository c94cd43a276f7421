"""The width of CLI output that does not go to a terminal, shared by the Rich consoles
(`dlsched.commands.consoles`) and the help formatter (`dlsched.cli`) without importing Rich."""

from __future__ import annotations

import os

OFF_TERMINAL_WIDTH = 200
"""Columns of tables and help written to a pipe or file: Rich's 80-column default cut names
(``tetris-star:KNO…``) and wrapped help there. ``COLUMNS`` (or ``TERMINAL_WIDTH`` for help)
still wins when set."""


def off_terminal_width(stream_is_terminal: bool) -> int | None:
    """The width for output that does not go to a terminal (None: Rich's own choice)."""
    if stream_is_terminal or os.environ.get("COLUMNS"):
        return None
    return OFF_TERMINAL_WIDTH
