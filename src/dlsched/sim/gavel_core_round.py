"""A round of `dlsched.sim.gavel_core` after its accounts (plain Python that numba compiles):
Gavel's greedy walk over the GPU types (`GavelRounds._choose_books`), the placement of what it
chose (`placement.typed.place_changes`: the moves, then the starts) and the executor's effects
(`Executor.apply`: suspensions in running order, then the moves, then the starts, each as
`Simulator._set_allocation`), with the order and float operations of the Python path.

Every capacity and demand is a whole number (checked by the caller), so every sum of usage is
exact in any order: what `place_changes` computes from the cluster's usage is what it would sum
job by job, and no move or start it places fails in the executor.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from dlsched.sim.gavel_core_parts import (
    ATTAINED,
    DEFICIT,
    FIRST,
    HELD,
    JTYPE,
    PAUSED,
    PRIO,
    PROGRESS,
    PTIME,
    RATE,
    RESCALES,
    VERSION,
    X,
    _fit_gavel,
    _hgrow,
    _hpush,
    _prefix,
)  # fmt: skip
from dlsched.sim.las_core_parts import _add_rows, _give, _settle

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


def _walk(
    act: I64, nact: int, tb: F64, grate: F64, scale: I64, rooms: I64, order_t: I64,
    taken: B, heap: I64, ranked: I64, chosen: I64, ctype: I64,
) -> int:  # fmt: skip
    """`GavelRounds._choose_books`: per type in ``order_t`` (columns), the jobs that may run
    there (estimated rate ``grate[c]`` above 0) in the round's order while its GPUs
    (``rooms[c]``) last, each job once (``taken``, cleared by the caller), each taken where
    its scale fits; the jobs and their types into ``chosen`` and ``ctype``; how many. Each
    type's order is read by exact prefixes (`_prefix`), grown fourfold when the walk reaches
    the end of one, as `books.prefix`'s (the same jobs in the same order)."""
    nch = 0
    for ti in range(order_t.shape[0]):
        c = order_t[ti]
        room = rooms[c]
        pr, deficit, x, rate = tb[PRIO, c], tb[DEFICIT, c], tb[X, c], grate[c]
        k = 64
        while k < room + nch:  # (the prefix the walk would grow to: the same jobs, fewer scans)
            k *= 4
        end, count = _prefix(act, nact, k, pr, deficit, x, rate, heap, ranked)
        at = 0
        while room > 0:
            if at == end:
                if end >= count:
                    break
                k *= 4
                end, count = _prefix(act, nact, k, pr, deficit, x, rate, heap, ranked)
                continue
            j = ranked[at]
            at += 1
            if taken[j] or scale[j] > room:
                continue
            room -= scale[j]
            taken[j] = True
            chosen[nch] = j
            ctype[nch] = c
            nch += 1
    return nch


def _by_size(jobs: I64, types: I64, n: int, scale: I64) -> None:
    """Sort the first ``n`` of ``jobs`` (and ``types`` with them) by decreasing scale, stable
    (`place_changes`' sort by minus the size)."""
    for i in range(1, n):
        j, c = jobs[i], types[i]
        p = i
        while p > 0 and scale[jobs[p - 1]] < scale[j]:
            jobs[p], types[p] = jobs[p - 1], types[p - 1]
            p -= 1
        jobs[p], types[p] = j, c


