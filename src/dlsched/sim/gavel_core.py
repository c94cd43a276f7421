"""The compiled core of Gavel's round mechanism on one GPU type (``simulate(...,
core="compiled")`` of the Gavel LP policies, `dlsched.sim.gavel_core_run`).

Design (issue 31, point 4): `replay` re-does what `Simulator` + `Executor` +
`papers.gavel.rounds.GavelRounds` (its fast path, `books.Books`) + `placement.typed.
place_changes` do, on a struct-of-arrays job table (job index = arrival order, ``(submit, job
id)``), with the same float64 operations in the same order, **in segments**: it runs the event
loop until an allocation reset is due, resets the books, and returns `NEED_X`; the caller
computes the policy's allocation ``X`` of the active jobs (in arrival order) with the policy's
own code, writes it into the ``x`` row of the job table and calls `replay` again, which goes on
from that very point. So every LP policy's allocation stays as it is, and one kernel serves
them all (compiled once, not per policy).

Supported (checked by the caller): a cluster of one GPU type, whole-number capacities and
demands (every sum of usage exact in any order, so `place_changes` is the decision and no job
ever moves), jobs without PS that are not elastic, `Locality`, no noise, no repack, no event
log. Per point: last round's time is added to the running jobs' accounts (and the type's), the
arrivals get half a round, the departed are dropped; a due reset restarts the accounts (Gavel's
``_reset_time_run_so_far``); each active job's priority is computed and the greedy walk reads
the exact prefix of the (priority, deficit, ``X``, arrival) order it needs (a bounded heap,
grown when the walk reaches its end); the chosen waiting jobs are placed (`_fit_gavel`:
`typed._fit_counted`) after the running jobs left out give their servers back; the executor's
effects follow (suspensions in running order, then starts in placement order).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from dlsched.sim.gavel_core_parts import _fit_gavel, _hgrow, _hpop, _hpush  # (re-bound too)
from dlsched.sim.las_core_parts import (  # the kernel's helpers, re-bound by `compiled_replay`
    _busy_until,
    _finish_job,
    _give,
    _next_tick,
    _remove,
    _sample,
    _settle,
    _stall_check,
    _sums,
    compile_kernel,
)

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

DONE, STALLED, NEED_X = 0, 1, 2
_BIG = 1e9
"""`papers.gavel.rounds._BIG`: a job that got no time yet ranks ``_BIG`` times its share."""

# rows of the float job table ``jf`` and the scalars ``fs`` / ``iv`` (state between segments)
ATTAINED, HELD, PROGRESS, PTIME, PAUSED, RATE, FIRST, FINISH, X, JT, DEFICIT, PRIO = range(12)
NOW, BUSY_GPU, BUSY_CPU, TICK, WT, LAST_RESET, LAST_POINT, GPU_USED, CPU_USED = range(9)
NH, SEQ, POPS, NRUN, NXT, NFIN, DECISIONS, NS, NACT, SEEN, FIN_SEEN, CHANGED, RESUME = range(13)
NPEND = 13
VERSION, ORDER, RUN, ACT = range(4)


def _before(a: int, b: int, pr: F64, deficit: F64, x: F64) -> bool:
    """Whether job ``a`` comes before ``b`` in a round's order: decreasing priority, deficit,
    ``X``, then arrival (index)."""
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


def _priorities(act: I64, nact: int, jf: F64, wt: float) -> None:
    """Each active job's priority (`GavelRounds._priorities_fast`, the same floats) into the
    ``PRIO`` row: ``X`` over the fraction of the type's time it got, ``X * _BIG`` before it got
    any, 0 where ``X`` or the rate is not above 0 (the rate is checked by the walk)."""
    x, jt, pr = jf[X], jf[JT], jf[PRIO]
    for i in range(nact):
        j = act[i]
        fraction = jt[j] / wt if wt > 0 else 0.0
        share = x[j] / fraction if fraction > 0 else x[j] * _BIG
        pr[j] = 0.0 if x[j] <= 0.0 else share


def _walk(
    act: I64, nact: int, jf: F64, grate: F64, scale: I64, room: int, heap: I64, order: I64,
    chosen: I64,
) -> int:  # fmt: skip
    """`GavelRounds._choose_books` on one type: the jobs that may run (estimated rate above
    0) in the round's order while GPUs are left (``room``), each taken where its scale fits,
    into ``chosen``; how many. The order's prefix grows fourfold when the walk reaches its
    end, as `books.prefix`'s does (the same jobs in the same order)."""
    pr, deficit, x = jf[PRIO], jf[DEFICIT], jf[X]
    k = 64
    while k < room:  # (the prefix the walk would grow to: the same jobs, fewer scans)
        k *= 4
    end, count = _prefix(act, nact, k, pr, deficit, x, grate, heap, order)
    at, nch = 0, 0
    while room > 0:
        if at == end:
            if end >= count:
                break
            k *= 4
            end, count = _prefix(act, nact, k, pr, deficit, x, grate, heap, order)
            continue
        j = order[at]
        at += 1
        if scale[j] > room:
            continue
        room -= scale[j]
        chosen[nch] = j
        nch += 1
    return nch


