"""PROTOTYPE (not wired in, not landed): LAS replay of a fixed-GPU trace on arrays.

Design (issue 31, points 2 and 4): one function, `replay`, re-does what `Simulator` +
`Executor` + `Pack` + `schedulers.las.Las` do for the runs it supports, on a struct-of-arrays
job table (job index = arrival order, ``(submit, job id)``), with the same float64 operations
in the same order, so it can be compiled with ``numba.njit(cache=True)`` as the DL2 kernels
are (`dlsched.papers.dl2.batched_kernels`) while the plain-Python function stays the reference
path. Supported (checked by the caller before anything runs; everything else goes through the
executor unchanged): the ``las`` scheduler, ``pack`` placement, the `Locality` model, on-events
scheduling (no interval, no noise, no horizon, no repack, no event log), jobs without PS that
are not elastic, and whole-number capacities and demands (then every cluster sum is exact, so
the order in which the Python path adds and gives back resources cannot change a bit).

Per point (an arrival or a completion): every active job is ranked by
``(attained GPU-s at now, submit, id)``; the choosing walk takes jobs in that order on the
emptied cluster with `FreeTracker._place`'s rule; chosen pending jobs are placed on what the
chosen running jobs leave; running jobs not chosen keep their place if it is still free
(`take_exact`), else are suspended (in running order) and the starts are placed by `Pack`
(best fit, else most room) on the real cluster. A suspended job resumes after ``resume_s``.

Returns per job: first start, finish (s), GPU-held seconds, and the finish order; a status
code other than `DONE` means the run left what the kernel replays (e.g. the stall rule) and
the caller must run the Python path from scratch.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

DONE, STALLED = 0, 1
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


def _less(a0: float, a1: float, a2: int, b0: float, b1: float, b2: int) -> bool:
    """Tuple order of two LAS keys."""
    if a0 != b0:
        return a0 < b0
    if a1 != b1:
        return a1 < b1
    return a2 < b2


def replay(
    submit: F64,
    jid: I64,
    nw: I64,
    dem: F64,
    total: F64,
    resume: F64,
    speed: F64,
    cap: F64,
    shape: I64,
) -> tuple[
    int, F64, F64, F64, I64, int, float, float, float, int
]:  # over 80 lines: one event loop, the Python path's steps in its order
    """Replay the trace (module docstring). Arrays by job index: ``submit`` (s), ``jid``,
    ``nw`` workers, ``dem`` ``(N, 3)`` per-worker (gpu, cpu, mem), ``total`` work (s at speed
    1), ``resume`` (s), ``speed`` ``(N, S + 1)`` by number of servers held; ``cap`` ``(S, 3)``;
    ``shape``: one id per distinct (demand, workers), for the walk's dead shapes
    (`dlsched.schedulers.pending_queue`: once a shape without PS did not fit, none of it will
    at this point, as the walk only takes resources).

    Returns (status, first start s, finish s, held s, finish order, decisions, end s, busy
    GPU-s, busy CPU-s, events popped).

    Over 80 lines: one event loop that numba compiles whole, the Python path's steps in its
    order."""
    n, S = submit.shape[0], cap.shape[0]
    used = np.zeros((S, 3))
    alloc = np.zeros((n, S), dtype=np.int64)
    nserv = np.zeros(n, dtype=np.int64)
    running_flag = np.zeros(n, dtype=np.bool_)
    attained = np.zeros(n)
    held_s = np.zeros(n)
    progress = np.zeros(n)
    ptime = np.zeros(n)
    paused = np.zeros(n)
    rate = np.zeros(n)
    version = np.zeros(n, dtype=np.int64)
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    order = np.empty(n, dtype=np.int64)
    # completion heap: (time, seq) order; job and version
    cap_h = 1024
    ht, hs = np.empty(cap_h), np.empty(cap_h, dtype=np.int64)
    hj, hv = np.empty(cap_h, dtype=np.int64), np.empty(cap_h, dtype=np.int64)
    nh, seq, pops = 0, 0, 0
    # pending jobs: those never served (key 0 GPU-s: by index) in a linked list, before the
    # others, kept sorted by key in `pend`, largest first (the walk takes from its end, where
    # most starts and suspensions happen: short shifts)
    anext = np.empty(n + 1, dtype=np.int64)
    aprev = np.empty(n + 1, dtype=np.int64)
    anext[n], aprev[n] = n, n
    in_a = np.zeros(n, dtype=np.bool_)
    pend = np.empty(n, dtype=np.int64)
    pkey = np.empty(n)  # their attained GPU-s
    npend = 0  # in `pend`
    na = 0  # in the linked list
    run = np.empty(n, dtype=np.int64)  # running jobs in start order
    nrun = 0
    nxt, nfin, decisions = 0, 0, 0
    now, gpu_used, cpu_used, busy_gpu, busy_cpu = 0.0, 0.0, 0.0, 0.0, 0.0
    chosen = np.empty(n, dtype=np.bool_)
    chosen[:] = False
    starts = np.empty(n, dtype=np.int64)
    suspend = np.zeros(n, dtype=np.int64)
    rk = np.empty(n, dtype=np.int64)
    rkey = np.empty(n)
    counts = np.empty(S, dtype=np.int64)
    scratch = np.empty(S, dtype=np.int64)
    free = np.empty((S, 3))
    fsum = np.zeros(3)
    nsh = int(shape.max()) + 1 if n else 1
    dead = np.full(nsh, -1, dtype=np.int64)  # the point each shape died at
    pcount = np.zeros(nsh, dtype=np.int64)  # pending jobs of each shape
    left = np.zeros(nsh, dtype=np.int64)  # jobs of each shape the walk has still to visit
    gmin = math.inf  # the fewest GPUs a job asks for
    for j in range(n):
        gmin = min(gmin, dem[j, 0] * nw[j])
    while True:
        t_arr = submit[nxt] if nxt < n else math.inf
        t = min(ht[0] if nh else math.inf, t_arr)
        if nfin == n:
            break
        if t == math.inf:
            return STALLED, first, finish, held_s, order, decisions, now, busy_gpu, busy_cpu, pops
        dt = t - now
        if dt > 0:
            busy_gpu += gpu_used * dt
            busy_cpu += cpu_used * dt
            now = t
        changed = False
        while nxt < n and submit[nxt] <= t:
            j = nxt
            nxt += 1
            ptime[j] = t
            _a_insert(anext, aprev, j)
            in_a[j] = True
            na += 1
            pcount[shape[j]] += 1
            changed = True
        while nh and ht[0] <= t:
            j, v = hj[0], hv[0]
            nh = _heap_pop(ht, hs, hj, hv, nh)
            pops += 1
            if version[j] == v and math.isnan(finish[j]):
                _settle(
                    j,
                    t,
                    running_flag,
                    nw,
                    dem,
                    attained,
                    held_s,
                    progress,
                    ptime,
                    paused,
                    rate,
                    total,
                )
                progress[j] = total[j]
                finish[j] = t
                rate[j] = 0.0
                _give(j, alloc, dem, used, S, -1.0)
                nrun = _remove(run, nrun, j)
                running_flag[j] = False
                order[nfin] = j
                nfin += 1
                gpu_used, cpu_used = _sums(used, S)
                changed = True
        if not (changed and (npend or na or nrun)):
            continue
        decisions += 1
        # rank the running jobs by their key now (insertion sort: few run at once)
        for i in range(nrun):
            j = run[i]
            since = t - ptime[j]
            h = since if since > 0.0 else 0.0
            key = attained[j] + nw[j] * dem[j, 0] * h
            p = i
            while p > 0 and _less(
                key, submit[j], jid[j], rkey[p - 1], submit[rk[p - 1]], jid[rk[p - 1]]
            ):
                rk[p], rkey[p] = rk[p - 1], rkey[p - 1]
                p -= 1
            rk[p], rkey[p] = j, key
        # the choosing walk on the emptied cluster, pending and running merged by key
        fsum[:] = 0.0
        for s in range(S):
            for r in range(3):
                free[s, r] = cap[s, r]
                fsum[r] += free[s, r]
        # the walk stops once every shape with jobs still to visit is dead: the rest is skipped
        left[:] = pcount
        for i in range(nrun):
            left[shape[run[i]]] += 1
        live = 0
        for k in range(nsh):
            if left[k]:
                live += 1
        pa, a, b, nstart, nchosen_run = int(anext[n]), npend - 1, 0, 0, 0
        while pa != n or a >= 0 or b < nrun:
            q = int(pa) if pa != n else (int(pend[a]) if a >= 0 else -1)
            if b == nrun or (
                q >= 0 and _less(attained[q], submit[q], jid[q], rkey[b], submit[rk[b]], jid[rk[b]])
            ):
                j = q
                if pa != n:
                    pa = int(anext[pa])
                else:
                    a -= 1
            else:
                j = rk[b]
                b += 1
            sh = shape[j]
            left[sh] -= 1
            if dead[sh] == decisions:
                continue
            w = nw[j]
            g, c, m = dem[j, 0] * w, dem[j, 1] * w, dem[j, 2] * w
            if g > fsum[0] + _EPS or c > fsum[1] + _EPS or m > fsum[2] + _EPS:
                dead[sh] = decisions
                live -= 1
                if live == 0 or (gmin > 0 and gmin > fsum[0] + _EPS):
                    break  # nothing left to visit can fit
                continue
            if not _take(free, dem[j], w, scratch):
                dead[sh] = decisions
                live -= 1
                if live == 0:
                    break
            else:
                if left[sh] == 0:
                    live -= 1
                fsum[0] -= g
                fsum[1] -= c
                fsum[2] -= m
                chosen[j] = True
                if running_flag[j]:
                    nchosen_run += 1
                else:
                    starts[nstart] = j
                    nstart += 1
        if nstart == 0 and nchosen_run == nrun:
            for i in range(nrun):
                chosen[run[i]] = False
            if _stall_check(nxt, n, npend + na, nrun, run, rate):
                return (
                    STALLED,
                    first,
                    finish,
                    held_s,
                    order,
                    decisions,
                    now,
                    busy_gpu,
                    busy_cpu,
                    pops,
                )
            continue
        # what the chosen running jobs leave, for the starts then the others' places
        for s in range(S):
            for r in range(3):
                free[s, r] = cap[s, r] - used[s, r]
        for i in range(nrun):
            j = run[i]
            if not chosen[j]:
                _add_rows(free, j, alloc, dem, S, 1.0)
        nstarted = 0
        for i in range(nstart):
            j = starts[i]
            if _take(free, dem[j], nw[j], scratch):
                starts[nstarted] = j
                nstarted += 1
        nsus = 0
        for i in range(nrun):  # by rank
            j = rk[i]
            if chosen[j]:
                continue
            fits = True
            for s in range(S):
                if alloc[j, s]:
                    for r in range(3):
                        if dem[j, r] * alloc[j, s] > free[s, r] + _EPS:
                            fits = False
            if fits:
                _add_rows(free, j, alloc, dem, S, -1.0)
            else:
                suspend[j] = 1
                nsus += 1
        for i in range(nrun):
            chosen[run[i]] = False
        for i in range(nstart):
            chosen[starts[i]] = False
        # the executor: suspensions in running order, then starts in decision order
        if nsus:
            keep = 0
            for i in range(nrun):
                j = run[i]
                if suspend[j] == 1:
                    suspend[j] = 0
                    _give(j, alloc, dem, used, S, -1.0)
                    _settle(
                        j,
                        t,
                        running_flag,
                        nw,
                        dem,
                        attained,
                        held_s,
                        progress,
                        ptime,
                        paused,
                        rate,
                        total,
                    )
                    for s in range(S):
                        alloc[j, s] = 0
                    nserv[j] = 0
                    version[j] += 1
                    rate[j] = 0.0
                    running_flag[j] = False
                    if attained[j] == 0.0:
                        _a_insert(anext, aprev, j)
                        in_a[j] = True
                        na += 1
                    else:
                        npend = _pend_insert(pend, pkey, npend, j, attained[j], submit, jid)
                    pcount[shape[j]] += 1
                    gpu_used, cpu_used = _sums(used, S)
                else:
                    run[keep] = j
                    keep += 1
            nrun = keep
        for i in range(nstarted):
            j = starts[i]
            for s in range(S):
                for r in range(3):
                    free[s, r] = cap[s, r] - used[s, r]
            if not _pack(free, dem[j], nw[j], counts, scratch):
                continue
            _settle(
                j, t, running_flag, nw, dem, attained, held_s, progress, ptime, paused, rate, total
            )
            k = 0
            for s in range(S):
                alloc[j, s] = counts[s]
                if counts[s]:
                    k += 1
            nserv[j] = k
            _give(j, alloc, dem, used, S, 1.0)
            version[j] += 1
            if in_a[j]:
                _a_remove(anext, aprev, j)
                in_a[j] = False
                na -= 1
            else:
                npend = _pend_remove(pend, pkey, npend, j, submit, jid, attained[j])
            pcount[shape[j]] -= 1
            run[nrun] = j
            nrun += 1
            running_flag[j] = True
            if math.isnan(first[j]):
                first[j] = t
            else:
                paused[j] = t + resume[j]
            rate[j] = speed[j, k] * 1.0
            if rate[j] > 0:
                start = paused[j] if paused[j] > t else t
                done = start + (total[j] - progress[j]) / rate[j]
                seq += 1
                if nh == ht.shape[0]:
                    ht, hs, hj, hv = _grow(ht, hs, hj, hv)
                nh = _heap_push(ht, hs, hj, hv, nh, done, seq, j, version[j])
            gpu_used, cpu_used = _sums(used, S)
        if _stall_check(nxt, n, npend + na, nrun, run, rate):
            return STALLED, first, finish, held_s, order, decisions, now, busy_gpu, busy_cpu, pops
    return DONE, first, finish, held_s, order, decisions, now, busy_gpu, busy_cpu, pops


_COMPILED: dict[str, object] = {}


def compiled_replay() -> object:
    """`replay` compiled by numba (``cache=True``: compiled once per machine, then loaded from
    ``__pycache__``). The functions above stay plain Python (the reference path); here each is
    re-bound in a namespace where its helpers are their compiled selves."""
    if "replay" not in _COMPILED:
        import types

        from numba import njit

        ns = dict(globals())
        for name in _KERNEL_FUNCTIONS:
            f = globals()[name]
            ns[name] = njit(cache=True)(types.FunctionType(f.__code__, ns, name))
        _COMPILED["replay"] = ns["replay"]
    return _COMPILED["replay"]


_KERNEL_FUNCTIONS = (
    "_less", "_settle", "_give", "_add_rows", "_sums", "_remove", "_pend_pos", "_pend_insert",
    "_pend_remove", "_hless", "_hswap", "_heap_push", "_heap_pop", "_grow", "_stall_check",
    "_fit", "_take", "_pack", "_a_insert", "_a_remove", "replay",
)  # fmt: skip
