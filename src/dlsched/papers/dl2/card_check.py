"""DL2: the limits on its checkpoints' ``card.json`` (the plugin manifest's ``card_checks``
entry, run by `dlsched.rl.card_limits.validate_card_data` before anything is allocated).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlsched.rl.card_limits import (
    MAX_LIST,
    MAX_SHAPE,
    chain,
    check_budget,
    int_in,
    widths,
)


def check_card(data: Mapping[str, Any], hyper: Mapping[str, Any], where: str) -> None:
    """DL2's hidden widths, ``J``, job types and architecture; its policy and value networks
    within `MAX_PARAMETERS` (one-line ValueError otherwise)."""
    hidden = widths(hyper.get("hidden", [256, 256]), "hyperparams 'hidden'", where)
    int_in(hyper.get("J", 40), 1, MAX_SHAPE, "hyperparams 'J'", where)
    types = hyper.get("job_types", ["?"])
    if (
        not isinstance(types, list)
        or not 1 <= len(types) <= MAX_LIST
        or not all(isinstance(t, str) for t in types)
    ):
        raise ValueError(f"{where}: hyperparams 'job_types' must be a list of names")
    if hyper.get("arch", "mlp") not in ("rows", "mlp"):
        raise ValueError(f"{where}: hyperparams 'arch' must be 'rows' or 'mlp'")
    shapes = data.get("shapes", {})
    inputs, outputs = shapes.get("obs_dim", 0), shapes.get("num_actions", 0)
    check_budget(2 * chain([inputs, *hidden, outputs]), where)  # policy and value network
