"""What every ``dlsched train`` command shares: the ``--out`` and ``--max-minutes`` options and
the names of the files it writes into ``OUT`` (README, "Training").

Every ``train`` command writes the best policy by validation as ``OUT/policy.pt`` +
``OUT/card.json`` and its log as ``OUT/train_log.csv`` (elapsed wall time in a ``wall_s``
column); those that can resume also keep ``OUT/last/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dlsched.commands.common import err
from dlsched.rl.files import CARD_FILE, ELAPSED_COLUMN, LOG_FILE, POLICY_FILE

__all__ = [
    "CARD_FILE",
    "ELAPSED_COLUMN",
    "LOG_FILE",
    "POLICY_FILE",
    "Force",
    "MaxMinutes",
    "OutDir",
    "Resume",
    "TensorBoardDir",
    "budget_seconds",
]

MAX_MINUTES_LIMIT = 1e6

OutDir = Annotated[
    Path,
    typer.Option("--out", help="Output folder: policy.pt + card.json (best), train_log.csv."),
]
MaxMinutes = Annotated[
    float | None,
    typer.Option(
        "--max-minutes",
        min=0.01,
        max=MAX_MINUTES_LIMIT,
        help="Stop after this many minutes of wall time (default: no limit).",
    ),
]

TensorBoardDir = Annotated[
    Path | None,
    typer.Option(
        "--tensorboard",
        help="Also write the log's rows as TensorBoard scalars here (extra: tensorboard).",
    ),
]

Resume = Annotated[
    bool, typer.Option("--resume", help="Continue from OUT/last/train_state.pt if it exists.")
]
Force = Annotated[
    bool,
    typer.Option(
        "--force", help="Replace another run's policy, card, log and last/ in OUT (else refused)."
    ),
]


def budget_seconds(
    max_minutes: float | None, old_value: float | None, old_option: str, old_unit_s: float
) -> float | None:
    """The time budget in seconds from ``--max-minutes`` or a deprecated spelling of it.

    Args:
        max_minutes: ``--max-minutes`` (minutes) or None.
        old_value: the deprecated option's value (in its own unit) or None.
        old_option: its name, e.g. ``"--time-budget"``.
        old_unit_s: seconds per unit of the deprecated option (1 for seconds, 60 for minutes).

    Raises:
        ValueError: both were given.
    """
    if old_value is None:
        return None if max_minutes is None else max_minutes * 60.0
    if max_minutes is not None:
        raise ValueError(f"{old_option}: give --max-minutes only ({old_option} is its old name)")
    minutes = old_value * old_unit_s / 60.0
    err.print(
        f"warning: {old_option} is deprecated and will be removed; use --max-minutes {minutes:g}",
        highlight=False,
    )
    return old_value * old_unit_s
