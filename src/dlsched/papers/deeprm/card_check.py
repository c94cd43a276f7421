"""DeepRM: the limits on its checkpoints' ``card.json`` (the plugin manifest's ``card_checks``
entry, run by `dlsched.rl.card_limits.validate_card_data` before anything is allocated).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dlsched.rl.card_limits import chain, check_budget, is_number, widths


def check_card(data: Mapping[str, Any], hyper: Mapping[str, Any], where: str) -> None:
    """DeepRM's hidden widths, action selection, load and image shapes; its policy network
    (the cluster image in, one output per slot and one for "none") within `MAX_PARAMETERS`."""
    hidden = widths(hyper.get("hidden", [20]), "hyperparams 'hidden'", where)
    if hyper.get("action_selection", "sample") not in ("sample", "greedy"):
        raise ValueError(f"{where}: hyperparams 'action_selection' must be 'sample' or 'greedy'")
    load = data.get("workload_params", {}).get("load", 0.7)
    if not is_number(load) or not math.isfinite(load) or load <= 0:
        raise ValueError(f"{where}: workload_params 'load' must be a finite number > 0")
    s = data.get("shapes", {})
    horizon, slots = s.get("T", 20), s.get("M", 10)
    backlog, res_slots, num_res = s.get("backlog", 60), s.get("R", 20), s.get("d", 2)
    if min(horizon, slots, res_slots, num_res) < 1:
        raise ValueError(f"{where}: shapes T, M, R and d must be >= 1")
    inputs = horizon * (num_res * (1 + slots) * res_slots + math.ceil(backlog / horizon))
    check_budget(chain([inputs, *hidden, slots + 1]), where)
