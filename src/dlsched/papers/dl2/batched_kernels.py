"""Compiled slot transition of `dlsched.papers.dl2.batched_env`: one environment's executor and
simulator work between two DL2 scheduling points, on arrays.

What `Dl2Env` gets from `Simulator` + `Executor` + `LoadBalance` for DL2 traces, re-done with the
same float64 operations in the same order, so a batched episode is the scalar one (test):

* at a point ``t``: arrivals, then (interval ticks) a fresh noise factor ``max(0.1, 1 +
  level·z)`` for every running job in the order it started running;
* the decision (jobs that can train, in serve order) goes through the executor's rules:
  suspensions of running jobs left out (running order), then shrinks, then growths in decision
  order; a target with the counts a job already holds is no change; new tasks go one at a time
  to the server with the largest smallest free fraction among those where they fit (lowest id
  on ties), removals come from the server holding most of the job's tasks (highest id on
  ties); a growth that does not fit changes nothing; every change settles progress, pauses the
  job (1 s hot rescale, 30 s resume after a suspension, none at its first start) and draws a
  noise factor;
* completions up to the next tick free their resources; the next point is the next tick with
  active jobs; a stall is 1,000 points in a row with every job idle after all arrivals.

Noise draws come from a per-environment buffer of standard normals drawn in advance from
``numpy.random.default_rng(trace_seed)`` (the simulator's generator: the same sequence). With
``ints[I_NOISE_MODE] = NOISE_PER_JOB`` (not the simulator's; paired rollouts, issue 29) a draw
is instead a hash of (``ints[I_NOISE_KEY]``, tick, draw kind, job): copies of a trace that
differ only in actions see the same factor for the same job at the same tick, whatever else
ran (common random numbers).

Job state arrays are ``(N,)`` per environment (job index = arrival order); placements
``(N, S)``; per-environment scalars live in ``ints`` / ``floats`` (`I_*`, `F_*` below).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from numba import njit

from dlsched.kernel_cache import refresh

refresh(__file__)  # before any cached kernel loads: numba checks a kernel's own file only

FUTURE, PENDING, RUNNING, FINISHED = 0, 1, 2, 3
"""Job status values."""
I_NEXT_ARR, I_IDLE, I_RUN_SEQ, I_CURSOR, I_N_JOBS, I_SLOTS, I_NOISE_MODE, I_NOISE_KEY = range(8)
INT_FIELDS = 8
NOISE_STREAM, NOISE_PER_JOB = 0, 1
"""`ints[I_NOISE_MODE]` values: the simulator's one stream per trace; one draw per job and tick."""
TICK_DRAW, RESIZE_DRAW = 0, 1
"""Draw kinds of the per-job mode: the redraw at a tick, the draw of a changed allocation."""
F_NOW, F_LEVEL = range(2)
FLOAT_FIELDS = 2
SLOT_S = 1200.0
HOT_S = 1.0
RESUME_S = 30.0
MAX_IDLE = 1000
OVER, NEXT, STALLED = 0, 1, 2
"""`end_slot` results: every job finished, a next point, the stall rule fired."""

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@njit(cache=True)
def _fit_row(row: F64, need: F64) -> int:
    """`tasks_that_fit(row, need)` (same float operations)."""
    g, c, m = need[0], need[1], need[2]
    best = math.floor((row[0] + 1e-9) / g) if g > 0 else 2**30
    if c > 0:
        n = math.floor((row[1] + 1e-9) / c)
        if n < best:
            best = n
    if m > 0:
        n = math.floor((row[2] + 1e-9) / m)
        if n < best:
            best = n
    return best if best > 0 else 0


@njit(cache=True)
def _share(row: F64, cap: F64) -> float:
    """`dlsched.placement.load_balance.share`: smallest free fraction of the server."""
    a = row[0] / cap[0] if cap[0] > 0 else math.inf
    b = row[1] / cap[1] if cap[1] > 0 else math.inf
    c = row[2] / cap[2] if cap[2] > 0 else math.inf
    return min(a, min(b, c))


