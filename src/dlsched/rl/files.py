"""The names of the files a checkpoint folder holds (no PyTorch import: the CLI uses them).

Every ``dlsched train`` command writes the best policy by validation as `POLICY_FILE` +
`CARD_FILE` in its ``--out`` folder and its log as `LOG_FILE` there (README, "Training").
"""

from __future__ import annotations

POLICY_FILE = "policy.pt"
CARD_FILE = "card.json"
LOG_FILE = "train_log.csv"
"""The training log; its column `ELAPSED_COLUMN` is the wall seconds since training started."""
ELAPSED_COLUMN = "wall_s"
