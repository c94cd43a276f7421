"""Helpers of `dlsched.sim.las_core` (plain Python that numba compiles): the executor's and
the choosing walk's placement rules, settling a job, the pending lists and the completion heap,
each with the float operations of the Python path it stands for. Units: seconds, GPUs, cores.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

_EPS = 1e-9


def _settle(
    j: int, t: float, holding: npt.NDArray[np.bool_], nw: I64, dem: F64, attained: F64,
    held_s: F64, progress: F64, ptime: F64, paused: F64, rate: F64, total: F64,
) -> None:  # fmt: skip
    """`Simulator._settle`: progress, attained GPU-s and held s up to ``t``."""
    since = ptime[j]
    if holding[j]:
        held = nw[j] * dem[j, 0]
        attained[j] += held * (t - since if t > since else 0.0)
        held_s[j] += t - since if t > since else 0.0
    ran_from = since if since >= paused[j] else paused[j]
    if rate[j] > 0.0 and t > ran_from:
        progress[j] = min(total[j], progress[j] + rate[j] * (t - ran_from))
    ptime[j] = t


def _finish_job(
    j: int, t: float, holding: npt.NDArray[np.bool_], nw: I64, dem: F64, attained: F64,
    held_s: F64, progress: F64, ptime: F64, paused: F64, rate: F64, total: F64, finish: F64,
    alloc: I64, used: F64, S: int, run: I64, nrun: int, order: I64, nfin: int,
) -> tuple[int, int, float, float]:  # fmt: skip
    """`Simulator`'s completion of job ``j`` at ``t`` (s): settled, its tasks given back, off
    the running list ``run`` and next in the finishing ``order``; the running and finished counts
    and the GPUs and cores then in use."""
    _settle(j, t, holding, nw, dem, attained, held_s, progress, ptime, paused, rate, total)
    progress[j] = total[j]
    finish[j] = t
    rate[j] = 0.0
    _give(j, alloc, dem, used, S, -1.0)
    nrun = _remove(run, nrun, j)
    holding[j] = False
    order[nfin] = j
    gpu_used, cpu_used = _sums(used, S)
    return nrun, nfin + 1, gpu_used, cpu_used


def _busy_until(
    t: float, now: float, busy_gpu: float, busy_cpu: float, gpu_used: float, cpu_used: float
) -> tuple[float, float, float]:
    """Time moved on to ``t`` (s) where it is later than ``now``, the GPUs and cores in use
    counted busy in between: (``now``, busy GPU-s, busy core-s)."""
    if t > now:
        busy_gpu += gpu_used * (t - now)
        busy_cpu += cpu_used * (t - now)
        now = t
    return now, busy_gpu, busy_cpu


def _next_tick(t: float, interval: float, busy: bool, nxt: int, n: int, submit: F64) -> float:
    """The periodic point after the one at ``t`` (s): ``t + interval`` while any job is active
    (``busy``), else the first one at or after the next arrival, else never."""
    if busy:
        return t + interval
    if nxt < n:
        return math.ceil(submit[nxt] / interval - 1e-12) * interval
    return math.inf


def _give(j: int, alloc: I64, dem: F64, used: F64, S: int, sign: float) -> None:
    """Take (``sign`` 1) or give back (-1) job ``j``'s tasks in ``used`` (whole numbers)."""
    for s in range(S):
        k = alloc[j, s]
        if k:
            for r in range(3):
                x = used[s, r] + sign * (dem[j, r] * k)
                used[s, r] = x if x > 0.0 else 0.0


def _add_rows(free: F64, j: int, alloc: I64, dem: F64, S: int, sign: float) -> None:
    for s in range(S):
        k = alloc[j, s]
        if k:
            for r in range(3):
                free[s, r] += sign * (dem[j, r] * k)


def _sums(used: F64, S: int) -> tuple[float, float]:
    g, c = 0.0, 0.0
    for s in range(S):
        g += used[s, 0]
        c += used[s, 1]
    return g, c


def _remove(run: I64, nrun: int, j: int) -> int:
    """Drop ``j`` from the first ``nrun`` of ``run``, keeping the order."""
    i = 0
    while run[i] != j:
        i += 1
    for p in range(i, nrun - 1):
        run[p] = run[p + 1]
    return nrun - 1


def _pend_pos(pend: I64, pkey: F64, npend: int, key: float, submit: F64, jid: I64, j: int) -> int:
    lo, hi = 0, npend
    while lo < hi:
        mid = (lo + hi) // 2
        q = pend[mid]
        if _less(key, submit[j], jid[j], pkey[mid], submit[q], jid[q]):  # largest key first
            lo = mid + 1
        else:
            hi = mid
    return lo