@njit(cache=True)
def _resize_side(
    have: I64, want: int, free: F64, cap: F64, need: F64, out: I64
) -> bool:  # fmt: skip
    """One side (workers or PS) of `place_tasks` with `LoadBalance`: ``out`` gets the new
    per-server counts; ``free`` loses what is added. False if the growth does not fit."""
    S = have.shape[0]
    total = 0
    for s in range(S):
        out[s] = have[s]
        total += have[s]
    for _ in range(total - want):  # most_tasks: most tasks, highest id
        best, arg = -1, -1
        for s in range(S):
            if out[s] > 0 and out[s] >= best:
                best, arg = out[s], s
        out[arg] -= 1
    left = want - total
    if left <= 0:
        return True
    fits = np.empty(S, dtype=np.int64)
    for s in range(S):
        fits[s] = _fit_row(free[s], need)
    while left > 0:
        arg, top = -1, -math.inf
        for s in range(S):
            if fits[s] > 0:
                e = _share(free[s], cap[s])
                if arg < 0 or e > top:
                    arg, top = s, e
        if arg < 0:
            return False
        out[arg] += 1
        for r in range(3):
            free[arg, r] = free[arg, r] - need[r]
        fits[arg] = _fit_row(free[arg], need)
        left -= 1
    return True


@njit(cache=True)
def _settle(
    j: int, t: float, progress: F64, ptime: F64, paused: F64, rate: F64, total: F64
) -> None:
    ran_from = ptime[j] if ptime[j] >= paused[j] else paused[j]
    if rate[j] > 0.0 and t > ran_from:
        progress[j] = min(total[j], progress[j] + rate[j] * (t - ran_from))
    ptime[j] = t


