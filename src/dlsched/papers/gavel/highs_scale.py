"""The scale factors HiGHS 1.12 gives the rows of the one-type floor LP, recomputed.

`lp.feasible_with_floor` on one GPU type is, per job ``j``, a column ``X[j]`` in ``[0, 1]`` with
three entries (``1`` in its time row, ``scale[j]`` in the GPUs' row, ``-rate[j]`` in its floor
row ``-rate[j] X[j] <= -floor[j]``) and no cost. After presolve and postsolve HiGHS runs the
dual simplex on this LP *scaled* (``scaleLp`` in ``HighsLpUtils.cpp``, default
``simplex_scale_strategy`` 2: equilibration), and a floor row that presolve dropped counts as
violated there when ``floor[j] * row_scale[j] > 1e-7`` (`one_type.floor_allocation`).
`floor_row_scales` repeats that computation on this structure, step for step and with the same
floating-point operations:

* no scaling at all when every ``|value|`` of the matrix lies in ``[0.2, 5]``;
* six passes of equilibration: each column's factor ``1 / sqrt(min * max)`` of its entries
  times the rows' factors of the last pass, then each row's factor ``1 / sqrt(min * max)`` of
  its entries times the new column factors; every factor clamped to ``[2**-20, 2**20]``;
* each factor rounded to a power of 2, ``2 ** floor(log(f) / log(2) + 0.5)`` with the C
  library's ``log`` (Python's ``math.log`` calls the same ``libm`` function as HiGHS);
* the scaling kept only if the product of its three "improvement" ratios is at least 1.

The improvement product is a sum of logarithms in HiGHS's order; this sum is numpy's, so where
the product lies within ``1e-6`` of 1 (or below 1: never seen on this LP, so not checked
against HiGHS) there is no answer (None). On this LP's structure the product is far from 1
(6 or more on drawn problems), so that does not happen in practice.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from dlsched.papers.gavel.lp import Array

Index = npt.NDArray[np.int64]

_LIMIT = 2.0**20
"""HiGHS's ``allowed_matrix_scale_factor`` (20, its default) as a factor."""
_PASSES = 6
"""Equilibration passes (HiGHS's ``search_count``)."""


def _clamp(v: Array) -> Array:
    return np.minimum(np.maximum(1.0 / _LIMIT, v), _LIMIT)


def _power_of_two(v: Array) -> Array:
    """``pow(2, floor(log(v) / log(2) + 0.5))`` with libm's ``log``, element by element."""
    log2 = math.log(2.0)
    powers = [math.floor(math.log(f) / log2 + 0.5) for f in v.tolist()]
    return np.ldexp(1.0, np.array(powers, dtype=np.int64))


def _geometric(equilibration: Array, counts: Index, total: int) -> float:
    """``max(g, 1 / g)`` of the geometric mean of ``equilibration`` (each ``counts`` times)."""
    g = math.exp(float((counts * np.log(equilibration)).sum()) / total)
    return max(g, 1.0 / g)


def _spread(equilibration: Array) -> float:
    return float(equilibration.max() / equilibration.min())


def _distinct(v: Array) -> tuple[Array, Index]:
    """(the distinct values of ``v``, each element's index among them)."""
    if v.min() == v.max():
        return v[:1].copy(), np.zeros(len(v), dtype=np.int64)
    whole = v.astype(np.int64)
    if v.min() >= 0 and v.max() < 4096 and (whole == v).all():  # GPUs: counted, not sorted
        counted, where, _ = _pairs(whole, int(whole.max()) + 1)
        return counted.astype(np.float64), where
    values, inverse = np.unique(v, return_inverse=True)
    return values, inverse.astype(np.int64)


def _pairs(pair_of: Index, most: int) -> tuple[Index, Index, Index]:
    """`numpy.unique` of ``pair_of`` (integers below ``most``) with the inverse and the counts,
    by counting where ``most`` is small."""
    if most > 4096:
        pairs, where, counts = np.unique(pair_of, return_inverse=True, return_counts=True)
        return pairs, where.astype(np.int64), counts.astype(np.int64)
    every = np.bincount(pair_of, minlength=most).astype(np.int64)
    pairs = np.flatnonzero(every).astype(np.int64)
    index = np.zeros(most, dtype=np.int64)
    index[pairs] = np.arange(len(pairs))
    return pairs, index[pair_of], every[pairs]


