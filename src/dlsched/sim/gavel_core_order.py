"""A round's order of the jobs on a GPU type in `dlsched.sim.gavel_core`, kept between points
(plain Python that numba compiles): the walk reads the same jobs in the same order as
`gavel_core_round._walk` over every active job's priority, at a cost proportional to what it
reads and to the jobs that ran since the last reset, not to the active jobs.

Between two allocation resets a job's ``X`` and deficit do not change, and its time run
(``tb[JT]``) changes only while it runs; every job starts the reset (or its arrival) at half a
round. So on a type the active jobs that may run there (estimated rate above 0) fall into:

* **given time, not run since the reset** (``X > 0``, time run = half a round): all share one
  fraction of the type's time, so their priorities ``X / fraction`` (`_pr`) are a monotone
  function of ``X`` alone: their order is kept in a heap by (``X``, deficit, arrival) built at
  the reset and read out (materialised) only as deep as a walk needs it. Jobs of equal ``X`` have
  equal priorities, and this order is then the round's; where consecutive values of ``X`` give
  the same priority (the division rounds them together) that block is re-ordered by the
  round's own keys (deficit, ``X``, arrival) at each walk;
* **given time and run since the reset** (the jobs that change): a list, whose priorities are
  computed at each walk and put in a heap of the round's order (`_before`), read as needed;
* **no time** (``X <= 0``: priority 0, after every job given time): a heap by (deficit, ``X``,
  arrival) built at the reset, with the arrivals since then (deficit and ``X`` 0, the latest
  arrivals) inserted where that order puts them.

The walk merges the first two exactly (the round's comparison, `_before`), then reads the
third. Where the argument does not hold (a priority not above 0 for a job given time, ``X``
or a deficit not finite or NaN at the reset), `_walk_fast` gives up and the caller takes the
old walk (the same records either way).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from dlsched.sim.gavel_core_parts import DEFICIT, JT, PRIO, X, _before

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

_BIG = 1e9
"""`papers.gavel.rounds._BIG`: a job that got no time yet ranks ``_BIG`` times its share."""

HHEAP, HMAT, HRUN, ZHEAP, ZMAT, OLIST, OPOS = range(7)
"""``oi``'s rows (row, type, slot): the heap of the jobs given time and not run since the
reset, its materialised order and each position's end of its run of equal ``X``; the heap of
the jobs given no time and its materialised order; the jobs given time that ran since the reset
(a list) and each job's position in it (-1: not there)."""
NHH, NMH, HSTART, NHZ, NMZ, NO = range(6)
"""``on``'s columns (type, column): the sizes of the two heaps and of their materialised
orders, the first live position of the first one's, and the list's size."""


def _pr(x: float, jt: float, w: float) -> float:
    """A job's priority on a type (`GavelRounds._priorities_fast`, the same floats): ``X``
    over the fraction ``jt / w`` of the type's time it got, ``X * _BIG`` where that fraction
    is not above 0, 0 where ``X`` is not above 0."""
    fraction = jt / w if w > 0 else 0.0
    share = x / fraction if fraction > 0 else x * _BIG
    return 0.0 if x <= 0.0 else share


def _kb(a: int, b: int, by_x: bool, x: F64, deficit: F64) -> bool:
    """Whether job ``a`` comes before ``b``: by decreasing ``X``, deficit, then arrival
    (``by_x``), or by decreasing deficit, ``X``, then arrival."""
    if by_x and x[a] != x[b]:
        return x[a] > x[b]
    if deficit[a] != deficit[b]:
        return deficit[a] > deficit[b]
    if x[a] != x[b]:
        return x[a] > x[b]
    return a < b


def _ksift(h: I64, nh: int, i: int, by_x: bool, x: F64, deficit: F64) -> None:
    """Restore the heap of the first ``nh`` of ``h`` below ``i`` (the first job at the root)."""
    while True:
        a, m = 2 * i + 1, i
        if a < nh and _kb(h[a], h[m], by_x, x, deficit):
            m = a
        if a + 1 < nh and _kb(h[a + 1], h[m], by_x, x, deficit):
            m = a + 1
        if m == i:
            return
        h[i], h[m] = h[m], h[i]
        i = m


