"""The compiled LAS core: a LAS replay of a fixed-GPU trace on arrays (``simulate(...,
core="compiled")``, `dlsched.sim.las_core_run`).

Design (issue 31, points 2 and 4): one function, `replay`, re-does what `Simulator` +
`Executor` + `Pack` + `schedulers.las.Las` do for the runs it supports, on a struct-of-arrays
job table (job index = arrival order, ``(submit, job id)``), with the same float64 operations
in the same order, so it can be compiled with ``numba.njit(cache=True)`` as the DL2 kernels
are (`dlsched.papers.dl2.batched_kernels`) while the plain-Python function stays the reference
path. Supported (checked by the caller before anything runs; everything else goes through the
executor unchanged): the ``las`` scheduler (and ``tiresias``), ``pack`` placement, the
`Locality` model, scheduling on events and/or periodic ticks (no noise, no repack, no event
log; a horizon is), jobs without PS that are not elastic, and whole-number capacities and
demands (then every cluster sum is exact, so the order in which the Python path adds and gives
back resources cannot change a bit).

Per point (an arrival or a completion): every active job is ranked by
``(attained GPU-s at now, submit, id)`` (Tiresias: ``(queue, submit, id)``, the queue by the
attained GPU-s less the service offset a promotion set, starved jobs promoted first, as
`schedulers.tiresias.Tiresias` does); the choosing walk takes jobs in that order on the
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
from typing import Any

import numpy as np
import numpy.typing as npt

from dlsched.sim.las_core_parts import (  # the kernel's helpers, re-bound by `compiled_replay`
    _EPS,
    _a_insert,
    _a_remove,
    _add_rows,
    _busy_until,
    _finish_job,
    _give,
    _grow,
    _heap_pop,
    _heap_push,
    _less,
    _next_tick,
    _pack,
    _pend_insert,
    _pend_remove,
    _promote,
    _queue_of,
    _rank_running,
    _sample,
    _settle,
    _stall_check,
    _sums,
    _take,
    compile_kernel,
)

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

DONE, STALLED = 0, 1


# Not split into phases: numba compiles the loop whole, and its phases (arrivals and
# completions, ranking, the choosing walk, suspensions, starts) share about 30 arrays and 12
# scalars (list lengths, heap size, busy sums) that each phase both reads and changes; as
# functions they would pass all of them and return the scalars as tuples, and the equality
# evidence (tests/sim/test_las_core.py, the fingerprints) would have to be redone: over 80 lines.
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
    step: float,
    gpus: I64,
    horizon: float,
    interval: float,
    on_events: bool,
    tiresias: bool,
    thresholds: F64,
    knob: float,
) -> tuple[int, F64, F64, F64, I64, int, float, float, float, int, F64, int]:
    """Replay the trace (module docstring). Arrays by job index: ``submit`` (s), ``jid``,
    ``nw`` workers, ``dem`` ``(N, 3)`` per-worker (gpu, cpu, mem), ``total`` work (s at speed
    1), ``resume`` (s), ``speed`` ``(N, S + 1)`` by number of servers held; ``cap`` ``(S, 3)``;
    ``shape``: one id per distinct (demand, workers), for the walk's dead shapes
    (`dlsched.schedulers.pending_queue`: once a shape without PS did not fit, none of it will
    at this point, as the walk only takes resources); ``step``: the timeline's least spacing
    (s); ``gpus``: GPUs of each server, for the timeline's fragmentation; ``horizon``: the
    time (s) the run stops at (``inf``: none), jobs unfinished then are left out of ``order``;
    ``interval``: periodic scheduling's tick interval (s; 0: none, ``SimConfig.interval_s``
    None); ``on_events``: a scheduling point at every arrival and completion; ``tiresias``:
    rank as `schedulers.tiresias.Tiresias` with these ``thresholds`` (GPU-s) and promotion
    ``knob`` instead of as LAS.

    Returns (status, first start s, finish s, held s, finish order, decisions, end s, busy
    GPU-s, busy CPU-s, events popped, timeline samples, their number): a sample's row is
    (time s, GPUs used, CPUs used, running, pending, fragmentation of each server with GPUs:
    `Simulator._record_timeline` after each decision).

    Over 80 lines: one event loop that numba compiles whole, the Python path's steps in its
    order."""
    n, S = submit.shape[0], cap.shape[0]
    used = np.zeros((S, 3))
    alloc = np.zeros((n, S), dtype=np.int64)
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
    pkey = np.empty(n)  # their keys
    pk = np.zeros(n)  # each pending job's key: LAS attained GPU-s, Tiresias queue
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
    rk = np.empty(n, dtype=np.int64)  # the running jobs by key, at the last decision
    rkey = np.empty(n)
    nrk = 0
    inrk = np.zeros(n, dtype=np.bool_)
    # Tiresias' spells (`Tiresias._track`): start of the last run, waiting since, last run's
    # length (s), service offset (GPU-s), a version per job, and the promotion heap
    started = np.zeros(n)
    wsince = np.full(n, np.nan)
    lastrun = np.zeros(n)
    offset = np.zeros(n)
    pver = np.zeros(n, dtype=np.int64)
    pt, ps = np.empty(cap_h), np.empty(cap_h, dtype=np.int64)
    pj, pv = np.empty(cap_h, dtype=np.int64), np.empty(cap_h, dtype=np.int64)
    nph = 0
    later = np.empty(n, dtype=np.int64)
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
    ngpu_servers = 0
    for s in range(S):
        if gpus[s] > 0:
            ngpu_servers += 1
    samples = np.empty((64, 5 + ngpu_servers))  # the timeline (`_sample`), grown as needed
    frag = np.empty((S, 2))  # `_sample`'s scratch space
    ns, status = 0, DONE
    # the one tick due (`Simulator._push_next_tick`): handled after every completion at its
    # time (`EventKind` order), so it needs no place in the heap
    tick_s = math.ceil(submit[0] / interval - 1e-12) * interval if interval > 0 and n else math.inf
    while True:
        t_arr = submit[nxt] if nxt < n else math.inf
        t = min(ht[0] if nh else math.inf, t_arr, tick_s)
        if horizon == math.inf and nfin == n:
            break  # (with a horizon, stale completions up to it are popped and counted)
        if t == math.inf or t > horizon:
            if horizon == math.inf:
                status = STALLED
            else:  # the run ends at the horizon
                now, busy_gpu, busy_cpu = _busy_until(
                    horizon, now, busy_gpu, busy_cpu, gpu_used, cpu_used
                )
            break
        now, busy_gpu, busy_cpu = _busy_until(t, now, busy_gpu, busy_cpu, gpu_used, cpu_used)
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
                nrun, nfin, gpu_used, cpu_used = _finish_job(
                    j, t, running_flag, nw, dem, attained, held_s, progress, ptime, paused,
                    rate, total, finish, alloc, used, S, run, nrun, order, nfin,
                )  # fmt: skip
                changed = True
        tick = tick_s <= t
        if tick:
            pops += 1
            tick_s = _next_tick(t, interval, bool(npend or na or nrun), nxt, n, submit)
        if not ((tick or (changed and on_events)) and (npend or na or nrun)):
            continue
        decisions += 1
        if tiresias and nph:
            nph, npend, na = _promote(
                t, knob, pt, ps, pj, pv, nph, later, pver, wsince, lastrun, offset, attained,
                pk, running_flag, finish, pend, pkey, npend, anext, aprev, in_a, na, submit, jid,
            )  # fmt: skip
        _rank_running(
            t, rk, rkey, nrk, run, nrun, running_flag, inrk, attained, nw, dem, ptime, submit,
            jid, offset, thresholds, tiresias,
        )  # fmt: skip
        nrk = nrun
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
                q >= 0 and _less(pk[q], submit[q], jid[q], rkey[b], submit[rk[b]], jid[rk[b]])
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
            samples, ns = _sample(  # the timeline
                samples, ns, step, t, gpu_used, cpu_used, npend + na, nrun, run,
                alloc, dem, rate, ptime, progress, paused, total, gpus, frag,
            )  # fmt: skip
            if _stall_check(nxt, n, npend + na, nrun, run, rate):
                status = STALLED
                break
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
                        j, t, running_flag, nw, dem, attained, held_s, progress, ptime,
                        paused, rate, total,
                    )  # fmt: skip
                    for s in range(S):
                        alloc[j, s] = 0
                    version[j] += 1
                    rate[j] = 0.0
                    running_flag[j] = False
                    key = attained[j]
                    if tiresias:  # `Tiresias._track`, and the key `PendingQueue.add` gives
                        lastrun[j] = t - started[j]
                        wsince[j] = t
                        pver[j] += 1
                        if lastrun[j] > 0:
                            if nph == pt.shape[0]:
                                pt, ps, pj, pv = _grow(pt, ps, pj, pv)
                            when = t + knob * lastrun[j]
                            nph = _heap_push(pt, ps, pj, pv, nph, when, j, j, pver[j])
                        key = _queue_of(attained[j] - offset[j], thresholds)
                    pk[j] = key
                    if key == 0.0:
                        _a_insert(anext, aprev, j)
                        in_a[j] = True
                        na += 1
                    else:
                        npend = _pend_insert(pend, pkey, npend, j, key, submit, jid)
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
                j, t, running_flag, nw, dem, attained, held_s, progress, ptime,
                paused, rate, total,
            )  # fmt: skip
            k = 0
            for s in range(S):
                alloc[j, s] = counts[s]
                if counts[s]:
                    k += 1
            _give(j, alloc, dem, used, S, 1.0)
            version[j] += 1
            if in_a[j]:
                _a_remove(anext, aprev, j)
                in_a[j] = False
                na -= 1
            else:
                npend = _pend_remove(pend, pkey, npend, j, submit, jid, pk[j])
            pcount[shape[j]] -= 1
            started[j] = t
            wsince[j] = math.nan
            pver[j] += 1
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
        samples, ns = _sample(  # the timeline
            samples, ns, step, t, gpu_used, cpu_used, npend + na, nrun, run,
            alloc, dem, rate, ptime, progress, paused, total, gpus, frag,
        )  # fmt: skip
        if _stall_check(nxt, n, npend + na, nrun, run, rate):
            status = STALLED
            break
    return (
        status, first, finish, held_s, order, decisions, now, busy_gpu, busy_cpu, pops, samples, ns
    )  # fmt: skip


_COMPILED: dict[str, object] = {}


def compiled_replay() -> Any:
    """`replay` compiled by numba (`las_core_parts.compile_kernel`), lazily: at the first call
    (`dlsched.sim.las_core_run.compiles` says whether that call compiles)."""
    if "replay" not in _COMPILED:
        _COMPILED["replay"] = compile_kernel(globals(), _KERNEL_FUNCTIONS)
    return _COMPILED["replay"]


_KERNEL_FUNCTIONS = (
    "_busy_until", "_finish_job", "_next_tick", "_less", "_settle", "_give", "_add_rows", "_sums",
    "_remove", "_pend_pos", "_pend_insert", "_pend_remove", "_hless", "_hswap", "_heap_push",
    "_heap_pop", "_grow", "_stall_check", "_fit", "_take", "_pack", "_a_insert", "_a_remove",
    "_sample", "_queue_of", "_rank_running", "_promote", "replay",
)  # fmt: skip