@njit(cache=True)
def _mix(x: np.uint64) -> np.uint64:
    """splitmix64's finaliser (a bijective 64-bit hash)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True)
def hashed_normal(key: int, tick: int, kind: int, j: int) -> float:
    """A standard normal that is a function of its arguments only (Box–Muller on two hashes)."""
    h = _mix(np.uint64(key) + np.uint64(0x9E3779B97F4A7C15))
    h = _mix(h ^ np.uint64(tick * 2 + kind))
    h = _mix(h ^ np.uint64(j))
    u1 = (float(h >> np.uint64(11)) + 1.0) * 2.0**-53
    h2 = _mix(h + np.uint64(0x9E3779B97F4A7C15))
    u2 = float(h2 >> np.uint64(11)) * 2.0**-53
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@njit(cache=True)
def _noise(buf: F64, ints: I64, level: float, j: int, t: float, kind: int) -> float:
    if level <= 0:
        return 1.0
    if ints[I_NOISE_MODE] == NOISE_PER_JOB:
        z = hashed_normal(ints[I_NOISE_KEY], int(t / SLOT_S + 0.5), kind, j)
    else:
        z = buf[ints[I_CURSOR]]
        ints[I_CURSOR] += 1
    return max(0.1, 1.0 + level * z)


@njit(cache=True)
def _set_rate(
    j: int, t: float, jtype: I64, aw: I64, ap: I64, speed: F64, noise: float,
    progress: F64, paused: F64, rate: F64, comp: F64, total: F64,
) -> None:  # fmt: skip
    rate[j] = speed[jtype[j], ap[j], aw[j]] * noise
    if rate[j] > 0:
        start = max(t, paused[j])
        comp[j] = start + (total[j] - progress[j]) / rate[j]
    else:
        comp[j] = math.inf


@njit(cache=True)
def _release(j: int, used: F64, wp: I64, pp: I64, wneed: F64, pneed: F64) -> None:
    S = used.shape[0]
    for s in range(S):
        g = wneed[0] * wp[j, s] + pneed[0] * pp[j, s]
        c = wneed[1] * wp[j, s] + pneed[1] * pp[j, s]
        m = wneed[2] * wp[j, s] + pneed[2] * pp[j, s]
        if wp[j, s] or pp[j, s]:
            used[s, 0] = max(used[s, 0] - g, 0.0)
            used[s, 1] = max(used[s, 1] - c, 0.0)
            used[s, 2] = max(used[s, 2] - m, 0.0)
        wp[j, s] = 0
        pp[j, s] = 0


@njit(cache=True)
def _reallocate(
    j: int, tw: int, tp: int, t: float, status: npt.NDArray[np.int8],
    started: npt.NDArray[np.bool_], run_seq: I64, aw: I64, ap: I64, wp: I64, pp: I64,
    used: F64, cap: F64, wneed: F64,
    pneed: F64, jtype: I64, speed: F64, progress: F64, ptime: F64, paused: F64, rate: F64,
    comp: F64, total: F64, buf: F64, ints: I64, level: float,
) -> None:  # fmt: skip
    """The executor's `_reallocate` + the simulator's `_set_allocation` for one job."""
    S = used.shape[0]
    if tw == 0 and tp == 0:  # suspension
        _release(j, used, wp, pp, wneed, pneed)
        _settle(j, t, progress, ptime, paused, rate, total)
        aw[j], ap[j] = 0, 0
        rate[j] = 0.0
        comp[j] = math.inf
        status[j] = PENDING
        run_seq[j] = -1
        return
    free = np.empty((S, 3))
    for s in range(S):
        for r in range(3):
            free[s, r] = cap[s, r] - used[s, r]
    new_w = np.empty(S, dtype=np.int64)
    new_p = np.empty(S, dtype=np.int64)
    if not _resize_side(wp[j], tw, free, cap, wneed, new_w):
        return
    if not _resize_side(pp[j], tp, free, cap, pneed, new_p):
        return
    _release(j, used, wp, pp, wneed, pneed)
    for s in range(S):
        wp[j, s], pp[j, s] = new_w[s], new_p[s]
        if new_w[s] or new_p[s]:
            used[s, 0] += wneed[0] * new_w[s] + pneed[0] * new_p[s]
            used[s, 1] += wneed[1] * new_w[s] + pneed[1] * new_p[s]
            used[s, 2] += wneed[2] * new_w[s] + pneed[2] * new_p[s]
    was_empty = aw[j] == 0 and ap[j] == 0
    _settle(j, t, progress, ptime, paused, rate, total)
    aw[j], ap[j] = tw, tp
    if was_empty:
        status[j] = RUNNING
        run_seq[j] = ints[I_RUN_SEQ]
        ints[I_RUN_SEQ] += 1
        if started[j]:
            paused[j] = t + RESUME_S
        started[j] = True
    else:
        paused[j] = t + HOT_S
    noise = _noise(buf, ints, level, j, t, RESIZE_DRAW)
    _set_rate(j, t, jtype, aw, ap, speed, noise, progress, paused, rate, comp, total)


@njit(cache=True)
def running_order(status: npt.NDArray[np.int8], run_seq: I64, n: int) -> I64:
    """Indices of the running jobs in the order they started running."""
    idx = np.empty(n, dtype=np.int64)
    k = 0
    for j in range(n):
        if status[j] == RUNNING:
            idx[k] = j
            k += 1
    keys = np.empty(k, dtype=np.int64)
    for i in range(k):
        keys[i] = run_seq[idx[i]]
    order = np.argsort(keys, kind="mergesort")
    out = np.empty(k, dtype=np.int64)
    for i in range(k):
        out[i] = idx[order[i]]
    return out


@njit(cache=True)
def end_slot(
    order: I64, n_order: int, slot_w: I64, slot_p: I64, status: npt.NDArray[np.int8],
    started: npt.NDArray[np.bool_], run_seq: I64, aw: I64, ap: I64, wp: I64, pp: I64, used: F64,
    cap: F64, wneed_of: F64, pneed: F64, jtype: I64, speed: F64, progress: F64, ptime: F64,
    paused: F64, rate: F64, comp: F64, total: F64, submit: F64, slots_run: I64, buf: F64,
    ints: I64, floats: F64,
) -> int:  # fmt: skip
    """Apply the slot's decision (``order[:n_order]`` with ``slot_w``/``slot_p`` counts) at
    the current point and simulate to the next one (module docstring); `OVER`, `NEXT` or
    `STALLED`. ``wneed_of`` is ``(N, 3)``: each job's worker demand."""
    n = ints[I_N_JOBS]
    t = floats[F_NOW]
    level = floats[F_LEVEL]
    in_targets = np.zeros(n, dtype=np.bool_)
    for k in range(n_order):
        in_targets[order[k]] = True
    shrink = np.empty(2 * n, dtype=np.int64)
    grow = np.empty(n, dtype=np.int64)
    n_shrink, n_grow = 0, 0
    for j in running_order(status, run_seq, n):
        if not in_targets[j]:
            shrink[n_shrink] = j
            n_shrink += 1
    for k in range(n_order):
        j = order[k]
        tw, tp = slot_w[j], slot_p[j]
        if tw == aw[j] and tp == ap[j]:
            continue
        if tw <= aw[j] and tp <= ap[j]:
            shrink[n_shrink] = j
            n_shrink += 1
        else:
            grow[n_grow] = j
            n_grow += 1
    for k in range(n_shrink + n_grow):
        j = shrink[k] if k < n_shrink else grow[k - n_shrink]
        tw = slot_w[j] if in_targets[j] else 0
        tp = slot_p[j] if in_targets[j] else 0
        _reallocate(
            j, tw, tp, t, status, started, run_seq, aw, ap, wp, pp, used, cap, wneed_of[j],
            pneed, jtype, speed, progress, ptime, paused, rate, comp, total, buf, ints, level,
        )  # fmt: skip
    active, busy = False, False
    for j in range(n):
        if status[j] == RUNNING:
            slots_run[j] += 1
            active = True
            if rate[j] > 0:
                busy = True
        elif status[j] == PENDING:
            active = True
    if ints[I_NEXT_ARR] < n or not active or busy:
        ints[I_IDLE] = 0
    else:
        ints[I_IDLE] += 1
        if ints[I_IDLE] > MAX_IDLE:
            return STALLED
    return _next_point(
        t, status, run_seq, aw, ap, wp, pp, used, wneed_of, pneed, jtype, speed, progress,
        ptime, paused, rate, comp, total, submit, buf, ints, floats,
    )  # fmt: skip


