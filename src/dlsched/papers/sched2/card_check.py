"""SCED²: the limits on its checkpoints' ``card.json`` (the plugin manifest's ``card_checks``
entry, run by `dlsched.rl.card_limits.validate_card_data` before anything is allocated).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlsched.rl.card_limits import check_budget, widths


def check_card(data: Mapping[str, Any], hyper: Mapping[str, Any], where: str) -> None:
    """SCED²'s layer widths; its online and target Q-networks within `MAX_PARAMETERS`."""
    width = {
        name: widths(hyper.get(name, default), f"hyperparams {name!r}", where, one=True)[0]
        for name, default in (
            ("server_hidden", 32),
            ("server_out", 16),
            ("job_hidden", 128),
            ("hidden", 256),
        )
    }
    s = data.get("shapes", {})
    servers, gpus = s.get("N", 1), s.get("M", 1)
    inputs, outputs = s.get("obs_dim", 0), s.get("num_actions", 0)
    sh, so, jh, h = (width[k] for k in ("server_hidden", "server_out", "job_hidden", "hidden"))
    weights = gpus * sh + sh * so + inputs * jh + (servers * so + jh) * h + h * outputs
    check_budget(2 * weights, where)  # online and target network
