"""What the argument after ``name:`` may be, per scheduler, checked before the scheduler is built.

Most schedulers take no argument: ``fifo:arg`` is refused instead of being silently ignored.
Numeric arguments must be finite and in range (``deeprm:-5``, ``tiresias:nan`` are refused);
``dl2:PATH``-style arguments must name an existing path (`FileNotFoundError` otherwise).
`ARGUMENTS` lists the built-in schedulers that take one; a plugin's scheduler declares its own
with ``register(..., argument=(WHAT, check))`` (`checkpoint_path` and `load_or_path` are the
checks learned schedulers use). `check_argument` raises a one-line `ValueError` naming the
scheduler and the argument.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from dlsched.cli_args import MAX_LOAD, MAX_SEED

Check = Callable[[str, str], None]
"""``check(name, arg)``: raises ValueError if ``arg`` is not what scheduler ``name`` takes."""

MAX_THRESHOLD = 1e15
"""Largest Tiresias queue threshold, GPU-seconds (about 30 million GPU-years)."""
MAX_TETRIS_THRESHOLD = 1_000_000
"""Largest Tetris fill threshold, tasks."""


def _finite(name: str, arg: str, text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"scheduler {name}:{arg}: {text!r} is not {what}") from None
    if not math.isfinite(value):
        raise ValueError(f"scheduler {name}:{arg}: {text!r} is not {what}")
    return value


def _integer(name: str, arg: str, low: int, high: int, what: str) -> int:
    try:
        value = int(arg)
    except ValueError:
        raise ValueError(f"scheduler {name}:{arg}: expected {what} in [{low}, {high}]") from None
    if not low <= value <= high:
        raise ValueError(f"scheduler {name}:{arg}: expected {what} in [{low}, {high}]")
    return value


def _seed(name: str, arg: str) -> None:
    _integer(name, arg, 0, MAX_SEED, "an integer seed")


def _tetris_threshold(name: str, arg: str) -> None:
    _integer(name, arg, 1, MAX_TETRIS_THRESHOLD, "an integer threshold")


def _unit_knob(name: str, arg: str) -> None:
    value = _finite(name, arg, arg, "a knob in [0, 1]")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"scheduler {name}:{arg}: the knob must be a number in [0, 1]")


def _thresholds(name: str, arg: str) -> None:
    what = f"a GPU-second threshold in (0, {MAX_THRESHOLD:g}]"
    values = [_finite(name, arg, part, what) for part in arg.split(",")]
    if any(not 0.0 < v <= MAX_THRESHOLD for v in values):
        raise ValueError(f"scheduler {name}:{arg}: every threshold must be {what[2:]}")
    if values != sorted(values) or len(set(values)) != len(values):
        raise ValueError(f"scheduler {name}:{arg}: thresholds must be increasing")


def checkpoint_path(name: str, arg: str) -> None:
    """``NAME:PATH``: PATH must exist (FileNotFoundError otherwise)."""
    if not Path(arg).expanduser().exists():
        raise FileNotFoundError(f"scheduler {name}:{arg}: no such checkpoint directory")


def load_or_path(name: str, arg: str) -> None:
    """``NAME:PATH`` or ``NAME:LOAD``: an existing path, or a load in (0, MAX_LOAD]."""
    if Path(arg).expanduser().exists():
        return
    try:
        load = float(arg)
    except ValueError:
        raise ValueError(
            f"scheduler {name}:{arg}: neither a checkpoint path nor a load in (0, {MAX_LOAD:g}]"
        ) from None
    if not (math.isfinite(load) and 0.0 < load <= MAX_LOAD):
        raise ValueError(f"scheduler {name}:{arg}: the load must be in (0, {MAX_LOAD:g}]")


ARGUMENTS: dict[str, tuple[str, Check]] = {
    "random": ("SEED", _seed),
    "tetris": ("N", _tetris_threshold),
    "tetris-star": ("KNOB", _unit_knob),
    "tiresias": ("T1,T2,...", _thresholds),
}
"""Built-in schedulers that take an argument after ``:``: (what it is, its check). Others take
none, unless they declare one when they register."""


def check_argument(name: str, arg: str | None, declared: tuple[str, Check] | None = None) -> None:
    """Raise a one-line ValueError if scheduler ``name`` does not take ``arg``.

    Args:
        name: registry name (before ``:``).
        arg: the text after ``:``, or None without a colon. An empty argument (``fifo:``) is
            refused like any other for a scheduler that takes none.
        declared: the argument the scheduler declared when it registered, if any.
    """
    entry = declared or ARGUMENTS.get(name)
    if entry is None:
        if arg is not None:
            raise ValueError(f"scheduler {name!r} takes no ':' argument, got {name}:{arg}")
        return
    if arg is None:
        return
    what, check = entry
    if not arg:
        raise ValueError(f"scheduler {name}: give {what} after ':' or no ':' at all")
    check(name, arg)
