"""The compiled core of Gavel's round mechanism (``simulate(..., core="compiled")`` of the
Gavel LP policies, `dlsched.sim.gavel_core_run`), on one or several GPU types.

Design (issue 31, point 4; several types: issue 33): `replay` re-does what `Simulator` +
`Executor` + `papers.gavel.rounds.GavelRounds` (its fast path, `books.Books`) +
`placement.typed.place_changes` do, on a struct-of-arrays job table (job index = arrival order,
``(submit, job id)``), with the same float64 operations in the same order, **in segments**: it
runs the event loop until an allocation reset is due, resets the books, and returns `NEED_X`;
the caller computes the policy's allocation ``X`` of the active jobs (in arrival order) with the
policy's own code, writes it into the books ``tb[X]`` and calls `replay` again, which goes on
from that very point. So every LP policy's allocation stays as it is, and one kernel serves
them all (compiled once, not per policy). A type-agnostic policy on several types fills them in
a seeded shuffled order each round (`GavelRounds._type_order`): the caller draws those orders
with the policy's own generator, a batch at a time, and the kernel returns `NEED_ORDER` when it
has used them up.

Supported (checked by the caller): whole-number capacities and demands (every sum of usage
exact in any order, so `place_changes` is the decision), jobs without PS that are not elastic,
`Locality` or `FixedDuration` speeds (also under `TypedSpeed`: times the job's true rate on its
type), no noise, no repack, no event log, and an order of the types that does not depend on the
jobs (Gavel's fixed order, or the shuffle). Per point: last round's time is added to the
running jobs' accounts on their type (and the type's), the arrivals get half a round on every
type, the departed are dropped; a due reset restarts the accounts (Gavel's
``_reset_time_run_so_far``); the greedy walk reads, type after type, that type's (priority,
deficit, ``X``, arrival) order as far as it needs, from the order kept between points
(`gavel_core_order._walk_fast`: a cost proportional to what the walk reads and to the jobs that
ran since the reset), or where that order cannot be kept, from every active job's priority
(`gavel_core_round._walk`, the same jobs in the same order); the chosen jobs are placed
(`gavel_core_round._place`: moves between types, then starts, after the running jobs left out
give their servers back) and the executor's effects follow (`gavel_core_round._execute`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from dlsched.sim.gavel_core_order import (  # noqa: F401 - also the names `compile_kernel` re-binds
    _BIG,
    BE,
    HHEAP,
    HMAT,
    HP,
    HRUN,
    HSTART,
    INSCR,
    NHH,
    NHZ,
    NMH,
    NMZ,
    NO,
    OLIST,
    OPOS,
    SP,
    ZHEAP,
    ZMAT,
    _block,
    _hg_next,
    _kb,
    _ksift,
    _mat,
    _o_add,
    _o_drop,
    _osift,
    _pr,
    _ran,
    _rebuild,
    _runend,
    _walk_fast,
    _z_next,
)  # fmt: skip
from dlsched.sim.gavel_core_parts import (  # noqa: F401 - (the same)
    ACT,
    ATTAINED,
    DEFICIT,
    FINISH,
    FIRST,
    HELD,
    JT,
    JTYPE,
    ORDER,
    PAUSED,
    PRIO,
    PROGRESS,
    PTIME,
    RATE,
    RESCALES,
    RUN,
    VERSION,
    X,
    _before,
    _fit_gavel,
    _hgrow,
    _hpop,
    _hpush,
    _prefix,
    _sift_down,
)  # fmt: skip
from dlsched.sim.gavel_core_round import (  # noqa: F401 - (the same)
    _by_size,
    _execute,
    _fit_movers,
    _place,
    _rate_set,
    _walk,
)  # fmt: skip
from dlsched.sim.las_core_parts import (  # the kernel's helpers, re-bound by `compiled_replay`
    _busy_until,
    _finish_job,
    _next_tick,
    _remove,
    _sample,
    _stall_check,
    _sums,
    compile_kernel,
)  # fmt: skip

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

DONE, STALLED, NEED_X, NEED_ORDER = 0, 1, 2, 3

# the scalars ``fs`` / ``iv`` (state between segments; the job tables' rows: `gavel_core_parts`)
NOW, BUSY_GPU, BUSY_CPU, TICK, LAST_RESET, LAST_POINT, GPU_USED, CPU_USED = range(8)
NH, SEQ, POPS, NRUN, NXT, NFIN, DECISIONS, NS, NACT, SEEN, FIN_SEEN, CHANGED, RESUME = range(13)
NPEND, PERM, IDLE, MAX_IDLE, KEPT, BASE = 13, 14, 15, 16, 17, 18
"""(``iv[KEPT]``: the round's order is kept (`gavel_core_order`) since the last reset;
``iv[BASE]``: the first job that arrived after it.)"""
AFTER_X, AFTER_ORDER = 1, 2
"""``iv[RESUME]``: the segment stopped at a point for its ``X`` (the books' change is then
answered) or for more type orders."""


def _priorities(act: I64, nact: int, tb: F64, wt: F64) -> None:
    """Each active job's priority on each type (`GavelRounds._priorities_fast`, the same
    floats) into ``tb[PRIO]``: ``X`` over the fraction of the type's time it got, ``X * _BIG``
    before it got any, 0 where ``X`` or the rate is not above 0 (the rate is checked by the
    walk)."""
    for c in range(wt.shape[0]):
        x, jt, pr = tb[X, c], tb[JT, c], tb[PRIO, c]
        w = wt[c]
        for i in range(nact):
            j = act[i]
            pr[j] = _pr(x[j], jt[j], w)


def _account(
    t: float, tb: F64, wt: F64, ji: I64, fs: F64, iv: I64, half: float, reset_every: float,
    grate: F64, oi: I64, on: I64,
) -> bool:  # fmt: skip
    """`GavelRounds._decide_fast` up to the allocation: last round's time into the running
    jobs' accounts on their types and the types' (in running order), arrivals get half a round
    on every type, departures are dropped (the kept order, ``oi`` and ``on``, follows both);
    where a reset is due the books restart (`_reset_books`) and True is returned (the caller
    then needs the policy's ``X``)."""
    jt, x, deficit = tb[JT], tb[X], tb[DEFICIT]
    order, run, act, jtype = ji[ORDER], ji[RUN], ji[ACT], ji[JTYPE]
    T = wt.shape[0]
    last = fs[LAST_POINT]
    elapsed = 0.0 if math.isnan(last) else t - last
    fs[LAST_POINT] = t
    opos = oi[OPOS]
    for i in range(iv[NRUN]):
        j = run[i]
        jt[jtype[j], j] += elapsed
        if iv[KEPT] and opos[jtype[j], j] < 0:  # onto the list of those that ran
            _ran(jtype[j], j, tb, grate, oi, on, half)
    for i in range(iv[NRUN]):  # one addition a running job, as the fast path's
        wt[jtype[run[i]]] += elapsed
    nact = iv[NACT]
    arrived = iv[NXT] > iv[SEEN]
    for j in range(iv[SEEN], iv[NXT]):  # arrivals (by index: appended in order)
        for c in range(T):
            jt[c, j] = half
            deficit[c, j] = 0.0
            x[c, j] = 0.0
        for c in range(T):
            wt[c] += half
        act[nact] = j
        nact += 1
    iv[SEEN] = iv[NXT]
    departed = iv[NFIN] > iv[FIN_SEEN]
    for f in range(iv[FIN_SEEN], iv[NFIN]):
        nact = _remove(act, nact, order[f])
        for c in range(T if iv[KEPT] else 0):
            _o_drop(c, order[f], oi, on)
    iv[FIN_SEEN] = iv[NFIN]
    iv[NACT] = nact
    if arrived or departed:
        iv[CHANGED] = 1
    last_reset = fs[LAST_RESET]
    if not (iv[CHANGED] and (math.isnan(last_reset) or t - last_reset >= reset_every)):
        return False
    since = 0.0 if math.isnan(last_reset) else t - last_reset
    for c in range(T):
        total = 0.0
        for i in range(nact):
            j = act[i]
            deficit[c, j] = (deficit[c, j] + x[c, j] * since) - (jt[c, j] - half)
            jt[c, j] = half
            total += half  # `books.repeated_sum`
        wt[c] = total
    fs[LAST_RESET] = t
    return True


# Not split further: numba compiles the loop whole, and its phases (events, the round's
# accounts, the kept order's rebuild at a reset (`gavel_core_order`), then the walk (kept
# order or every priority), placement and executor of `gavel_core_round`) share the job table,
# the heap and a dozen scalars that each phase reads and changes; the event handling is
# `las_core.replay`'s (the same simulator, through the same helpers `_busy_until`,
# `_finish_job`, `_next_tick`), so the two can be read side by side: over 80 lines.
def replay(
    submit: F64, jid: I64, nw: I64, dem: F64, total: F64, resume: F64, rescale: F64, speed: F64,
    cap: F64, step: float, gpus: I64, horizon: float, interval: float, on_events: bool,
    grate: F64, trate: F64, scale: I64, rooms: I64, stype: I64, torder: I64, perms: I64,
    half: float, reset_every: float, jf: F64, tb: F64, wt: F64, ji: I64, holding: B, alloc: I64,
    used: F64, hk: F64, hp: I64, samples: F64, fs: F64, iv: I64, oi: I64, on: I64,
) -> tuple[int, F64, I64, F64]:  # fmt: skip
    """Replay from the state in ``jf``, ``tb``, ``wt``, ``ji``, ``holding``, ``alloc``,
    ``used``, the heap (``hk``, ``hp``: `_hpush`), ``samples``, ``fs`` and ``iv`` (module
    docstring; rows and slots named by the constants here and in `gavel_core_parts`) until the
    run ends (`DONE`), leaves what the kernel replays (`STALLED`: the stall rule), a reset needs
    the policy's ``X`` (`NEED_X`: write it into ``tb[X][:, ji[ACT][:iv[NACT]]]`` and call
    again) or the type orders ``perms`` are used up (`NEED_ORDER`: give more, ``iv[PERM]`` 0).
    ``oi`` and ``on``: the round's order kept between points (`gavel_core_order`; ``oi[OPOS]``
    -1 at the start).

    The job table and `las_core.replay`'s first arguments as there, and ``rescale``: each
    job's checkpoint-restart when it moves (s), ``speed``: the inner model's speed by servers
    held; per type (rows) and job: ``grate``, its estimated rate (1.0 without estimates),
    ``trate``, its true one (1.0 without `TypedSpeed`); ``scale``: each job's GPUs
    (`scale_of`), ``rooms``: each type's GPUs, ``stype``: each server's type; ``torder``: the
    order in which every round fills the types, unless ``perms`` has rows (then row
    ``iv[PERM]`` is the next round's order); ``half``: half a round (s), ``reset_every``: the
    least time between resets (s). Returns (status, and the heap and samples, grown as
    needed)."""
    n, S = submit.shape[0], cap.shape[0]
    attained, held_s, progress, ptime = jf[ATTAINED], jf[HELD], jf[PROGRESS], jf[PTIME]
    paused, rate, finish = jf[PAUSED], jf[RATE], jf[FINISH]
    version, order, run, act = ji[VERSION], ji[ORDER], ji[RUN], ji[ACT]
    now, busy_gpu, busy_cpu, tick_s = fs[NOW], fs[BUSY_GPU], fs[BUSY_CPU], fs[TICK]
    gpu_used, cpu_used = fs[GPU_USED], fs[CPU_USED]
    nh, seq, pops, nrun, nxt, nfin = iv[NH], iv[SEQ], iv[POPS], iv[NRUN], iv[NXT], iv[NFIN]
    decisions, ns, npend = iv[DECISIONS], iv[NS], iv[NPEND]
    G = 1
    for c in range(rooms.shape[0]):
        G += rooms[c]  # the most jobs a round chooses (each takes a GPU at least)
    heap, ranked = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    chosen, ctype = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    taken, keep = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
    mj, mc = np.empty(G, dtype=np.int64), np.empty(G, dtype=np.int64)
    sj, sc = np.empty(G, dtype=np.int64), np.empty(G, dtype=np.int64)
    pending, moved = np.empty(2 * G, dtype=np.int64), np.zeros((G, S), dtype=np.int64)
    counts, where = np.empty(S, dtype=np.int64), np.empty(S, dtype=np.int64)
    free, frag = np.empty((S, 3)), np.empty((S, 2))  # (`_sample`'s scratch space)
    scr, hs = np.empty(n, dtype=np.int64), np.zeros(4, dtype=np.int64)
    status = DONE
    while True:
        if iv[RESUME]:  # the point the last segment stopped at, its ``X`` or orders given
            if iv[RESUME] == AFTER_X:
                iv[CHANGED] = 0
                iv[KEPT] = _rebuild(act, iv[NACT], tb, grate, oi, on, half, jf[FINISH])
                iv[BASE] = iv[SEEN]
            iv[RESUME] = 0
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
            if _account(t, tb, wt, ji, fs, iv, half, reset_every, grate, oi, on):
                iv[RESUME] = AFTER_X
                status = NEED_X
                break
        # the round: priorities, the type order, the walk, then `place_changes` and the executor
        order_t = torder
        if perms.shape[0]:
            if iv[PERM] == perms.shape[0]:
                iv[RESUME] = AFTER_ORDER
                status = NEED_ORDER
                break
            order_t = perms[iv[PERM]]
            iv[PERM] += 1
        nch = -1
        if iv[KEPT]:
            nch = _walk_fast(
                tb, wt, grate, scale, rooms, order_t, taken, heap, chosen, ctype, oi, on,
                jf[FINISH], half, iv[SEEN], iv[BASE], scr, hs,
            )  # fmt: skip
        if nch < 0:  # (the order is not kept: every active job's priority, then the walk)
            _priorities(act, iv[NACT], tb, wt)
            nch = _walk(act, iv[NACT], tb, grate, scale, rooms, order_t, taken, heap, ranked,
                        chosen, ctype)  # fmt: skip
        nmoved, nstart = _place(
            chosen, ctype, nch, holding, ji[JTYPE], keep, run, nrun, scale, dem, cap, used,
            alloc, stype, mj, mc, sj, sc, pending, moved, free, counts, where,
        )  # fmt: skip
        nsus = 0
        for i in range(nrun):
            if not keep[run[i]]:
                nsus += 1
        hk, hp, nh, seq, nrun, npend = _execute(
            t, jf, ji, holding, keep, alloc, used, nw, dem, total, resume, rescale, speed,
            trate, run, nrun, npend, mj, mc, nmoved, moved, sj, sc, nstart, hk, hp, nh, seq,
        )  # fmt: skip
        for i in range(nch):
            keep[chosen[i]] = False
            taken[chosen[i]] = False
        if nsus or nmoved or nstart:
            gpu_used, cpu_used = _sums(used, S)
        samples, ns = _sample(  # the timeline
            samples, ns, step, t, gpu_used, cpu_used, npend, nrun, run,
            alloc, dem, rate, ptime, progress, paused, total, gpus, frag,
        )  # fmt: skip
        if not _stall_check(nxt, n, npend, nrun, run, rate):
            iv[IDLE] = 0
        elif interval <= 0 or iv[IDLE] >= iv[MAX_IDLE]:  # (no tick is coming, or
            status = STALLED  # `SimulationStalled`: the simulator's own run says so)
            break
        else:  # `Simulator._watch_for_stall`: an idle round, the next tick comes anyway
            iv[IDLE] += 1
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
    "_busy_until", "_finish_job", "_next_tick", "_settle", "_give", "_add_rows", "_sums",
    "_remove", "_hpush", "_hpop", "_hgrow", "_stall_check", "_fit", "_sample", "_before",
    "_sift_down", "_prefix", "_priorities", "_fit_gavel", "_walk", "_by_size", "_fit_movers",
    "_place", "_rate_set", "_execute", "_pr", "_kb", "_ksift", "_rebuild", "_mat", "_runend",
    "_o_add", "_o_drop", "_osift", "_ran", "_block", "_hg_next", "_z_next", "_walk_fast",
    "_account", "replay",
)  # fmt: skip