def _place(
    chosen: I64, ctype: I64, nch: int, holding: B, jtype: I64, keep: B, run: I64, nrun: int,
    scale: I64, dem: F64, cap: F64, used: F64, alloc: I64, stype: I64, mj: I64, mc: I64,
    sj: I64, sc: I64, pending: I64, moved: I64, free: F64, counts: I64, where: I64,
) -> tuple[int, int]:  # fmt: skip
    """`place_changes` of the walk's choice: a chosen running job on its type keeps its
    servers (``keep``), one on another type moves, a chosen waiting job starts. On what the
    cluster holds less what the jobs not chosen give back (in running order): the movers by
    decreasing size, retried pass after pass while any of them found room (each fitted while it
    still holds its old servers, which it then gives back), then each starter once. A start's
    servers go into its row of ``alloc`` (a waiting job holds none), a move's into the row of
    ``moved`` of its rank among the moves made; a mover that found no room loses ``keep`` (it is
    suspended). Returns (the moves, the starts), their jobs and types in placement order in
    ``mj``, ``mc`` and ``sj``, ``sc``."""
    S = cap.shape[0]
    nmov, nst = 0, 0
    for i in range(nch):
        j, c = chosen[i], ctype[i]
        if holding[j]:
            keep[j] = True
            if jtype[j] != c:
                mj[nmov], mc[nmov] = j, c
                nmov += 1
        else:
            sj[nst], sc[nst] = j, c
            nst += 1
    if not (nmov or nst):
        return 0, 0
    _by_size(mj, mc, nmov, scale)
    _by_size(sj, sc, nst, scale)
    for s in range(S):
        for r in range(3):
            free[s, r] = cap[s, r] - used[s, r]
    for i in range(nrun):
        if not keep[run[i]]:
            _add_rows(free, run[i], alloc, dem, S, 1.0)
    nmoved = _fit_movers(mj, mc, nmov, keep, scale, dem, alloc, stype, pending, moved, free,
                         counts, where)  # fmt: skip
    started = 0
    for i in range(nst):
        j, c = sj[i], sc[i]
        if _fit_gavel(free, dem[j], scale[j], counts, where, stype, c) == 0:
            continue
        for s in range(S):
            alloc[j, s] = where[s]
            if where[s]:
                for r in range(3):
                    free[s, r] -= dem[j, r] * where[s]
        sj[started], sc[started] = j, c
        started += 1
    return nmoved, started


def _fit_movers(
    mj: I64, mc: I64, nmov: int, keep: B, scale: I64, dem: F64, alloc: I64, stype: I64,
    pending: I64, moved: I64, free: F64, counts: I64, where: I64,
) -> int:  # fmt: skip
    """`_fit_in_order`'s moves: each of the ``nmov`` movers (``mj``, ``mc``, sorted) goes
    where there is room now, its old servers given back after; those that found none are
    retried while any of the others did. The placed ones end up first in ``mj``, ``mc`` in
    placement order, their servers in the rows of ``moved``; the others lose ``keep``.
    Returns how many moved."""
    S = free.shape[0]
    for i in range(nmov):
        pending[i] = i
    left, nmoved = nmov, 0
    while left:
        later = 0
        for q in range(left):
            m = pending[q]
            j, c = mj[m], mc[m]
            if _fit_gavel(free, dem[j], scale[j], counts, where, stype, c) == 0:
                pending[later] = m  # (``later <= q``: an entry already read)
                later += 1
                continue
            _add_rows(free, j, alloc, dem, S, 1.0)
            for s in range(S):
                moved[nmoved, s] = where[s]
                if where[s]:
                    for r in range(3):
                        free[s, r] -= dem[j, r] * where[s]
            pending[nmov + nmoved] = m  # the placed, in order, after the pending ones
            nmoved += 1
        if later == left:
            break
        left = later
    for q in range(left):  # found no room: suspended this round
        keep[mj[pending[q]]] = False
    for i in range(nmoved):  # the placed ones' jobs and types, in order (mj, mc in place)
        m = pending[nmov + i]
        pending[i] = mj[m]
        pending[nmov + i] = mc[m]
    for i in range(nmoved):
        mj[i], mc[i] = pending[i], pending[nmov + i]
    return nmoved