def _pend_insert(
    pend: I64, pkey: F64, npend: int, j: int, key: float, submit: F64, jid: I64
) -> int:
    i = _pend_pos(pend, pkey, npend, key, submit, jid, j)
    for p in range(npend, i, -1):
        pend[p], pkey[p] = pend[p - 1], pkey[p - 1]
    pend[i], pkey[i] = j, key
    return npend + 1


def _pend_remove(
    pend: I64, pkey: F64, npend: int, j: int, submit: F64, jid: I64, key: float
) -> int:
    i = _pend_pos(pend, pkey, npend, key, submit, jid, j)
    for p in range(i, npend - 1):
        pend[p], pkey[p] = pend[p + 1], pkey[p + 1]
    return npend - 1


def _a_insert(anext: I64, aprev: I64, j: int) -> None:
    """Put ``j`` into the never-served list (by job index: arrival order), from its tail."""
    head = anext.shape[0] - 1
    q = aprev[head]
    while q != head and q > j:
        q = aprev[q]
    nq = anext[q]
    anext[q], aprev[j], anext[j], aprev[nq] = j, q, nq, j


def _a_remove(anext: I64, aprev: I64, j: int) -> None:
    p, q = aprev[j], anext[j]
    anext[p], aprev[q] = q, p


def _hless(ht: F64, hs: I64, a: int, b: int) -> bool:
    return ht[a] < ht[b] or (ht[a] == ht[b] and hs[a] < hs[b])


def _hswap(ht: F64, hs: I64, hj: I64, hv: I64, a: int, b: int) -> None:
    ht[a], ht[b] = ht[b], ht[a]
    hs[a], hs[b] = hs[b], hs[a]
    hj[a], hj[b] = hj[b], hj[a]
    hv[a], hv[b] = hv[b], hv[a]


def _heap_push(
    ht: F64, hs: I64, hj: I64, hv: I64, nh: int, t: float, q: int, j: int, v: int
) -> int:
    i = nh
    ht[i], hs[i], hj[i], hv[i] = t, q, j, v
    while i > 0:
        p = (i - 1) // 2
        if not _hless(ht, hs, i, p):
            break
        _hswap(ht, hs, hj, hv, i, p)
        i = p
    return nh + 1


def _heap_pop(ht: F64, hs: I64, hj: I64, hv: I64, nh: int) -> int:
    nh -= 1
    _hswap(ht, hs, hj, hv, 0, nh)
    i = 0
    while True:
        a, b, m = 2 * i + 1, 2 * i + 2, i
        if a < nh and _hless(ht, hs, a, m):
            m = a
        if b < nh and _hless(ht, hs, b, m):
            m = b
        if m == i:
            return nh
        _hswap(ht, hs, hj, hv, i, m)
        i = m


def _grow(ht: F64, hs: I64, hj: I64, hv: I64) -> tuple[F64, I64, I64, I64]:
    n = ht.shape[0]
    t2, s2 = np.empty(2 * n), np.empty(2 * n, dtype=np.int64)
    j2, v2 = np.empty(2 * n, dtype=np.int64), np.empty(2 * n, dtype=np.int64)
    t2[:n], s2[:n], j2[:n], v2[:n] = ht, hs, hj, hv
    return t2, s2, j2, v2


def _stall_check(nxt: int, n: int, npend: int, nrun: int, run: I64, rate: F64) -> bool:
    # ``npend``: every pending job, both lists
    """Whether `Simulator._watch_for_stall` would count an idle retry (the kernel stops)."""
    if nxt < n or not (npend or nrun):
        return False
    for i in range(nrun):  # noqa: SIM110 - a loop numba compiles
        if rate[run[i]] > 0:
            return False
    return True


def _fit(free: F64, s: int, dem: F64) -> int:
    """`tasks_that_fit(free[s], dem)` (same float operations)."""
    g, c, m = dem[0], dem[1], dem[2]
    best = math.floor((free[s, 0] + _EPS) / g) if g > 0 else 2**30
    if c > 0:
        n = math.floor((free[s, 1] + _EPS) / c)
        if n < best:
            best = n
    if m > 0:
        n = math.floor((free[s, 2] + _EPS) / m)
        if n < best:
            best = n
    return best if best > 0 else 0


