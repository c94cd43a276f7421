"""Helpers of `dlsched.sim.gavel_core` (plain Python that numba compiles): its completion heap,
a round's order of the jobs on a GPU type (a bounded heap) and Gavel's placement of a job on the
servers of one type, each with the order or float operations of the Python path it stands for."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dlsched.sim.las_core_parts import _EPS, _fit

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

# the rows of the core's state (`dlsched.sim.gavel_core`): the float job table ``jf``, the
# per-type books ``tb`` (type, job), the integer job table ``ji``
ATTAINED, HELD, PROGRESS, PTIME, PAUSED, RATE, FIRST, FINISH = range(8)
X, JT, DEFICIT, PRIO = range(4)
"""``tb``'s rows: the allocation ``X``, the time run since the last reset (from half a round),
the deficit and the round's priority."""
VERSION, ORDER, RUN, ACT, JTYPE, RESCALES = range(6)
"""``ji``'s rows: completion versions, the finishing order, the running jobs (running order),
the active jobs (arrival order), each job's GPU type (column) and its moves."""


def _hpush(hk: F64, hp: I64, nh: int, t: float, q: float, j: int, v: int) -> int:
    """Push the completion of job ``j`` at version ``v`` due at ``t`` (s), sequence number
    ``q``, onto the heap of the first ``nh`` rows of ``hk`` (time, sequence) and ``hp`` (job,
    version): 4-ary, rows moved into a hole (the simulator's `EventQueue` order, (time,
    sequence), which is unique, so the same events come out in the same order as from
    `las_core_parts`' binary heap of four arrays, at a fraction of its cost on the tens of
    thousands of stale completions LAS's constant swaps leave)."""
    i = nh
    while i > 0:
        p = (i - 1) >> 2
        if hk[p, 0] < t or (hk[p, 0] == t and hk[p, 1] < q):
            break
        hk[i, 0], hk[i, 1], hp[i, 0], hp[i, 1] = hk[p, 0], hk[p, 1], hp[p, 0], hp[p, 1]
        i = p
    hk[i, 0], hk[i, 1], hp[i, 0], hp[i, 1] = t, q, j, v
    return nh + 1


def _hpop(hk: F64, hp: I64, nh: int) -> int:
    """Drop the least row (by time, then sequence number) of the heap; its new size."""
    nh -= 1
    t, q, j, v = hk[nh, 0], hk[nh, 1], hp[nh, 0], hp[nh, 1]
    i = 0
    while True:
        c = 4 * i + 1
        if c >= nh:
            break
        m = c
        end = c + 4 if c + 4 < nh else nh
        for d in range(c + 1, end):
            if hk[d, 0] < hk[m, 0] or (hk[d, 0] == hk[m, 0] and hk[d, 1] < hk[m, 1]):
                m = d
        if not (hk[m, 0] < t or (hk[m, 0] == t and hk[m, 1] < q)):
            break
        hk[i, 0], hk[i, 1], hp[i, 0], hp[i, 1] = hk[m, 0], hk[m, 1], hp[m, 0], hp[m, 1]
        i = m
    hk[i, 0], hk[i, 1], hp[i, 0], hp[i, 1] = t, q, j, v
    return nh


def _hgrow(hk: F64, hp: I64) -> tuple[F64, I64]:
    n = hk.shape[0]
    k2, p2 = np.empty((2 * n, 2)), np.empty((2 * n, 2), dtype=np.int64)
    k2[:n], p2[:n] = hk, hp
    return k2, p2


def _fit_gavel(free: F64, dem: F64, want: int, counts: I64, out: I64, stype: I64, c: int) -> int:
    """`typed._fit_counted` on the servers of type ``c`` (``stype``: each server's type;
    ascending): the fullest single server that fits all ``want`` workers, else the roomiest
    servers first (ties: lowest server); per-server counts into ``out`` (0 on other types);
    the servers used (0: it does not fit)."""
    S = free.shape[0]
    best, best_n = -1, 0
    for s in range(S):
        out[s] = 0
        if stype[s] != c or (dem[0] > 0 and free[s, 0] + _EPS < 0.5 * dem[0]):
            counts[s] = 0  # (`_fit`'s first quotient is then below 1/2: none fits)
        else:
            counts[s] = _fit(free, s, dem)
        if counts[s] >= want and (best < 0 or counts[s] < best_n):
            best, best_n = s, counts[s]
    if best >= 0:
        out[best] = want
        return 1
    total, used = 0, 0
    while total < want:
        arg = -1
        for s in range(S):
            if out[s] == 0 and counts[s] > 0 and (arg < 0 or counts[s] > counts[arg]):
                arg = s
        if arg < 0:
            for s in range(S):
                out[s] = 0
            return 0
        k = min(counts[arg], want - total)
        out[arg] = k
        total += k
        used += 1
    return used


def _before(a: int, b: int, pr: F64, deficit: F64, x: F64) -> bool:
    """Whether job ``a`` comes before ``b`` in a round's order on a type (its rows of the
    priorities, deficits and ``X``): decreasing priority, deficit, ``X``, then arrival
    (index)."""
    if pr[a] != pr[b]:
        return pr[a] > pr[b]
    if deficit[a] != deficit[b]:
        return deficit[a] > deficit[b]
    if x[a] != x[b]:
        return x[a] > x[b]
    return a < b


def _sift_down(heap: I64, nk: int, i: int, pr: F64, deficit: F64, x: F64) -> None:
    """Restore the heap below ``i`` (the root is the job ranked last)."""
    while True:
        a, b, m = 2 * i + 1, 2 * i + 2, i
        if a < nk and _before(heap[m], heap[a], pr, deficit, x):
            m = a
        if b < nk and _before(heap[m], heap[b], pr, deficit, x):
            m = b
        if m == i:
            return
        heap[i], heap[m] = heap[m], heap[i]
        i = m


def _prefix(
    act: I64, nact: int, k: int, pr: F64, deficit: F64, x: F64, rate: F64, heap: I64, out: I64
) -> tuple[int, int]:
    """The first ``k`` jobs (all, where fewer) of the round's order among the first ``nact``
    of ``act`` whose rate is above 0, into ``out`` in that order (`books.prefix`'s answer),
    by a bounded heap; returns (how many, how many could run)."""
    nk, count = 0, 0
    for i in range(nact):
        j = act[i]
        if not rate[j] > 0.0:
            continue
        count += 1
        if nk < k:
            p = nk
            heap[p] = j
            nk += 1
            while p > 0:
                q = (p - 1) // 2
                if not _before(heap[q], heap[p], pr, deficit, x):
                    break
                heap[p], heap[q] = heap[q], heap[p]
                p = q
        elif _before(j, heap[0], pr, deficit, x):
            heap[0] = j
            _sift_down(heap, nk, 0, pr, deficit, x)
    n = nk
    while nk > 0:  # the last-ranked first, from the end of ``out``
        nk -= 1
        out[nk] = heap[0]
        heap[0] = heap[nk]
        _sift_down(heap, nk, 0, pr, deficit, x)
    return n, count
