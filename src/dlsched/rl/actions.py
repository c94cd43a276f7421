"""Checking the actions given to the Gymnasium environments, as Gymnasium's own spaces do.

An environment never coerces an action: ``1.7``, ``np.float32(0.5)``, ``True``, ``"1"``,
``inf`` or an array of another shape is refused with a `ValueError` that names the action and
the valid range, instead of being read as some other action (``int(1.7)`` is 1). What is
accepted is what `gymnasium.spaces.Discrete.contains` and `MultiDiscrete.contains` accept: a
Python ``int`` or a NumPy integer (a 0-d array included) for ``Discrete(n)``; an integer array
(or a list of ints) of exactly the space's shape for ``MultiDiscrete``. ``bool`` is refused
although Python counts it as an ``int``: ``True`` is not an action number.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["EPISODE_OVER", "discrete_action", "multi_discrete_action"]

EPISODE_OVER = "the episode has ended (terminated or truncated); call reset() before step()"
"""The message of a step after the episode's end."""


def _shown(action: Any) -> str:
    text = repr(action)
    return text if len(text) <= 80 else text[:77] + "..."


def discrete_action(action: Any, n: int, env: str) -> int:
    """``action`` as an ``int`` in ``0..n-1``.

    Raises:
        ValueError: ``"<env>.step: action <action> (<type>) is not an integer in 0..n-1"``.
    """
    value: int | None = None
    if isinstance(action, int) and not isinstance(action, bool):
        value = action
    elif (
        isinstance(action, (np.integer, np.ndarray))
        and np.issubdtype(action.dtype, np.integer)
        and np.shape(action) == ()
    ):
        value = int(action)
    if value is None or not 0 <= value < n:
        raise ValueError(
            f"{env}.step: action {_shown(action)} ({type(action).__name__}) is not an "
            f"integer in 0..{n - 1}"
        )
    return value


def multi_discrete_action(
    action: Any, shape: tuple[int, ...], high: int, env: str
) -> npt.NDArray[np.int64]:
    """``action`` as an ``int64`` array of exactly ``shape``, each value in ``0..high-1``.

    Raises:
        ValueError: naming the action, its shape or type, and the valid shape and range.
    """
    array = np.asarray(action) if isinstance(action, (list, tuple, np.ndarray)) else None
    valid = (
        array is not None
        and array.shape == shape
        and np.issubdtype(array.dtype, np.integer)
        and bool(np.all((array >= 0) & (array < high)))
    )
    if not valid:
        got = f"{array.dtype}, shape {array.shape}" if array is not None else type(action).__name__
        raise ValueError(
            f"{env}.step: action {_shown(action)} ({got}) is not an integer array of shape "
            f"{shape} with values in 0..{high - 1}"
        )
    assert array is not None
    return array.astype(np.int64)
