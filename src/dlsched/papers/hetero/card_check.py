"""Limits on ``hetero`` cards (the manifest's ``card_checks`` entry, run by
`dlsched.rl.card_limits.validate_card_data` before anything is read)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlsched.papers.hetero.features import FEATURES


def check_card(data: Mapping[str, Any], hyper: Mapping[str, Any], where: str) -> None:
    """One weight per feature: the card's ``shapes.features`` must be ``len(FEATURES)``."""
    if data.get("shapes", {}).get("features") != len(FEATURES):
        raise ValueError(f"{where}: shapes 'features' must be {len(FEATURES)}")