def _rate_set(
    j: int, c: int, k: int, t: float, speed: F64, trate: F64, jf_rate: F64, paused: F64,
    total: F64, progress: F64, version: I64, hk: F64, hp: I64, nh: int, seq: int,
) -> tuple[F64, I64, int, int]:  # fmt: skip
    """`Simulator._set_allocation`'s end for job ``j`` now on ``k`` servers of type ``c``: a
    new version, its rate (the inner model's speed on ``k`` servers times its true rate on the
    type, `TypedSpeed.speed`) and its completion pushed where the rate is above 0. Returns the
    heap (grown as needed), its size and the last sequence number."""
    version[j] += 1
    jf_rate[j] = speed[j, k] * trate[c, j]
    if jf_rate[j] > 0:
        start = paused[j] if paused[j] > t else t
        done = start + (total[j] - progress[j]) / jf_rate[j]
        seq += 1
        if nh == hk.shape[0]:
            hk, hp = _hgrow(hk, hp)
        nh = _hpush(hk, hp, nh, done, float(seq), j, version[j])
    return hk, hp, nh, seq


# Not split further: the executor's three kinds of change share the job table and a dozen
# scalars, and each is a few lines of `Simulator._set_allocation`'s; read with `Executor.apply`
# side by side: over 80 lines.
def _execute(
    t: float, jf: F64, ji: I64, holding: B, keep: B, alloc: I64, used: F64, nw: I64, dem: F64,
    total: F64, resume: F64, rescale: F64, speed: F64, trate: F64, run: I64, nrun: int,
    npend: int, mj: I64, mc: I64, nmoved: int, moved: I64, sj: I64, sc: I64, nstart: int,
    hk: F64, hp: I64, nh: int, seq: int,
) -> tuple[F64, I64, int, int, int, int]:  # fmt: skip
    """The executor's effects of a round placed by `_place`: the running jobs not kept are
    suspended in running order, then the movers get their new servers (a checkpoint-restart:
    ``rescale`` s paused), then the starters theirs (``resume`` s paused, but for a first
    start). Returns the heap, its size, the last sequence number and the running and pending
    counts."""
    attained, held_s, progress, ptime = jf[ATTAINED], jf[HELD], jf[PROGRESS], jf[PTIME]
    paused, rate, first = jf[PAUSED], jf[RATE], jf[FIRST]
    version, jtype, rescales = ji[VERSION], ji[JTYPE], ji[RESCALES]
    S = used.shape[0]
    kept = 0
    for i in range(nrun):  # suspensions, in running order
        j = run[i]
        if keep[j]:
            run[kept] = j
            kept += 1
            continue
        _settle(j, t, holding, nw, dem, attained, held_s, progress, ptime, paused, rate, total)
        _give(j, alloc, dem, used, S, -1.0)
        for s in range(S):
            alloc[j, s] = 0
        version[j] += 1
        rate[j] = 0.0
        holding[j] = False
        npend += 1
    nrun = kept
    for i in range(nmoved):  # then the moves, in placement order
        j, c = mj[i], mc[i]
        _settle(j, t, holding, nw, dem, attained, held_s, progress, ptime, paused, rate, total)
        _give(j, alloc, dem, used, S, -1.0)
        k = 0
        for s in range(S):
            alloc[j, s] = moved[i, s]
            if moved[i, s]:
                k += 1
        _give(j, alloc, dem, used, S, 1.0)
        jtype[j] = c
        rescales[j] += 1
        paused[j] = t + rescale[j]
        hk, hp, nh, seq = _rate_set(
            j, c, k, t, speed, trate, rate, paused, total, progress, version, hk, hp, nh, seq
        )
    for i in range(nstart):  # then the starts, in placement order
        j, c = sj[i], sc[i]
        _settle(j, t, holding, nw, dem, attained, held_s, progress, ptime, paused, rate, total)
        k = 0
        for s in range(S):
            if alloc[j, s]:
                k += 1
        _give(j, alloc, dem, used, S, 1.0)
        npend -= 1
        run[nrun] = j
        nrun += 1
        holding[j] = True
        jtype[j] = c
        if math.isnan(first[j]):
            first[j] = t
        else:
            paused[j] = t + resume[j]
        hk, hp, nh, seq = _rate_set(
            j, c, k, t, speed, trate, rate, paused, total, progress, version, hk, hp, nh, seq
        )
    return hk, hp, nh, seq, nrun, npend