def _account(
    t: float, jf: F64, ji: I64, holding: B, fs: F64, iv: I64, half: float, reset_every: float
) -> bool:
    """`GavelRounds._decide_fast` up to the allocation: last round's time into the running
    jobs' accounts and the type's (in running order), arrivals get half a round on the type,
    departures are dropped; where a reset is due the books restart (`_reset_books`) and True
    is returned (the caller then needs the policy's ``X``)."""
    jt, x, deficit = jf[JT], jf[X], jf[DEFICIT]
    order, run, act = ji[ORDER], ji[RUN], ji[ACT]
    last = fs[LAST_POINT]
    elapsed = 0.0 if math.isnan(last) else t - last
    fs[LAST_POINT] = t
    wt = fs[WT]
    for i in range(iv[NRUN]):
        jt[run[i]] += elapsed
    for _ in range(iv[NRUN]):  # one addition a running job, as the fast path's
        wt += elapsed
    nact = iv[NACT]
    arrived = iv[NXT] > iv[SEEN]
    for j in range(iv[SEEN], iv[NXT]):  # arrivals (by index: appended in order)
        jt[j] = half
        deficit[j] = 0.0
        x[j] = 0.0
        wt += half
        act[nact] = j
        nact += 1
    iv[SEEN] = iv[NXT]
    departed = iv[NFIN] > iv[FIN_SEEN]
    for f in range(iv[FIN_SEEN], iv[NFIN]):
        nact = _remove(act, nact, order[f])
    iv[FIN_SEEN] = iv[NFIN]
    iv[NACT] = nact
    if arrived or departed:
        iv[CHANGED] = 1
    fs[WT] = wt
    last_reset = fs[LAST_RESET]
    if not (iv[CHANGED] and (math.isnan(last_reset) or t - last_reset >= reset_every)):
        return False
    since = 0.0 if math.isnan(last_reset) else t - last_reset
    total = 0.0
    for i in range(nact):
        j = act[i]
        deficit[j] = (deficit[j] + x[j] * since) - (jt[j] - half)
        jt[j] = half
        total += half  # `rounds._repeated_sum`
    fs[WT] = total
    fs[LAST_RESET] = t
    return True


