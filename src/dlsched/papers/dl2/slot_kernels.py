"""Compiled per-action work of a DL2 slot (`dlsched.papers.dl2.state.Dl2Slot`): placing tasks on
the scratch copy of free resources, the acted row's state entries, the action mask.

numba-compiled (``cache=True``: compiled once per source change, then loaded from
``__pycache__``), because a slot takes ~34 actions and the same work in Python costs ~25 µs an
action in interpreter overhead. Every float is computed with the same float64 operations, in the
same order, as the Python code they replace (`dlsched.core.cluster.tasks_that_fit`, and before
2026-11-24 ``ScratchFree`` and ``Dl2Slot._refresh_row``), so observations and masks are bitwise
those of the earlier code.

Layout (arrays owned by the slot, changed in place):

* ``free`` ``(S, 3)`` float64: free gpu, cpu, mem per server in the scratch copy;
  ``totals_cap`` ``(2, 3)``: their sums, and the cluster's capacity sums.
* ``needs`` ``(N, 3)``: the distinct task demands of this batch; ``fits`` ``(N, S)`` int64: how
  many tasks of each fit on each server (kept exact); ``pairs`` ``(K, 2)``: per task shape the
  worker's and the PS's index into ``needs``.
* ``rows`` ``(J, 8)`` int64 per job row: ``W``, ``P`` (workers / PS so far), ``MAX_W``,
  ``MAX_P`` (caps), ``MIN_W`` (workers needed to train, >= 1), ``NEEDS_PS`` (1: cannot train
  without a PS), ``SHAPE`` (index into ``pairs``), ``SERVED`` (order of its first task, -1).
* ``st`` int64: ``N_ROWS``, ``TRAINS`` (some job can train), ``LAST`` (last batch), ``SERVE``
  (next serve number).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from numba import njit

from dlsched.kernel_cache import refresh

refresh(__file__)  # before any cached kernel loads: numba checks a kernel's own file only

W, P, MAX_W, MAX_P, MIN_W, NEEDS_PS, SHAPE, SERVED = range(8)
ROW_FIELDS = 8
N_ROWS, TRAINS, LAST, SERVE = range(4)
ST_FIELDS = 4

OK, AT_CAP, NO_ROOM_W, NO_ROOM_PS = 0, 1, 2, 3
"""`apply_row` results."""

_EPS = 1e-9  # as dlsched.core.cluster's
_UNBOUNDED = 2**30
_COUNT_SCALE = 16.0
_SHARE_SCALE = 10.0
_OBS_HIGH = 10.0

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@njit(cache=True)
def _fit(free: F64, s: int, need: F64) -> int:
    """`tasks_that_fit(free[s], need)`, the same float operations."""
    g, c, m = need[0], need[1], need[2]
    best = math.floor((free[s, 0] + _EPS) / g) if g > 0 else _UNBOUNDED
    if c > 0:
        n = math.floor((free[s, 1] + _EPS) / c)
        if n < best:
            best = n
    if m > 0:
        n = math.floor((free[s, 2] + _EPS) / m)
        if n < best:
            best = n
    return best if best > 0 else 0


@njit(cache=True)
def _zero(need: F64) -> bool:
    return not (need[0] > 0 or need[1] > 0 or need[2] > 0)


@njit(cache=True)
def count_fits(free: F64, needs: F64, fits: I64) -> None:
    """Fill ``fits[n, s]`` for every demand and server."""
    for n in range(needs.shape[0]):
        for s in range(free.shape[0]):
            fits[n, s] = _fit(free, s, needs[n])


@njit(cache=True)
def _best(fits: I64, n: int) -> int:
    """Server where most tasks of demand ``n`` fit, lowest id on ties; -1 if none fits."""
    most, server = 0, -1
    for s in range(fits.shape[1]):
        if fits[n, s] > most:
            most, server = fits[n, s], s
    return server


@njit(cache=True)
def _nfit(fits: I64, n: int) -> int:
    k = 0
    for s in range(fits.shape[1]):
        if fits[n, s] >= 1:
            k += 1
    return k


@njit(cache=True)
def _change(
    free: F64, totals_cap: F64, needs: F64, fits: I64, server: int, n: int, sign: float
) -> None:
    g, c, m = sign * needs[n, 0], sign * needs[n, 1], sign * needs[n, 2]
    free[server, 0] += g
    free[server, 1] += c
    free[server, 2] += m
    totals_cap[0, 0] += g
    totals_cap[0, 1] += c
    totals_cap[0, 2] += m
    for k in range(needs.shape[0]):
        fits[k, server] = _fit(free, server, needs[k])


@njit(cache=True)
def _can_place(needs: F64, fits: I64, n: int) -> bool:
    return _zero(needs[n]) or _nfit(fits, n) > 0


@njit(cache=True)
def _can_place_both(free: F64, needs: F64, fits: I64, nw: int, np_: int) -> bool:
    """Whether a worker (placed first, where `place` would) and then a PS both fit."""
    if _zero(needs[nw]):
        return _can_place(needs, fits, np_)
    if not _can_place(needs, fits, nw):
        return False
    if _zero(needs[np_]):
        return True
    nfit = _nfit(fits, np_)
    # a worker takes room on one server only: with a PS fitting on two, one stays free
    if nfit != 1:
        return nfit > 1
    sw = _best(fits, nw)
    if fits[np_, sw] < 1:  # the PS fits on another server
        return True
    ps = needs[np_]
    left = np.empty((1, 3))
    for r in range(3):
        left[0, r] = free[sw, r] - needs[nw, r]
    return _fit(left, 0, ps) >= 1


@njit(cache=True)
def refresh_row(
    i: int, rows: I64, needs: F64, pairs: I64, totals_cap: F64, obs_rows: npt.NDArray[np.float32],
    L: int,
) -> None:  # fmt: skip
    """Row ``i``'s dominant share and counts in the observation (float64, as written before)."""
    w, p = rows[i, W], rows[i, P]
    nw, np_ = pairs[rows[i, SHAPE], 0], pairs[rows[i, SHAPE], 1]
    dom = 0.0
    for r in range(3):
        cap = totals_cap[1, r]
        if cap > 0:
            share = (needs[nw, r] * w + needs[np_, r] * p) / cap
            if share > dom:
                dom = share
    scaled = _SHARE_SCALE * dom
    obs_rows[i, L + 4] = scaled if scaled < _OBS_HIGH else _OBS_HIGH
    obs_rows[i, L + 5] = w / _COUNT_SCALE
    obs_rows[i, L + 6] = p / _COUNT_SCALE