@njit(cache=True)
def _next_point(
    t: float, status: npt.NDArray[np.int8], run_seq: I64, aw: I64, ap: I64, wp: I64, pp: I64,
    used: F64, wneed_of: F64, pneed: F64, jtype: I64, speed: F64, progress: F64, ptime: F64,
    paused: F64, rate: F64, comp: F64, total: F64, submit: F64, buf: F64, ints: I64, floats: F64,
) -> int:  # fmt: skip
    """Completions up to the next tick, then the next tick with active jobs (arrivals first,
    then every running job's noise redrawn); `OVER` when nothing is left."""
    n = ints[I_N_JOBS]
    t_next = t + SLOT_S
    while True:
        for j in range(n):
            if status[j] == RUNNING and comp[j] <= t_next:
                progress[j] = total[j]
                ptime[j] = comp[j]
                rate[j] = 0.0
                _release(j, used, wp, pp, wneed_of[j], pneed)
                aw[j], ap[j] = 0, 0
                status[j] = FINISHED
                run_seq[j] = -1
        while ints[I_NEXT_ARR] < n and submit[ints[I_NEXT_ARR]] <= t_next:
            j = ints[I_NEXT_ARR]
            status[j] = PENDING
            ptime[j] = t_next
            ints[I_NEXT_ARR] += 1
        active = False
        for j in range(n):
            if status[j] == PENDING or status[j] == RUNNING:
                active = True
                break
        if active:
            break
        if ints[I_NEXT_ARR] >= n:
            floats[F_NOW] = t_next
            return OVER
        arrival = submit[ints[I_NEXT_ARR]]
        t_next = math.ceil(arrival / SLOT_S - 1e-12) * SLOT_S
    floats[F_NOW] = t_next
    level = floats[F_LEVEL]
    if level > 0:
        for j in running_order(status, run_seq, n):
            _settle(j, t_next, progress, ptime, paused, rate, total)
            noise = _noise(buf, ints, level, j, t_next, TICK_DRAW)
            _set_rate(j, t_next, jtype, aw, ap, speed, noise, progress, paused, rate, comp, total)
    return NEXT


@njit(cache=True)
def start_episode(
    b: int, first_s: float, status: npt.NDArray[np.int8], ptime: F64, submit: F64, ints: I64,
    floats: F64,
) -> None:  # fmt: skip
    """The first point: the tick at the first arrival, with every job arrived by then."""
    t = math.ceil(first_s / SLOT_S - 1e-12) * SLOT_S
    floats[b, F_NOW] = t
    n = ints[b, I_N_JOBS]
    while ints[b, I_NEXT_ARR] < n and submit[b, ints[b, I_NEXT_ARR]] <= t:
        j = ints[b, I_NEXT_ARR]
        status[b, j] = PENDING
        ptime[b, j] = t
        ints[b, I_NEXT_ARR] += 1
