"""The names of the files a checkpoint folder holds (no PyTorch import: the CLI uses them).

Every ``dlsched train`` command writes the best policy by validation as `POLICY_FILE` +
`CARD_FILE` in its ``--out`` folder and its log as `LOG_FILE` there (README, "Training").
"""

from __future__ import annotations

import csv
from pathlib import Path

POLICY_FILE = "policy.pt"
CARD_FILE = "card.json"
LOG_FILE = "train_log.csv"
"""The training log; its column `ELAPSED_COLUMN` is the wall seconds since training started."""
ELAPSED_COLUMN = "wall_s"


def start_log(path: Path, columns: list[str], resume: bool) -> None:
    """Get ``path`` ready for a run's rows: a fresh run starts its own log (as it replaces the
    folder's policy); a resumed one appends, if the existing log has these ``columns``.

    Raises:
        ValueError: resuming onto a log with other columns (an older version's), naming it.
    """
    if not resume:
        path.unlink(missing_ok=True)
        return
    if not path.exists():
        return
    with path.open(newline="") as fh:
        header = next(csv.reader(fh), [])
    if header != columns:
        raise ValueError(
            f"{path}: columns {','.join(header)}, but this version writes "
            f"{','.join(columns)}; move the old log away to resume"
        )
