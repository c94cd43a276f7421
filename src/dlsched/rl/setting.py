"""Is a run inside the setting a trained policy was made for? (``card.json``'s
``trained_setting``)

A policy's card may say ``"trained_setting": {"workload": "deeprm", "params": {"load": [0.3,
1.9], "servers": 1}}``: the workload it was trained on, and for some names of that workload's
``params`` (`dlsched.workloads.base.Workload.params`) the values it saw. `differences` compares a
run's workload with it; `dlsched.runner.simulate` logs one notice per process for each scheduler,
workload and set of differing names.

The rule, per trained parameter:

* a number ``x`` (``"load": 1.3``): the run's value must be within `REL_TOL` (10 %) of ``x``
  (load 1.3 covers 1.17–1.43; ``servers: 13`` covers 11.7–14.3, so 12–14);
* a range ``[low, high]`` of two numbers (``"load": [0.3, 1.9]``): the run's value must lie in
  ``[low · 0.9, high · 1.1]``;
* anything else (text, a list that is not such a range, true/false): equal;
* a name the run's workload does not report is not compared.

A run on another workload than the trained one (``philly`` or ``trace:other.csv`` for a policy
trained on ``sched2`` or on ``trace:mine.csv``) differs by its workload, named first; its
parameters are then not compared. A card naming only a family (``sched2``) covers every run of
it; a card naming one instance (``trace:mine.csv``, ``philly:VC``) covers that one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REL_TOL = 0.1
"""Relative tolerance of numbers and range ends."""


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _inside(trained: Any, value: Any) -> bool:
    if _number(trained) and _number(value):
        return abs(value - trained) <= REL_TOL * abs(trained)
    pair = isinstance(trained, list | tuple) and len(trained) == 2
    if pair and all(_number(t) for t in trained) and _number(value):
        low, high = sorted(trained)
        return low * (1 - REL_TOL) <= value <= high * (1 + REL_TOL)
    if isinstance(trained, tuple):
        trained = list(trained)
    if isinstance(value, tuple):
        value = list(value)
    return bool(trained == value)


def _show(value: Any) -> str:
    if isinstance(value, list | tuple) and len(value) == 2 and all(_number(v) for v in value):
        return f"{value[0]:g}–{value[1]:g}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def differences(
    trained: Mapping[str, Any] | None, workload: str, params: Mapping[str, Any]
) -> list[str]:
    """Names of the trained parameters the run's workload is outside of, each as
    ``"load 1.9 (trained 0.7)"``, or the workload itself when it is another (module
    docstring); empty when inside or when nothing was said."""
    if not trained:
        return []
    name = str(trained.get("workload", ""))
    if name != workload and name != workload.partition(":")[0]:
        return [f"workload {workload} (trained {name or '?'})"]
    out = []
    for name, want in sorted(dict(trained.get("params") or {}).items()):
        if name not in params:
            continue
        have = params[name]
        if not _inside(want, have):
            out.append(f"{name} {_show(have)} (trained {_show(want)})")
    return out


def describe(trained: Mapping[str, Any]) -> str:
    """``"deeprm with load 0.3–1.9, servers 1"`` for ``dlsched list`` and notices."""
    params = dict(trained.get("params") or {})
    inner = ", ".join(f"{k} {_show(v)}" for k, v in sorted(params.items()))
    return f"{trained.get('workload', '?')}" + (f" with {inner}" if inner else "")