def floor_row_scales(rates: Array, scale: Array) -> Array | None:
    """Each job's floor-row scale factor in HiGHS 1.12's scaled LP (1 where it does not scale),
    or None where the module doc's computation cannot say.

    A column's factors depend only on its ``(rate, scale)`` and on the GPUs' row, whose factor
    depends only on the smallest and largest of the columns' values: the passes run once per
    distinct pair (a run has a few), with the same floating-point operations as per column.

    Args:
        rates: ``(m,)`` each job's rate (> 0; the floor row's coefficient is ``-rate``).
        scale: ``(m,)`` each job's GPUs (> 0).
    """
    m = len(rates)
    low = min(1.0, float(scale.min()), float(rates.min()))
    high = max(1.0, float(scale.max()), float(rates.max()))
    if low >= 0.2 and high <= 5.0:
        return np.ones(m)
    rate_values, rate_of = _distinct(rates)
    scale_values, scale_of = _distinct(scale)
    pair_of = rate_of * len(scale_values) + scale_of
    pairs, job_pair, counts = _pairs(pair_of, len(rate_values) * len(scale_values))
    rates, scale = rate_values[pairs // len(scale_values)], scale_values[pairs % len(scale_values)]
    time_row, floor_row, gpu_row = np.ones(len(pairs)), np.ones(len(pairs)), 1.0
    col = np.ones(len(pairs))
    for _ in range(_PASSES):
        a, b, c = time_row, scale * gpu_row, rates * floor_row
        least = np.minimum(np.minimum(a, b), c)
        most = np.maximum(np.maximum(a, b), c)
        col = _clamp(1.0 / np.sqrt(least * most))
        time_row = _clamp(1.0 / np.sqrt(col * col))
        gpu = scale * col
        gpu_row = float(_clamp(1.0 / np.sqrt(np.array([gpu.min() * gpu.max()])))[0])
        through = rates * col
        floor_row = _clamp(1.0 / np.sqrt(through * through))
    col, time_row, floor_row = _power_of_two(col), _power_of_two(time_row), _power_of_two(floor_row)
    gpu_row = float(_power_of_two(np.array([gpu_row]))[0])
    factors = (col, time_row, gpu_row, floor_row)
    if not _improves(rates, scale, counts, factors, high / low):
        return None
    return floor_row[job_pair]


def _improves(
    rates: Array,
    scale: Array,
    counts: Index,
    factors: tuple[Array, Array, float, Array],
    value_ratio: float,
) -> bool:
    """Whether HiGHS keeps the scaling (its improvement product above 1 by a clear margin), from
    the distinct ``(rate, scale)`` pairs, each ``counts`` times, and their scale factors."""
    col, time_row, gpu_row, floor_row = factors
    m = int(counts.sum())
    rows = 2 * m + 1
    least = np.minimum(np.minimum(1.0, scale), rates)
    most = np.maximum(np.maximum(1.0, scale), rates)
    col_before = 1.0 / np.sqrt(least * most)
    gpu_before = 1.0 / math.sqrt(float(scale.min()) * float(scale.max()))
    row_before = np.concatenate([np.ones(1), [gpu_before], 1.0 / np.sqrt(rates * rates)])
    a, b, c = col * time_row, scale * col * gpu_row, rates * col * floor_row
    col_after = 1.0 / np.sqrt(np.minimum(np.minimum(a, b), c) * np.maximum(np.maximum(a, b), c))
    gpu_after = 1.0 / math.sqrt(float(b.min()) * float(b.max()))
    row_after = np.concatenate([1.0 / np.sqrt(a * a), [gpu_after], 1.0 / np.sqrt(c * c)])
    row_counts = np.concatenate([[m], [1], counts])
    row_after_counts = np.concatenate([counts, [1], counts])
    mean = math.sqrt(
        (_geometric(col_before, counts, m) * _geometric(row_before, row_counts, rows))
        / (_geometric(col_after, counts, m) * _geometric(row_after, row_after_counts, rows))
    )
    extreme = (_spread(col_before) + _spread(row_before)) / (
        _spread(col_after) + _spread(row_after)
    )
    after_ratio = max(a.max(), b.max(), c.max()) / min(a.min(), b.min(), c.min())
    product = extreme * mean * (value_ratio / float(after_ratio))
    return product > 1.0 + 1e-6
