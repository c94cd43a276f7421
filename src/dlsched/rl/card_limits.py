"""Limits on what a checkpoint's ``card.json`` may ask for, checked before anything is allocated.

A card drives the sizes of the network built to receive a checkpoint's weights (hidden layer
widths, the state's shape). A card from elsewhere could ask for terabytes (``"hidden": [200000,
200000]``) or carry wrong types that fail deep inside PyTorch; `validate_card_data` refuses both
with one-line `ValueError`\\ s naming the card and the field:

* every field has its type (``shapes``: names to integers, ``seeds``: names to integer lists, …);
* integers in ``shapes`` lie in ``[0, MAX_SHAPE]``; hidden widths in ``[1, MAX_WIDTH]``, at most
  `MAX_LAYERS` of them;
* the network the card describes has at most `MAX_PARAMETERS` weights, estimated from the card
  alone by the check its paper declares for the card's ``algorithm`` (a ``card_checks`` entry of
  its plugin manifest, `dlsched.plugins.CardCheck`, built from `int_in`, `widths`, `chain` and
  `check_budget` here).

`load_tensors` reads a tensor file (such as DL2's ``online_state.pt``) with PyTorch's
``weights_only`` loader and turns whatever it refuses into one line: nothing is ever unpickled.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

CardCheckFn = Callable[[Mapping[str, Any], Mapping[str, Any], str], None]
"""A paper's card check (``check(data, hyper, where)``, `dlsched.plugins.CardCheck`)."""

MAX_SHAPE = 1_000_000
"""Largest integer in a card's ``shapes`` (rows, servers, image sizes, input widths)."""
MAX_WIDTH = 4096
"""Widest hidden layer."""
MAX_LAYERS = 16
"""Most hidden layers."""
MAX_PARAMETERS = 50_000_000
"""Most weights a card may describe (200 MB of float32)."""
MAX_LIST = 1_000_000
"""Longest list in a card (seeds, job types)."""
MAX_TEXT = 1_000_000
"""Longest text field, characters."""


def is_int(x: Any) -> bool:
    """An integer, not a bool."""
    return isinstance(x, int) and not isinstance(x, bool)


def is_number(x: Any) -> bool:
    """An integer or float, not a bool."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _mapping(data: Mapping[str, Any], name: str, where: str) -> Mapping[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{where}: {name!r} must be an object with text keys")
    return value


def int_in(value: Any, low: int, high: int, what: str, where: str) -> int:
    """``value`` if it is an integer in [low, high]; else a ValueError naming ``what``."""
    if not is_int(value) or not low <= value <= high:
        raise ValueError(f"{where}: {what} must be an integer in [{low}, {high}], got {value!r}")
    return int(value)


def widths(value: Any, what: str, where: str, *, one: bool = False) -> list[int]:
    """Hidden sizes: a list of 1..MAX_LAYERS integers in [1, MAX_WIDTH] (``one``: an integer)."""
    if one:
        return [int_in(value, 1, MAX_WIDTH, f"{what} width", where)]
    items = value
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_LAYERS:
        raise ValueError(
            f"{where}: {what} must be 1 to {MAX_LAYERS} layer widths, got {str(value)[:80]}"
        )
    return [int_in(w, 1, MAX_WIDTH, f"{what} width", where) for w in items]


def validate_card_data(data: Mapping[str, Any], where: str = "card") -> None:
    """Raise a one-line ValueError if a parsed ``card.json`` has a wrong type or asks for more
    than the limits of this module; nothing is allocated before this returns.

    Args:
        data: the card's parsed JSON object.
        where: how to name the card in the message (``"checkpoint runs/x/card.json"``).
    """
    for name in ("algorithm", "workload", "date", "notes"):
        if name in data and (not isinstance(data[name], str) or len(data[name]) > MAX_TEXT):
            raise ValueError(f"{where}: field {name!r} must be text")
    for name, value in _mapping(data, "shapes", where).items():
        int_in(value, 0, MAX_SHAPE, f"shape {name!r}", where)
    for name, value in _mapping(data, "steps", where).items():
        if not is_int(value) or value < 0:
            raise ValueError(f"{where}: step count {name!r} must be an integer >= 0")
    for name, value in _mapping(data, "validation", where).items():
        if not is_number(value):
            raise ValueError(f"{where}: validation metric {name!r} must be a number")
    for name, value in _mapping(data, "seeds", where).items():
        if not isinstance(value, list) or len(value) > MAX_LIST:
            raise ValueError(f"{where}: seeds {name!r} must be a list of integers")
        if not all(is_int(s) for s in value):
            raise ValueError(f"{where}: seeds {name!r} must be a list of integers")
    _mapping(data, "workload_params", where)
    setting = _mapping(data, "trained_setting", where)
    if setting and (
        not isinstance(setting.get("workload"), str) or not isinstance(setting.get("params"), dict)
    ):
        raise ValueError(
            f"{where}: 'trained_setting' needs a 'workload' name and a 'params' object"
        )
    hyper = _mapping(data, "hyperparams", where)
    check = _card_check(data.get("algorithm"))
    if check is not None:
        check(data, hyper, where)


def _card_check(algorithm: object) -> CardCheckFn | None:
    """The ``card_checks`` entry of the plugin manifests for ``algorithm``, imported now."""
    from dlsched.plugins import plugins, resolve

    for plugin in plugins():
        for entry in plugin.card_checks:
            if entry.algorithm == algorithm:
                fn: CardCheckFn = resolve(entry.target)
                return fn
    return None


def check_budget(weights: int, where: str) -> None:
    """ValueError if a network of ``weights`` weights is over `MAX_PARAMETERS`."""
    if weights > MAX_PARAMETERS:
        raise ValueError(
            f"{where}: the network it describes has about {weights:,} weights, "
            f"more than the limit of {MAX_PARAMETERS:,}"
        )


def chain(sizes: Sequence[int]) -> int:
    """Weights and biases of fully connected layers of these sizes."""
    return sum(a * b + b for a, b in itertools.pairwise(sizes))


def load_tensors(path: str | Path, where: str | None = None) -> dict[str, Any]:
    """A file saved with ``torch.save`` of tensors and plain containers, read with
    ``weights_only=True`` (never unpickling objects); ValueError in one line otherwise.

    Args:
        path: the file.
        where: how to name it in messages (default: the path).

    Returns:
        The saved mapping.
    """
    import torch

    name = where or str(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises UnpicklingError/RuntimeError/EOFError for bad content
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{name}: cannot load it safely ({first[:200]})") from None
    if not isinstance(state, dict):
        raise ValueError(f"{name}: expected a mapping of names to tensors")
    return state
