"""The median and percentiles of a run's metrics, as ``np.median`` and ``np.percentile``
(default ``"linear"`` method) compute them, float for float, without importing ``numpy.ma``:
both NumPy functions check for masked arrays (``np.percentile`` through ``np.unique``), and that
import is ~10 ms of every ``dlsched simulate``'s start-up (issue 34). `tests/sim/
test_order_stats.py` checks the equality on random data."""

from __future__ import annotations

import math

import numpy as np


def median(values: np.ndarray) -> float:
    """``np.median(values)`` of a non-empty 1-D array: the mean of the one or two middle
    values, NaN if any value is NaN."""
    if np.isnan(values).any():
        return math.nan
    n = values.size
    part = np.partition(values, [(n - 1) // 2, n // 2])
    return float(np.mean(part[(n - 1) // 2 : n // 2 + 1]))


def percentile(values: np.ndarray, q: float) -> float:
    """``np.percentile(values, q)`` of a non-empty 1-D array, ``q`` in [0, 100]: NumPy's
    linear interpolation between the two order statistics around ``(n - 1) · q / 100``, in
    NumPy's order of operations; NaN if any value is NaN."""
    if np.isnan(values).any():
        return math.nan
    n = values.size
    virtual = (n - 1) * (q / 100)
    if virtual >= n - 1:  # NumPy takes the last value, with its index -1 in the weight
        low = high = n - 1
        weight = virtual + 1
    else:
        low = math.floor(virtual)
        high = low + 1
        weight = virtual - low
    part = np.partition(values, [low, high] if high != low else [low])
    a, b = float(part[low]), float(part[high])
    if weight >= 0.5:
        return b - (b - a) * (1 - weight)
    return a + (b - a) * weight
