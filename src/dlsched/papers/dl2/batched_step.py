"""Compiled action step of `dlsched.papers.dl2.batched_env`: every environment of the batch takes
its action in one call (`step_all`).

A row action goes to `slot_kernels.apply_row` (the very kernel `Dl2Slot` uses); the void action
moves to the next batch of ``J`` jobs or ends the slot, which hands the decision to
`batched_kernels.end_slot` and builds the next point's first batch (`_load_batch`: the
entries `Dl2Slot._load_batch` writes, with the same float64 operations before the float32
store). Arrays are the environment's, batch-first (see `Dl2BatchedEnv`); per-environment slot
scalars live in ``slot_i`` (`S_*`).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from numba import njit

from dlsched.kernel_cache import refresh
from dlsched.papers.dl2 import batched_kernels as bk
from dlsched.papers.dl2 import slot_kernels as sk

refresh(__file__)  # before any cached kernel loads: numba checks a kernel's own file only

S_BATCH, S_NBATCH, S_NACTIVE, S_NORDER, S_DONE = range(5)
SLOT_FIELDS = 5
COUNT_SCALE = 16.0
OBS_HIGH = 10.0

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]


@njit(cache=True)
def work_done(
    j: int, t: float, progress: F64, ptime: F64, paused: F64, rate: F64, total: F64
) -> float:
    """`JobRun.work_done(t)`."""
    start = max(ptime[j], paused[j])
    if rate[j] <= 0.0 or t <= start:
        return progress[j]
    return min(total[j], progress[j] + rate[j] * (t - start))


@njit(cache=True)
def _load_batch(b: int, J: int, L: int, obs: F32, rows: I64, st: I64, free: F64, totals_cap: F64,
                needs: F64, fits: I64, mask: npt.NDArray[np.bool_], active: I64, slot_i: I64,
                row_job: I64, jtype: I64, caps: I64, pair_of: I64, slots_run: I64, progress: F64,
                ptime: F64, paused: F64, rate: F64, total: F64, aw: I64, ap: I64, pairs: I64,
                now: float) -> None:  # fmt: skip
    row_dim = L + 10
    start = slot_i[b, S_BATCH] * J
    n = min(J, slot_i[b, S_NACTIVE] - start)
    ob = obs[b]
    ob[:] = 0.0
    obs_rows = ob[: J * row_dim].reshape(J, row_dim)
    glob = ob[J * row_dim :]
    rw = rows[b]
    rw[:, :] = 0
    rw[:, sk.SERVED] = -1
    for i in range(n):
        j = active[b, start + i]
        row_job[b, i] = j
        rw[i, sk.MAX_W] = caps[b, j, 0]
        rw[i, sk.MAX_P] = caps[b, j, 1]
        rw[i, sk.MIN_W] = caps[b, j, 2]
        rw[i, sk.NEEDS_PS] = caps[b, j, 3]
        rw[i, sk.SHAPE] = pair_of[b, j]
        t = jtype[b, j]
        if t >= 0:
            obs_rows[i, t] = 1.0
        left = max(0.0, total[b, j] - work_done(j, now, progress[b], ptime[b], paused[b],
                                                 rate[b], total[b]))  # fmt: skip
        tot = max(total[b, j], 1e-9)
        obs_rows[i, L] = 1.0
        obs_rows[i, L + 1] = min(math.log1p(slots_run[b, j]) / 5.0, OBS_HIGH)
        obs_rows[i, L + 2] = min(math.log1p(left) / 12.0, OBS_HIGH)
        obs_rows[i, L + 3] = min(max(1.0 - left / tot, 0.0), 1.0)
        obs_rows[i, L + 7] = min(aw[b, j] / COUNT_SCALE, OBS_HIGH)
        obs_rows[i, L + 8] = min(ap[b, j] / COUNT_SCALE, OBS_HIGH)
        obs_rows[i, L + 9] = i / J
    beyond = max(0, slot_i[b, S_NACTIVE] - start - n) / J
    glob[3] = min(OBS_HIGH, beyond)
    s = st[b]
    s[sk.N_ROWS] = n
    s[sk.LAST] = 1 if slot_i[b, S_BATCH] + 1 >= slot_i[b, S_NBATCH] else 0
    s[sk.SERVE] = 0
    sk.count_fits(free[b], needs, fits[b])
    sk.fill_globals(totals_cap[b], glob)
    sk.fill_mask(free[b], needs, fits[b], pairs, rw, s, mask[b])


@njit(cache=True)
def _close_batch(b: int, J: int, rows: I64, st: I64, row_job: I64, slot_w: I64, slot_p: I64,
                 order: I64, slot_i: I64) -> None:  # fmt: skip
    n = st[b, sk.N_ROWS]
    served = np.empty(n, dtype=np.int64)
    for i in range(n):
        j = row_job[b, i]
        slot_w[b, j] = rows[b, i, sk.W]
        slot_p[b, j] = rows[b, i, sk.P]
        served[i] = rows[b, i, sk.SERVED] if rows[b, i, sk.SERVED] >= 0 else 2**40
    for i in np.argsort(served, kind="mergesort"):
        if served[i] >= 2**40:
            break
        order[b, slot_i[b, S_NORDER]] = row_job[b, i]
        slot_i[b, S_NORDER] += 1


@njit(cache=True)
def start_slot(b: int, J: int, L: int, obs: F32, rows: I64, st: I64, free: F64,
               totals_cap: F64, needs: F64, fits: I64, mask: npt.NDArray[np.bool_], active: I64,
               slot_i: I64, row_job: I64, jtype: I64, caps: I64, pair_of: I64, slots_run: I64,
               progress: F64, ptime: F64, paused: F64, rate: F64, total: F64, aw: I64, ap: I64,
               pairs: I64, cap: F64, status: npt.NDArray[np.int8], before: F64, slot_w: I64,
               slot_p: I64, ints: I64, floats: F64) -> None:  # fmt: skip
    """A fresh point: everything given back, the active jobs in arrival order, batch 0."""
    n_jobs = ints[b, bk.I_N_JOBS]
    now = floats[b, bk.F_NOW]
    free[b, :, :] = cap
    totals_cap[b, 0, :] = cap.sum(axis=0)
    totals_cap[b, 1, :] = cap.sum(axis=0)
    st[b, :] = 0
    k = 0
    for j in range(n_jobs):
        slot_w[b, j] = 0
        slot_p[b, j] = 0
        if status[b, j] == bk.PENDING or status[b, j] == bk.RUNNING:
            active[b, k] = j
            before[b, j] = work_done(j, now, progress[b], ptime[b], paused[b], rate[b], total[b])
            k += 1
    slot_i[b, S_NACTIVE] = k
    slot_i[b, S_NBATCH] = max(1, (k + J - 1) // J)
    slot_i[b, S_BATCH] = 0
    slot_i[b, S_NORDER] = 0
    _load_batch(b, J, L, obs, rows, st, free, totals_cap, needs, fits, mask, active, slot_i,
                row_job, jtype, caps, pair_of, slots_run, progress, ptime, paused, rate, total,
                aw, ap, pairs, now)  # fmt: skip


@njit(cache=True)
def step_all(actions: I64, J: int, L: int, obs: F32, rows: I64, st: I64, free: F64,
             totals_cap: F64, needs: F64, fits: I64, mask: npt.NDArray[np.bool_], active: I64,
             slot_i: I64, row_job: I64, jtype: I64, caps: I64, pair_of: I64, slots_run: I64,
             progress: F64, ptime: F64, paused: F64, rate: F64, total: F64, aw: I64, ap: I64,
             pairs: I64, cap: F64, status: npt.NDArray[np.int8], before: F64, slot_w: I64,
             slot_p: I64, order: I64, started: npt.NDArray[np.bool_], run_seq: I64, wp: I64,
             pp: I64, used: F64, wneed_of: F64, pneed: F64, speed: F64, comp: F64, submit: F64,
             buf: F64, ints: I64, floats: F64, max_slots: int, rewards: F64,
             flags: npt.NDArray[np.int8], job_s: F64) -> None:  # fmt: skip
    """Every environment not yet ended takes its action (a masked one acts as void); fills
    ``rewards`` and ``flags`` (slot end, terminated, truncated) per environment, and ``job_s``:
    the job-seconds the slot's jobs spent in the system during the slot (0 unless it ended)."""
    void = 3 * J
    row_dim = L + 10
    for b in range(actions.shape[0]):
        rewards[b] = 0.0
        job_s[b] = 0.0
        flags[b, :] = 0
        if slot_i[b, S_DONE]:
            continue
        a = actions[b]
        if not mask[b, a]:
            a = void
        if a != void:
            ob = obs[b]
            sk.apply_row(a // 3, a % 3, free[b], totals_cap[b], needs, fits[b], pairs, rows[b],
                         st[b], ob[: J * row_dim].reshape(J, row_dim), ob[J * row_dim :],
                         mask[b], L)  # fmt: skip
            continue
        _close_batch(b, J, rows, st, row_job, slot_w, slot_p, order, slot_i)
        if slot_i[b, S_BATCH] + 1 < slot_i[b, S_NBATCH]:
            slot_i[b, S_BATCH] += 1
            _load_batch(b, J, L, obs, rows, st, free, totals_cap, needs, fits, mask, active,
                        slot_i, row_job, jtype, caps, pair_of, slots_run, progress, ptime, paused,
                        rate, total, aw, ap, pairs, floats[b, bk.F_NOW])  # fmt: skip
            continue
        chosen = np.empty(slot_i[b, S_NORDER], dtype=np.int64)
        n_chosen = 0
        for k in range(slot_i[b, S_NORDER]):
            j = order[b, k]
            if slot_w[b, j] >= max(1, caps[b, j, 2]) and (caps[b, j, 3] == 0 or slot_p[b, j] >= 1):
                chosen[n_chosen] = j
                n_chosen += 1
        n_active = slot_i[b, S_NACTIVE]
        slot_jobs = active[b, :n_active].copy()
        t_start = floats[b, bk.F_NOW]
        result = bk.end_slot(chosen, n_chosen, slot_w[b], slot_p[b], status[b], started[b],
                             run_seq[b], aw[b], ap[b], wp[b], pp[b], used[b], cap, wneed_of[b],
                             pneed, jtype[b], speed, progress[b], ptime[b], paused[b], rate[b],
                             comp[b], total[b], submit[b], slots_run[b], buf[b], ints[b],
                             floats[b])  # fmt: skip
        ints[b, bk.I_SLOTS] += 1
        flags[b, 0] = 1
        if result != bk.STALLED:
            t_end = floats[b, bk.F_NOW]
            r = 0.0
            for j in slot_jobs:
                if status[b, j] == bk.FINISHED:
                    done = total[b, j]
                else:
                    done = work_done(j, t_end, progress[b], ptime[b], paused[b], rate[b], total[b])
                r += (done - before[b, j]) / max(total[b, j], 1e-12)
                left = ptime[b, j] if status[b, j] == bk.FINISHED else t_end
                job_s[b] += left - t_start
            rewards[b] = r
        if result == bk.NEXT:
            start_slot(b, J, L, obs, rows, st, free, totals_cap, needs, fits, mask, active,
                       slot_i, row_job, jtype, caps, pair_of, slots_run, progress, ptime, paused,
                       rate, total, aw, ap, pairs, cap, status, before, slot_w, slot_p, ints,
                       floats)  # fmt: skip
            if ints[b, bk.I_SLOTS] >= max_slots:
                flags[b, 2] = 1
                slot_i[b, S_DONE] = 1
            continue
        obs[b, :] = 0.0
        mask[b, :] = False
        mask[b, void] = True
        slot_i[b, S_DONE] = 1
        flags[b, 1 if result == bk.OVER else 2] = 1