def _rebuild(
    act: I64, nact: int, tb: F64, grate: F64, oi: I64, on: I64, half: float, fin: F64
) -> bool:
    """At a reset, once ``X`` is written: each type's two heaps from the active jobs, the list
    of jobs that ran emptied. False where the order cannot be kept (``X`` not finite or a
    deficit NaN, or half a round not above 0: the old walk then)."""
    T = tb.shape[1]
    for c in range(T):
        for i in range(on[c, NO]):
            oi[OPOS, c, oi[OLIST, c, i]] = -1
        on[c, NO] = 0
    ok = half > 0.0
    for c in range(T):
        x, deficit = tb[X, c], tb[DEFICIT, c]
        for i in range(nact):
            j = act[i]
            if not (abs(x[j]) < math.inf and deficit[j] == deficit[j]):
                ok = False
    if not ok:
        return False
    for c in range(T):
        x, deficit, rate = tb[X, c], tb[DEFICIT, c], grate[c]
        hh, zh = oi[HHEAP, c], oi[ZHEAP, c]
        nh, nz = 0, 0
        for i in range(nact):
            j = act[i]
            if not rate[j] > 0.0 or not math.isnan(fin[j]):
                continue
            if x[j] > 0.0:
                hh[nh] = j
                nh += 1
            else:
                zh[nz] = j
                nz += 1
        for i in range(nh // 2 - 1, -1, -1):
            _ksift(hh, nh, i, True, x, deficit)
        for i in range(nz // 2 - 1, -1, -1):
            _ksift(zh, nz, i, False, x, deficit)
        on[c, NHH], on[c, NMH], on[c, HSTART], on[c, NHZ], on[c, NMZ] = nh, 0, 0, nz, 0
    return True


def _mat(c: int, z: bool, oi: I64, on: I64, x: F64, deficit: F64) -> bool:
    """The next job of type ``c``'s heap (``z``: the jobs given no time) appended to its
    materialised order; False where the heap is empty."""
    hrow, nh_at, nm_at = (ZHEAP, NHZ, NMZ) if z else (HHEAP, NHH, NMH)
    h, nh, k = oi[hrow, c], on[c, nh_at], on[c, nm_at]
    if nh == 0:
        return False
    oi[hrow + 1, c, k] = h[0]
    if not z:
        oi[HRUN, c, k] = 0  # (its run's end: not known yet)
    on[c, nm_at] = k + 1
    nh -= 1
    h[0] = h[nh]
    on[c, nh_at] = nh
    _ksift(h, nh, 0, not z, x, deficit)
    return True


def _runend(c: int, p: int, oi: I64, on: I64, x: F64, deficit: F64) -> int:
    """The end (exclusive) of the run of equal ``X`` at position ``p`` of type ``c``'s
    materialised order of jobs given time, materialising it as far as needed (each position's
    end kept: a run is read once between resets)."""
    mat, ends = oi[HMAT, c], oi[HRUN, c]
    if ends[p] > p:
        return ends[p]
    x0 = x[mat[p]]
    q = p + 1
    while (q < on[c, NMH] or _mat(c, False, oi, on, x, deficit)) and x[mat[q]] == x0:
        q += 1
    for i in range(p, q):
        ends[i] = q
    return q


def _o_add(c: int, j: int, oi: I64, on: I64) -> None:
    """Job ``j`` onto type ``c``'s list of jobs given time that ran since the reset."""
    k = on[c, NO]
    oi[OLIST, c, k] = j
    oi[OPOS, c, j] = k
    on[c, NO] = k + 1


def _o_drop(c: int, j: int, oi: I64, on: I64) -> None:
    """Job ``j`` off type ``c``'s list where it is there (the last one takes its place)."""
    p = oi[OPOS, c, j]
    if p < 0:
        return
    k = on[c, NO] - 1
    last = oi[OLIST, c, k]
    oi[OLIST, c, p] = last
    oi[OPOS, c, last] = p
    oi[OPOS, c, j] = -1
    on[c, NO] = k


def _ran(
    c: int, j: int, tb: F64, grate: F64, oi: I64, on: I64, half: float
) -> None:  # fmt: skip
    """After job ``j``'s time on type ``c`` grew: onto the list if given time there."""
    if oi[OPOS, c, j] < 0 and tb[X, c, j] > 0.0 and grate[c, j] > 0.0 and tb[JT, c, j] != half:
        _o_add(c, j, oi, on)


HP, BE, INSCR, SP = range(4)
"""``hs``'s slots (the stream of jobs given time not run, during a walk): the next position,
the end of the block being read, whether the block is read from ``scr`` and where there."""


def _block(
    c: int, oi: I64, on: I64, hs: I64, x: F64, deficit: F64, jt: F64, fin: F64, half: float,
    w: float, scr: I64,
) -> bool:  # fmt: skip
    """The next block of equal priority at ``hs[HP]`` (False: none left): a run of equal ``X``
    (read in place), or several runs whose priorities round together (their live jobs sorted
    into ``scr`` by (deficit, ``X``, arrival): read from the end)."""
    p = hs[HP]
    if p == on[c, NMH] and not _mat(c, False, oi, on, x, deficit):
        return False
    mat = oi[HMAT, c]
    q = _runend(c, p, oi, on, x, deficit)
    pb = _pr(x[mat[p]], half, w)
    r = q
    while (r < on[c, NMH] or _mat(c, False, oi, on, x, deficit)) and _pr(x[mat[r]], half, w) == pb:
        r = _runend(c, r, oi, on, x, deficit)
    hs[BE] = r
    if r == q:
        return True
    n = 0
    for i in range(p, r):
        j = mat[i]
        if math.isnan(fin[j]) and jt[j] == half:
            scr[n] = j
            n += 1
    for i in range(n // 2 - 1, -1, -1):
        _ksift(scr, n, i, False, x, deficit)
    for e in range(n - 1, 0, -1):  # heap sort: the first job ends up last
        scr[0], scr[e] = scr[e], scr[0]
        _ksift(scr, e, 0, False, x, deficit)
    hs[INSCR], hs[SP] = 1, n - 1
    return True


def _hg_next(
    c: int, oi: I64, on: I64, hs: I64, x: F64, deficit: F64, jt: F64, fin: F64, half: float,
    w: float, scr: I64,
) -> int:  # fmt: skip
    """The next job given time and not run since the reset, in the round's order (-1: none)."""
    mat = oi[HMAT, c]
    while True:
        if hs[INSCR]:
            if hs[SP] >= 0:
                hs[SP] -= 1
                return scr[hs[SP] + 1]
            hs[INSCR] = 0
            hs[HP] = hs[BE]
        while hs[HP] < hs[BE]:
            j = mat[hs[HP]]
            hs[HP] += 1
            if math.isnan(fin[j]) and jt[j] == half:
                return j
        if not _block(c, oi, on, hs, x, deficit, jt, fin, half, w, scr):
            return -1


def _z_next(
    c: int, oi: I64, on: I64, zs: I64, x: F64, deficit: F64, rate: F64, fin: F64, seen: int
) -> int:  # fmt: skip
    """The next job given no time in the round's order (-1: none): the heap's order, the
    arrivals since the reset (deficit and ``X`` 0, the latest arrivals: after the jobs of a
    deficit above 0, or of 0 with ``X`` 0) in arrival order where that order puts them.
    ``zs``: the next position, the next arrival, whether the arrivals are read."""
    mat = oi[ZMAT, c]
    while True:
        if zs[0] == on[c, NMZ]:
            _mat(c, True, oi, on, x, deficit)
        there = zs[0] < on[c, NMZ]
        if not zs[2]:
            e = mat[zs[0]] if there else -1
            if e < 0 or not (deficit[e] > 0.0 or (deficit[e] == 0.0 and x[e] == 0.0)):
                while zs[1] < seen:
                    j = zs[1]
                    zs[1] += 1
                    if rate[j] > 0.0 and math.isnan(fin[j]):
                        return j
                zs[2] = 1
        if not there:
            return -1
        e = mat[zs[0]]
        zs[0] += 1
        if math.isnan(fin[e]):
            return e


def _osift(h: I64, nh: int, i: int, pr: F64, deficit: F64, x: F64) -> None:
    """Restore the heap of the first ``nh`` of ``h`` below ``i`` (the round's first job at the
    root: `_before`)."""
    while True:
        a, m = 2 * i + 1, i
        if a < nh and _before(h[a], h[m], pr, deficit, x):
            m = a
        if a + 1 < nh and _before(h[a + 1], h[m], pr, deficit, x):
            m = a + 1
        if m == i:
            return
        h[i], h[m] = h[m], h[i]
        i = m


def _walk_fast(
    tb: F64, wt: F64, grate: F64, scale: I64, rooms: I64, order_t: I64, taken: B, heap: I64,
    chosen: I64, ctype: I64, oi: I64, on: I64, fin: F64, half: float, seen: int, base: int,
    scr: I64, hs: I64,
) -> int:  # fmt: skip
    """`gavel_core_round._walk` on the kept order (module docstring): the same jobs and types
    into ``chosen`` and ``ctype``; how many, or -1 where a job given time has a priority not
    above 0 (nothing chosen then: the caller takes `_walk`)."""
    nch = 0
    for ti in range(order_t.shape[0]):
        c = order_t[ti]
        room, w = rooms[c], wt[c]
        pr, deficit, x, jt, rate = tb[PRIO, c], tb[DEFICIT, c], tb[X, c], tb[JT, c], grate[c]
        mat = oi[HMAT, c]
        start = on[c, HSTART]  # (the jobs before it ran or left: they stay out until a reset)
        while start < on[c, NMH] and not (math.isnan(fin[mat[start]]) and jt[mat[start]] == half):
            start += 1
        on[c, HSTART] = start
        olist, no = oi[OLIST, c], on[c, NO]
        bad = False
        for i in range(no):  # the jobs that ran: a heap of the round's order, read as needed
            j = olist[i]
            pr[j] = _pr(x[j], jt[j], w)
            bad = bad or not pr[j] > 0.0
            heap[i] = j
        for i in range(no // 2 - 1, -1, -1):
            _osift(heap, no, i, pr, deficit, x)
        hs[HP], hs[BE], hs[INSCR] = start, start, 0
        hj = _hg_next(c, oi, on, hs, x, deficit, jt, fin, half, w, scr)
        if hj >= 0:
            pr[hj] = _pr(x[hj], jt[hj], w)
            bad = bad or not pr[hj] > 0.0
        zs = np.array([0, base, 0], dtype=np.int64)
        while room > 0 and not bad:
            oj = heap[0] if no else -1
            if hj >= 0 and (oj < 0 or _before(hj, oj, pr, deficit, x)):
                j = hj
                hj = _hg_next(c, oi, on, hs, x, deficit, jt, fin, half, w, scr)
                if hj >= 0:
                    pr[hj] = _pr(x[hj], jt[hj], w)
                    bad = bad or not pr[hj] > 0.0
            elif oj >= 0:
                j = oj
                no -= 1
                heap[0] = heap[no]
                _osift(heap, no, 0, pr, deficit, x)
            else:
                j = _z_next(c, oi, on, zs, x, deficit, rate, fin, seen)
                if j < 0:
                    break
            if taken[j] or scale[j] > room:
                continue
            room -= scale[j]
            taken[j] = True
            chosen[nch] = j
            ctype[nch] = c
            nch += 1
        if bad:
            for i in range(nch):
                taken[chosen[i]] = False
            return -1
    return nch