@njit(cache=True)
def fill_globals(totals_cap: F64, glob: npt.NDArray[np.float32]) -> None:
    """Free fraction of each used resource (an unused one's entry stays 0)."""
    for r in range(3):
        cap = totals_cap[1, r]
        if cap > 0:
            v = totals_cap[0, r] / cap
            v = v if v > 0.0 else 0.0
            glob[r] = v if v < 1.0 else 1.0


@njit(cache=True)
def fill_mask(
    free: F64, needs: F64, fits: I64, pairs: I64, rows: I64, st: I64,
    mask: npt.NDArray[np.bool_],
) -> None:  # fmt: skip
    """The legal actions now: caps and fit per row; void, except when it would end the slot
    with nothing able to train while a row action is legal (no stalls)."""
    mask[:] = False
    void = mask.shape[0] - 1
    mask[void] = True
    n = st[N_ROWS]
    if n == 0:
        return
    k_shapes = pairs.shape[0]
    flags = np.empty((k_shapes, 3), dtype=np.bool_)
    for k in range(k_shapes):
        nw, np_ = pairs[k, 0], pairs[k, 1]
        can_w = _can_place(needs, fits, nw)
        can_p = _can_place(needs, fits, np_)
        flags[k, 0] = can_w
        flags[k, 1] = can_p
        flags[k, 2] = can_w and can_p and _can_place_both(free, needs, fits, nw, np_)
    some = False
    for i in range(n):
        k = rows[i, SHAPE]
        cap_w = rows[i, W] < rows[i, MAX_W]
        cap_p = rows[i, P] < rows[i, MAX_P]
        a = cap_w and flags[k, 0]
        b = cap_p and flags[k, 1]
        c = cap_w and cap_p and flags[k, 2]
        mask[3 * i] = a
        mask[3 * i + 1] = b
        mask[3 * i + 2] = c
        some = some or a or b or c
    if st[TRAINS] == 0 and st[LAST] == 1 and some:
        mask[void] = False


@njit(cache=True)
def apply_row(
    i: int, kind: int, free: F64, totals_cap: F64, needs: F64, fits: I64, pairs: I64, rows: I64,
    st: I64, obs_rows: npt.NDArray[np.float32], glob: npt.NDArray[np.float32],
    mask: npt.NDArray[np.bool_], L: int,
) -> int:  # fmt: skip
    """Add a worker (``kind`` 0), a PS (1) or both (2) to row ``i``; update its observation
    entries, the globals and the mask. Returns `OK`, or why it is illegal (state unchanged)."""
    add_w = kind != 1
    add_p = kind != 0
    if (add_w and rows[i, W] >= rows[i, MAX_W]) or (add_p and rows[i, P] >= rows[i, MAX_P]):
        return AT_CAP
    nw, np_ = pairs[rows[i, SHAPE], 0], pairs[rows[i, SHAPE], 1]
    sw = -1
    if add_w and not _zero(needs[nw]):
        sw = _best(fits, nw)
        if sw < 0:
            return NO_ROOM_W
        _change(free, totals_cap, needs, fits, sw, nw, -1.0)
    if add_p and not _zero(needs[np_]):
        sp = _best(fits, np_)
        if sp < 0:
            if sw >= 0:
                _change(free, totals_cap, needs, fits, sw, nw, 1.0)
            return NO_ROOM_PS
        _change(free, totals_cap, needs, fits, sp, np_, -1.0)
    if rows[i, SERVED] < 0:
        rows[i, SERVED] = st[SERVE]
        st[SERVE] += 1
    w = rows[i, W] = rows[i, W] + add_w
    p = rows[i, P] = rows[i, P] + add_p
    if st[TRAINS] == 0 and w >= rows[i, MIN_W] and (rows[i, NEEDS_PS] == 0 or p >= 1):
        st[TRAINS] = 1
    refresh_row(i, rows, needs, pairs, totals_cap, obs_rows, L)
    fill_globals(totals_cap, glob)
    fill_mask(free, needs, fits, pairs, rows, st, mask)
    return OK
