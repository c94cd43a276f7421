"""Placement policies: where a job's tasks go (never how many)."""

from __future__ import annotations

from collections.abc import Callable

from dlsched.placement.base import Placement
from dlsched.placement.gang import Gang
from dlsched.placement.load_balance import LoadBalance
from dlsched.placement.pack import Pack

PLACEMENTS: dict[str, Callable[[], Placement]] = {
    "load_balance": LoadBalance,
    "pack": Pack,
    "gang": Gang,
}


def make_placement(name: str) -> Placement:
    """The placement policy called ``name``; ValueError listing the choices otherwise."""
    try:
        return PLACEMENTS[name]()
    except KeyError:
        raise ValueError(
            f"unknown placement {name!r}; choose one of {', '.join(PLACEMENTS)}"
        ) from None


__all__ = ["PLACEMENTS", "Gang", "LoadBalance", "Pack", "Placement", "make_placement"]
