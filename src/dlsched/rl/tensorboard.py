"""Training curves as TensorBoard event files, next to the CSV log every trainer writes.

Each ``dlsched train`` command takes ``--tensorboard DIR``: every row the trainer writes to its
CSV log is also written to ``DIR`` as scalars (one tag per numeric column, ``PREFIX/column``),
so ``tensorboard --logdir DIR`` shows the run while it trains. It needs the optional
``tensorboard`` package (``pip install 'dlsched[tensorboard]'``); the CSV is written either way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

INSTALL_HINT = "pip install torch==2.13.0 'dlsched[tensorboard]'"


class CurveMirror:
    """Writes training-log rows as TensorBoard scalars.

    Args:
        log_dir: the event files' directory (created if missing).

    Raises:
        ValueError: the ``tensorboard`` package is not installed (the message says how to
            install it).
    """

    def __init__(self, log_dir: Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:  # torch raises ImportError when tensorboard is missing
            raise ValueError(
                f"--tensorboard {log_dir}: the tensorboard package is not installed "
                f"({INSTALL_HINT})"
            ) from exc
        self.log_dir = log_dir
        self._writer: Any = SummaryWriter(log_dir=str(log_dir))

    def add(self, row: Mapping[str, object], step: int, prefix: str = "") -> None:
        """Write the finite numeric entries of ``row`` at ``step`` (tags ``prefix/column``).

        Text, booleans, empty cells and NaN/inf are skipped: TensorBoard plots numbers only.
        """
        for name, value in row.items():
            number = _number(value)
            if number is None:
                continue
            tag = f"{prefix}/{name}" if prefix else name
            self._writer.add_scalar(tag, number, global_step=step)
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self._writer.close()

    def __enter__(self) -> CurveMirror:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_mirror(log_dir: Path | None) -> CurveMirror | None:
    """A `CurveMirror` on ``log_dir``, or None when no directory was asked for."""
    return None if log_dir is None else CurveMirror(log_dir)


def _number(value: object) -> float | None:
    """``value`` as a finite float, or None (text, bool, empty, NaN, inf)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None