def _take(free: F64, dem: F64, n: int, counts: I64) -> bool:
    """`FreeTracker.take` without PS: as many as fit on the server where most fit, repeat
    (``counts``: scratch space, one a server)."""
    S = free.shape[0]
    if not (dem[0] > 0 or dem[1] > 0 or dem[2] > 0):
        return True
    total = 0
    for s in range(S):
        counts[s] = _fit(free, s, dem)
        total += counts[s]
    if total < n:
        return False
    left = n
    while left > 0:
        arg = 0
        for s in range(1, S):
            if counts[s] > counts[arg]:
                arg = s
        k = min(left, counts[arg])
        for r in range(3):
            free[arg, r] = free[arg, r] + dem[r] * -k
        counts[arg] = _fit(free, arg, dem)
        left -= k
    return True


def _pack(free: F64, dem: F64, n: int, out: I64, fits: I64) -> bool:
    """`Pack.place` of a start without PS on ``free`` (changed); per-server counts in ``out``
    (``fits``: scratch space)."""
    S = free.shape[0]
    for s in range(S):
        out[s] = 0
        fits[s] = _fit(free, s, dem)
    left = n
    while left > 0:
        most = -1
        for s in range(S):
            if fits[s] > most:
                most = fits[s]
        if most <= 0:
            return False
        if most < left:
            arg = 0
            while fits[arg] != most:
                arg += 1
        else:  # the tightest server taking all that is left
            low = most
            for s in range(S):
                if left <= fits[s] < low:
                    low = fits[s]
            arg = 0
            while fits[arg] != low:
                arg += 1
        k = min(left, fits[arg])
        out[arg] += k
        for r in range(3):
            free[arg, r] = free[arg, r] - dem[r] * k
        fits[arg] = _fit(free, arg, dem)
        left -= k
    return True


def _sample(
    samples: F64, ns: int, step: float, t: float, gpu_used: float, cpu_used: float,
    npending: int, nrun: int, run: I64, alloc: I64, dem: F64, rate: F64, ptime: F64,
    progress: F64, paused: F64, total: F64, gpus: I64, frag: F64,
) -> tuple[F64, int]:  # fmt: skip
    """`Simulator._record_timeline` at ``t``: a row of ``samples`` (grown when full) unless the
    last is less than ``step`` s before; each server's fragmentation as `metrics.fragmentation`
    computes it (same float operations; NumPy's mean of the row is taken by the caller)."""
    if ns and t - samples[ns - 1, 0] < step:
        return samples, ns
    if ns == samples.shape[0]:
        bigger = np.empty((2 * ns, samples.shape[1]))
        bigger[:ns] = samples
        samples = bigger
    row = samples[ns]
    row[0], row[1], row[2], row[3], row[4] = t, gpu_used, cpu_used, nrun, npending
    S = gpus.shape[0]
    frag[:] = 0.0  # per server: sum of GPU-weighted remaining s, and of its square
    for i in range(nrun):
        j = run[i]
        per_task = dem[j, 0]
        r, p = rate[j], paused[j]
        left = 1e9
        if r > 0:
            since, done = ptime[j], progress[j]
            start = since if since >= p else p
            if t > start:
                x = done + r * (t - start)
                done = total[j] if total[j] <= x else x
            left = total[j] - done
            left = (left if left > 0.0 else 0.0) / r
            if left > 1e9:
                left = 1e9
        if p > t:
            left += p - t
        for s in range(S):
            if alloc[j, s]:  # whole demands: ``k * per_task`` is `round`'s whole number
                weight = (alloc[j, s] * per_task) * left
                frag[s, 0] += weight
                frag[s, 1] += weight * left
    g = 5
    for s in range(S):
        if gpus[s] > 0:
            v, q = frag[s, 0], frag[s, 1]
            row[g] = 1.0 - v * v / (gpus[s] * q) if q > 0 else 0.0
            g += 1
    return samples, ns + 1


def _less(a0: float, a1: float, a2: int, b0: float, b1: float, b2: int) -> bool:
    """Tuple order of two LAS keys."""
    if a0 != b0:
        return a0 < b0
    if a1 != b1:
        return a1 < b1
    return a2 < b2


def _queue_of(service: float, thresholds: F64) -> float:
    """`Tiresias.queue_of` of ``service`` GPU-s (``bisect_right`` over the thresholds)."""
    q = 0
    for x in thresholds:
        if x <= service:
            q += 1
    return float(q)


