"""The compiled FIFO core: a FIFO replay of a fixed-GPU trace on arrays (``simulate(...,
core="compiled")``, `dlsched.sim.fifo_core_run`).

Design (issue 31, points 2 and 4), as the LAS core's (`dlsched.sim.las_core`, whose helpers in
`dlsched.sim.las_core_parts` it reuses unchanged): one function, `replay`, re-does what
`Simulator` + `Executor` + `Pack` + `schedulers.fifo.Fifo` do for the runs it supports, on a
struct-of-arrays job table (job index = arrival order, ``(submit, job id)``), with the same
float64 operations in the same order, so that numba can compile it (``njit(cache=True)``) while
the plain-Python function stays the reference path. Supported: what the LAS core supports
(`las_core_run.unsupported_setting`) with the ``fifo`` scheduler.

Per point (an arrival, a completion or a tick, with jobs waiting or running): the waiting jobs
are walked in arrival order on what the cluster has free, each taken with
`FreeTracker.take`'s rule (`_take`), up to the first that does not fit (head-of-line blocking);
the jobs taken start in that order, each placed by `Pack` (best fit, else most room) on the
real cluster (one that `Pack` cannot place waits). FIFO never preempts, so a job starts once
and holds its allocation until it finishes.

Returns what `las_core.replay` returns (per job: first start, finish, GPU-held seconds; the
finish order; the totals and the timeline); a status other than `DONE` means the run left what
the kernel replays (the stall rule) and the caller must run the Python path from scratch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from dlsched.sim.las_core import DONE, STALLED  # the status codes `las_core_run` reads
from dlsched.sim.las_core_parts import (  # the kernel's helpers, re-bound by `compiled_replay`
    _a_insert,
    _a_remove,
    _busy_until,
    _finish_job,
    _give,
    _grow,
    _heap_pop,
    _heap_push,
    _next_tick,
    _pack,
    _sample,
    _settle,
    _stall_check,
    _sums,
    _take,
    compile_kernel,
)

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def _walk(anext: I64, n: int, free: F64, dem: F64, nw: I64, scratch: I64, starts: I64) -> int:
    """`Fifo.decide`: the waiting jobs (the list ``anext``, arrival order) taken on ``free``
    up to the first that does not fit, into ``starts``; returns how many."""
    nstart = 0
    q = anext[n]
    while q != n:
        if not _take(free, dem[q], nw[q], scratch):
            break
        starts[nstart] = q
        nstart += 1
        q = anext[q]
    return nstart


# Not split further: numba compiles the loop whole, and its phases (arrivals and completions,
# the walk, the starts, the timeline) share about 20 arrays and 10 scalars (list lengths, heap
# size, busy sums) that each phase both reads and changes; as functions they would pass all of
# them and return the scalars as tuples: over 80 lines.
def replay(
    submit: F64,
    nw: I64,
    dem: F64,
    total: F64,
    speed: F64,
    cap: F64,
    step: float,
    gpus: I64,
    horizon: float,
    interval: float,
    on_events: bool,
) -> tuple[int, F64, F64, F64, I64, int, float, float, float, int, F64, int]:
    """Replay the trace (module docstring). Arrays by job index (arrival order): ``submit``
    (s), ``nw`` workers, ``dem`` ``(N, 3)`` per-worker (gpu, cpu, mem), ``total`` work (s at
    speed 1), ``speed`` ``(N, S + 1)`` by number of servers held; ``cap`` ``(S, 3)``;
    ``step``: the timeline's least spacing (s); ``gpus``: GPUs of each server; ``horizon``:
    the time (s) the run stops at (``inf``: none); ``interval``: the tick interval (s; 0:
    none); ``on_events``: a scheduling point at every arrival and completion. Returns
    `las_core.replay`'s tuple.

    Over 80 lines: one event loop that numba compiles whole, the Python path's steps in its
    order."""
    n, S = submit.shape[0], cap.shape[0]
    used = np.zeros((S, 3))
    alloc = np.zeros((n, S), dtype=np.int64)
    running_flag = np.zeros(n, dtype=np.bool_)
    attained, held_s, progress = np.zeros(n), np.zeros(n), np.zeros(n)
    ptime, paused, rate = np.zeros(n), np.zeros(n), np.zeros(n)
    first, finish = np.full(n, np.nan), np.full(n, np.nan)
    order = np.empty(n, dtype=np.int64)
    # completion heap: (time, seq) order; job and version (FIFO's versions stay 1)
    cap_h = 1024
    ht, hs = np.empty(cap_h), np.empty(cap_h, dtype=np.int64)
    hj, hv = np.empty(cap_h, dtype=np.int64), np.empty(cap_h, dtype=np.int64)
    nh, seq, pops = 0, 0, 0
    anext = np.empty(n + 1, dtype=np.int64)  # the waiting jobs, by index (arrival order)
    aprev = np.empty(n + 1, dtype=np.int64)
    anext[n], aprev[n] = n, n
    na = 0
    run = np.empty(n, dtype=np.int64)  # running jobs in start order
    nrun, nxt, nfin, decisions = 0, 0, 0, 0
    now, gpu_used, cpu_used, busy_gpu, busy_cpu = 0.0, 0.0, 0.0, 0.0, 0.0
    starts = np.empty(n, dtype=np.int64)
    counts = np.empty(S, dtype=np.int64)
    scratch = np.empty(S, dtype=np.int64)
    free = np.empty((S, 3))
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
            break
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
            _a_insert(anext, aprev, nxt)
            nxt += 1
            na += 1
            changed = True
        while nh and ht[0] <= t:
            j = hj[0]
            nh = _heap_pop(ht, hs, hj, hv, nh)
            pops += 1
            nrun, nfin, gpu_used, cpu_used = _finish_job(
                j, t, running_flag, nw, dem, attained, held_s, progress, ptime, paused,
                rate, total, finish, alloc, used, S, run, nrun, order, nfin,
            )  # fmt: skip
            changed = True
        tick = tick_s <= t
        if tick:
            pops += 1
            tick_s = _next_tick(t, interval, bool(na or nrun), nxt, n, submit)
        if not ((tick or (changed and on_events)) and (na or nrun)):
            continue
        decisions += 1
        for s in range(S):
            for r in range(3):
                free[s, r] = cap[s, r] - used[s, r]
        nstart = _walk(anext, n, free, dem, nw, scratch, starts)
        for i in range(nstart):  # the executor: starts in decision order, placed by `Pack`
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
            _give(j, alloc, dem, used, S, 1.0)
            _a_remove(anext, aprev, j)
            na -= 1
            run[nrun] = j
            nrun += 1
            running_flag[j] = True
            first[j] = t
            rate[j] = speed[j, k] * 1.0
            if rate[j] > 0:
                seq += 1
                if nh == ht.shape[0]:
                    ht, hs, hj, hv = _grow(ht, hs, hj, hv)
                nh = _heap_push(
                    ht, hs, hj, hv, nh, t + (total[j] - progress[j]) / rate[j], seq, j, 1
                )
            gpu_used, cpu_used = _sums(used, S)
        samples, ns = _sample(  # the timeline
            samples, ns, step, t, gpu_used, cpu_used, na, nrun, run,
            alloc, dem, rate, ptime, progress, paused, total, gpus, frag,
        )  # fmt: skip
        if _stall_check(nxt, n, na, nrun, run, rate):
            status = STALLED
            break
    return (
        status, first, finish, held_s, order, decisions, now, busy_gpu, busy_cpu, pops, samples, ns
    )  # fmt: skip


_COMPILED: dict[str, object] = {}


def compiled_replay() -> Any:
    """`replay` compiled by numba (`las_core_parts.compile_kernel`, as the LAS core), lazily:
    at the first call."""
    if "replay" not in _COMPILED:
        _COMPILED["replay"] = compile_kernel(globals(), _KERNEL_FUNCTIONS)
    return _COMPILED["replay"]


_KERNEL_FUNCTIONS = (
    "_busy_until", "_finish_job", "_next_tick", "_settle", "_give", "_sums", "_remove", "_hless",
    "_hswap", "_heap_push", "_heap_pop", "_grow", "_stall_check", "_fit", "_take", "_pack",
    "_a_insert", "_a_remove", "_sample", "_walk", "replay",
)  # fmt: skip