# Not split further: numba compiles the loop whole, and its phases (events, the round's
# accounts, the walk, placement, the executor's effects) share the job table, the heap and a
# dozen scalars that each phase reads and changes; the event handling is `las_core.replay`'s
# (the same simulator, through the same helpers `_busy_until`, `_finish_job`, `_next_tick`), so
# the two can be read side by side: over 80 lines.
def replay(
    submit: F64, jid: I64, nw: I64, dem: F64, total: F64, resume: F64, speed: F64, cap: F64,
    step: float, gpus: I64, horizon: float, interval: float, on_events: bool,
    grate: F64, scale: I64, room_gpus: int, half: float, reset_every: float,
    jf: F64, ji: I64, holding: B, alloc: I64, used: F64,
    hk: F64, hp: I64, samples: F64, fs: F64, iv: I64,
) -> tuple[int, F64, I64, F64]:  # fmt: skip
    """Replay from the state in ``jf``, ``ji``, ``holding``, ``alloc``, ``used``, the heap
    (``hk``, ``hp``: `_hpush`), ``samples``, ``fs`` and ``iv`` (module docstring; rows
    and slots named by the module's constants) until the run ends (`DONE`), leaves what the
    kernel replays (`STALLED`: the stall rule) or a reset needs the policy's ``X``
    (`NEED_X`: write it into ``jf[X]`` for ``ji[ACT][:iv[NACT]]`` and call again).

    The job table and `las_core.replay`'s first arguments as there; ``grate``: each job's
    estimated rate on the type (1.0 without estimates), ``scale``: its GPUs (`scale_of`),
    ``room_gpus``: the type's GPUs, ``half``: half a round (s), ``reset_every``: the least
    time between resets (s). Returns (status, and the heap and samples, grown as needed)."""
    n, S = submit.shape[0], cap.shape[0]
    attained, held_s, progress, ptime = jf[ATTAINED], jf[HELD], jf[PROGRESS], jf[PTIME]
    paused, rate, first, finish = jf[PAUSED], jf[RATE], jf[FIRST], jf[FINISH]
    version, order, run, act = ji[VERSION], ji[ORDER], ji[RUN], ji[ACT]
    now, busy_gpu, busy_cpu, tick_s = fs[NOW], fs[BUSY_GPU], fs[BUSY_CPU], fs[TICK]
    gpu_used, cpu_used = fs[GPU_USED], fs[CPU_USED]
    nh, seq, pops, nrun, nxt, nfin = iv[NH], iv[SEQ], iv[POPS], iv[NRUN], iv[NXT], iv[NFIN]
    decisions, ns, npend = iv[DECISIONS], iv[NS], iv[NPEND]
    heap = np.empty(n, dtype=np.int64)
    ranked = np.empty(n, dtype=np.int64)
    chosen = np.empty(n, dtype=np.int64)
    keep = np.zeros(n, dtype=np.bool_)
    counts = np.empty(S, dtype=np.int64)
    where = np.empty(S, dtype=np.int64)
    free = np.empty((S, 3))
    frag = np.empty((S, 2))  # `_sample`'s scratch space
    status = DONE
    while True:
        if iv[RESUME]:  # the point the last segment stopped at, its ``X`` now written
            iv[RESUME] = 0
            iv[CHANGED] = 0
            t = now
        else:
            t_arr = submit[nxt] if nxt < n else math.inf
            t = min(hk[0, 0] if nh else math.inf, t_arr, tick_s)
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
                ptime[nxt] = t
                nxt += 1
                npend += 1
                changed = True
            while nh and hk[0, 0] <= t:
                j, v = hp[0, 0], hp[0, 1]
                nh = _hpop(hk, hp, nh)
                pops += 1
                if version[j] == v and math.isnan(finish[j]):
                    nrun, nfin, gpu_used, cpu_used = _finish_job(
                        j, t, holding, nw, dem, attained, held_s, progress, ptime, paused,
                        rate, total, finish, alloc, used, S, run, nrun, order, nfin,
                    )  # fmt: skip
                    changed = True
            tick = tick_s <= t
            if tick:
                pops += 1
                tick_s = _next_tick(t, interval, bool(npend or nrun), nxt, n, submit)
            if not ((tick or (changed and on_events)) and (npend or nrun)):
                continue
            decisions += 1
            iv[NRUN], iv[NXT], iv[NFIN] = nrun, nxt, nfin
            if _account(t, jf, ji, holding, fs, iv, half, reset_every):
                iv[RESUME] = 1
                status = NEED_X
                break
        # the round: priorities, the walk, then `place_changes` and the executor
        _priorities(act, iv[NACT], jf, fs[WT])
        nch = _walk(act, iv[NACT], jf, grate, scale, room_gpus, heap, ranked, chosen)
        nstart = 0
        for i in range(nch):
            j = chosen[i]
            if holding[j]:
                keep[j] = True
            else:
                ranked[nstart] = j
                nstart += 1
        nsus = 0
        for i in range(nrun):
            if not keep[run[i]]:
                nsus += 1
        # starters by decreasing size, stable (`place_changes`' sort), fitted after the
        # suspended jobs give their servers back (the executor suspends first)
        ns_started = 0
        if nstart:
            for i in range(1, nstart):
                j = ranked[i]
                p = i
                while p > 0 and scale[ranked[p - 1]] < scale[j]:
                    ranked[p] = ranked[p - 1]
                    p -= 1
                ranked[p] = j
            for s in range(S):
                for r in range(3):
                    free[s, r] = cap[s, r] - used[s, r]
            for i in range(nrun):
                j = run[i]
                if not keep[j]:
                    for s in range(S):
                        if alloc[j, s]:
                            for r in range(3):
                                free[s, r] += dem[j, r] * alloc[j, s]
            for i in range(nstart):
                j = ranked[i]
                k = _fit_gavel(free, dem[j], nw[j], counts, where)
                if k == 0:
                    continue
                for s in range(S):
                    alloc[j, s] = where[s]  # (a waiting job holds nothing: its row is 0)
                    if where[s]:
                        for r in range(3):
                            free[s, r] -= dem[j, r] * where[s]
                ranked[ns_started] = j
                ns_started += 1
        if nsus:  # the executor: suspensions in running order
            kept = 0
            for i in range(nrun):
                j = run[i]
                if keep[j]:
                    run[kept] = j
                    kept += 1
                    continue
                _settle(
                    j, t, holding, nw, dem, attained, held_s, progress, ptime,
                    paused, rate, total,
                )  # fmt: skip
                _give(j, alloc, dem, used, S, -1.0)
                for s in range(S):
                    alloc[j, s] = 0
                version[j] += 1
                rate[j] = 0.0
                holding[j] = False
                npend += 1
            nrun = kept
        for i in range(nch):
            keep[chosen[i]] = False
        for i in range(ns_started):  # then the starts, in placement order
            j = ranked[i]
            _settle(
                j, t, holding, nw, dem, attained, held_s, progress, ptime,
                paused, rate, total,
            )  # fmt: skip
            k = 0
            for s in range(S):
                if alloc[j, s]:
                    k += 1
            _give(j, alloc, dem, used, S, 1.0)
            version[j] += 1
            npend -= 1
            run[nrun] = j
            nrun += 1
            holding[j] = True
            if math.isnan(first[j]):
                first[j] = t
            else:
                paused[j] = t + resume[j]
            rate[j] = speed[j, k] * 1.0
            if rate[j] > 0:
                start = paused[j] if paused[j] > t else t
                done = start + (total[j] - progress[j]) / rate[j]
                seq += 1
                if nh == hk.shape[0]:
                    hk, hp = _hgrow(hk, hp)
                nh = _hpush(hk, hp, nh, done, float(seq), j, version[j])
        if nsus or ns_started:
            gpu_used, cpu_used = _sums(used, S)
        samples, ns = _sample(  # the timeline
            samples, ns, step, t, gpu_used, cpu_used, npend, nrun, run,
            alloc, dem, rate, ptime, progress, paused, total, gpus, frag,
        )  # fmt: skip
        if _stall_check(nxt, n, npend, nrun, run, rate):
            status = STALLED
            break
    fs[NOW], fs[BUSY_GPU], fs[BUSY_CPU], fs[TICK] = now, busy_gpu, busy_cpu, tick_s
    fs[GPU_USED], fs[CPU_USED] = gpu_used, cpu_used
    iv[NH], iv[SEQ], iv[POPS], iv[NRUN], iv[NXT], iv[NFIN] = nh, seq, pops, nrun, nxt, nfin
    iv[DECISIONS], iv[NS], iv[NPEND] = decisions, ns, npend
    return status, hk, hp, samples


_COMPILED: dict[str, object] = {}


def compiled_replay() -> Any:
    """`replay` compiled by numba (`las_core_parts.compile_kernel`), lazily: at the first call
    (`dlsched.sim.las_core_run.compiles` says whether that call compiles)."""
    if "replay" not in _COMPILED:
        _COMPILED["replay"] = compile_kernel(globals(), _KERNEL_FUNCTIONS)
    return _COMPILED["replay"]


_KERNEL_FUNCTIONS = (
    "_busy_until", "_finish_job", "_next_tick", "_settle", "_give", "_sums", "_remove", "_hpush",
    "_hpop", "_hgrow", "_stall_check", "_fit", "_sample", "_before", "_sift_down", "_prefix",
    "_priorities", "_fit_gavel", "_walk", "_account", "replay",
)  # fmt: skip