def _rank_running(
    t: float, rk: I64, rkey: F64, nrk: int, run: I64, nrun: int, holding: npt.NDArray[np.bool_],
    inrk: npt.NDArray[np.bool_], attained: F64, nw: I64, dem: F64, ptime: F64, submit: F64,
    jid: I64, offset: F64, thresholds: F64, tiresias: bool,
) -> None:  # fmt: skip
    """The first ``nrun`` of ``rk``: the running jobs by key at ``t`` (LAS: attained GPU-s, as
    `schedulers.las.service_key`; Tiresias: its queue, `JobRun.attained_gpu_s_at` less the
    service offset), ``rkey`` their keys; ``rk``'s first ``nrk`` are the last point's ranking.

    Sorted by insertion from the last ranking (those still running), then the jobs started
    since: keys are unique, so the order is the same from any start, and this start is nearly
    sorted (a Tiresias job's key changes only when it crosses a threshold)."""
    m = 0
    for i in range(nrk):
        j = rk[i]
        if holding[j]:
            rk[m] = j
            m += 1
        else:
            inrk[j] = False
    for i in range(nrun):
        j = run[i]
        if not inrk[j]:
            inrk[j] = True
            rk[m] = j
            m += 1
    for i in range(m):
        j = rk[i]
        since = t - ptime[j]
        h = since if since > 0.0 else 0.0
        key = attained[j] + nw[j] * dem[j, 0] * h
        if tiresias:
            key = _queue_of(key - offset[j], thresholds)
        p = i
        while p > 0 and _less(
            key, submit[j], jid[j], rkey[p - 1], submit[rk[p - 1]], jid[rk[p - 1]]
        ):
            rk[p], rkey[p] = rk[p - 1], rkey[p - 1]
            p -= 1
        rk[p], rkey[p] = j, key


def _promote(
    t: float, knob: float, pt: F64, ps: I64, pj: I64, pv: I64, nph: int, later: I64,
    pver: I64, wsince: F64, lastrun: F64, offset: F64, attained: F64, pk: F64,
    holding: npt.NDArray[np.bool_], finish: F64, pend: I64, pkey: F64, npend: int,
    anext: I64, aprev: I64, in_a: npt.NDArray[np.bool_], na: int, submit: F64, jid: I64,
) -> tuple[int, int, int]:  # fmt: skip
    """`Tiresias._promote` at ``t``: each waiting job that has waited ``knob`` times its last
    run gets its attained GPU-s as service offset and moves to queue 0 (the never-served list,
    by index). ``pt, ps, pj, pv``: a heap of (due time, job index, job, version ``pver`` at the
    job's suspension; another start, suspension or promotion since makes it stale), ``nph``
    long; ``later``: scratch space. Returns the heap's and the two pending lists' lengths."""
    nlater = 0
    # the heap's times are rounded sums: look a little ahead, decide by the exact test
    while nph and pt[0] <= t + 1e-6 * max(1.0, abs(t)):
        j, v = pj[0], pv[0]
        nph = _heap_pop(pt, ps, pj, pv, nph)
        if pver[j] != v or holding[j] or not math.isnan(finish[j]):
            continue
        if t - wsince[j] >= knob * lastrun[j]:
            offset[j] = attained[j]  # `attained_gpu_s_at` of a waiting job
            wsince[j] = t
            lastrun[j] = 0.0
            pver[j] += 1
            if pk[j] != 0.0:  # its key (queue, submit, id) becomes queue 0's
                npend = _pend_remove(pend, pkey, npend, j, submit, jid, pk[j])
                pk[j] = 0.0
                _a_insert(anext, aprev, j)
                in_a[j] = True
                na += 1
        else:
            later[nlater] = j
            nlater += 1
    for i in range(nlater):
        j = later[i]
        nph = _heap_push(pt, ps, pj, pv, nph, wsince[j] + knob * lastrun[j], j, j, pver[j])
    return nph, npend, na


def compile_kernel(module_globals: dict[str, Any], names: tuple[str, ...]) -> Any:
    """A core's ``replay`` compiled by numba (``cache=True``: compiled once per machine, then
    loaded from ``__pycache__`` or numba's user cache directory; where neither is writable,
    compiled in every process). The core's functions (``names``, its module's
    ``module_globals``) and these helpers stay plain Python (the reference path); each is
    re-bound in a namespace where the functions it calls are their compiled selves."""
    import types

    from numba import njit

    from dlsched.kernel_cache import refresh

    refresh(__file__)  # the helpers here are other files' kernels' callees
    ns = {**globals(), **module_globals}
    plain = dict(ns)
    for name in names:
        function = types.FunctionType(plain[name].__code__, ns, name)
        try:
            ns[name] = njit(cache=True)(function)
        except RuntimeError:  # numba found no writable cache directory for this file
            ns[name] = njit(function)
    return ns["replay"]
