"""DeepRM's discrete-time cluster (DeepRM §3), vectorised over a batch of episodes with NumPy.

This is the state machine behind `DeepRMEnv` (one episode) and the REINFORCE trainer (thousands
of episodes stepped in lock-step). It follows §3.1–3.2 of Mao et al. (HotNets 2016, seed 001)
and the authors' simulator (GitHub ``hongzimao/deeprm``, ``environment.py``):

* **Cluster**: ``R`` slots of each of ``d = 2`` resources, one pool (§3.1). The state looks ``T``
  steps ahead: ``used[t, r]`` is what running and reserved jobs hold ``t`` steps from now.
* **Waiting jobs**: the first ``M`` jobs go to slots; a new job takes the first empty slot, else
  the end of the backlog (at most ``backlog`` jobs), else it is **dropped** and counted
  (``dropped``). Scheduling a job frees its slot, which the backlog's head then fills (code).
* **Ranked view** (``DeepRMShape(ranked=True)``, dlsched's, not the paper's): the slots show the
  ``M`` shortest waiting jobs, the backlog counts the rest without a cap (nothing dropped), and
  a slot's job is valid only if it fits now (see `DeepRMShape`).
* **Actions** ``0 = ∅`` and ``i = 1..M`` (slot ``i``). A valid choice (a job whose demand fits
  for its whole duration somewhere in the horizon) reserves the job at the **first step at which
  it fits** and time stays frozen (reward 0). ∅ or an invalid choice advances time one step.
* **Reward** on each advance from step ``k`` to ``k + 1``: ``−Σ_j 1/T_j`` over the jobs in the
  system during step ``k`` (arrived, not finished; running, reserved or waiting) for the
  ``"slowdown"`` objective, ``−|J|`` for ``"completion"`` (§3.4). A job arriving at ``a`` and
  finishing at ``f`` is counted in steps ``a..f−1``, so with γ = 1 an episode's return is exactly
  ``−Σ_j S_j`` (resp. ``−Σ_j C_j`` in steps). Dropped jobs earn no penalty; they are counted.
* **Episode**: jobs of a `Jobset` arrive at their steps; it terminates when every job has arrived
  and finished, and is truncated after ``max_steps`` time steps.

Images (§3.2, Fig. 2) are binary and follow the code's layout: for each resource, the cluster
image then the ``M`` slot images (``R`` columns each), then the backlog block of
``ceil(backlog / T)`` columns filled row by row; ``T`` rows. The code paints each job of the
cluster image in its own random colour; we paint used cells 1, packed to the left (the used
amount per row and step, which is what the colours' extent shows).

The network never needs the image itself: every image block is a union of "first k cells"
prefixes, so a first layer ``W·x`` equals a sum of entries of prefix-sum tables of ``W``
(`compact_index` lists them; `dlsched.papers.deeprm.net` builds the tables). `render` draws the
same state as the image for the environment and the scheduler.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from dlsched.papers.deeprm.shape import DeepRMShape, Jobset

Objective = Literal["slowdown", "completion"]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_BIG = np.iinfo(np.int64).max // 4


def fit_table(
    used: IntArray, length: IntArray, demand: IntArray, res_slots: int
) -> tuple[BoolArray, IntArray]:
    """Where each slot's job first fits for its whole duration, for a batch of states.

    Steps at which a job's demand fits are packed into the bits of an integer; windows of
    ``2^k`` free steps are ANDs of shifted copies, and a window of ``l`` steps is the AND of the
    power-of-two windows of ``l``'s binary digits (a few vector operations whatever ``T``).

    Args:
        used: ``(B, T, d)`` slots in use at each step ahead (``T <= 52``).
        length: ``(B, M)`` durations in steps (0 = empty slot).
        demand: ``(B, M, d)`` demands in slots.
        res_slots: capacity per resource, slots.

    Returns:
        ``fits`` ``(B, M)`` (the job fits somewhere in the horizon) and ``first`` ``(B, M)``, the
        first step offset at which it fits (0 where it does not fit).
    """
    batch, horizon, num_res = used.shape
    free = np.clip(res_slots - used, 0, res_slots)  # (B, T, d)
    # enough[b, r, k]: bits of the steps at which at least k slots of r are free
    cell = (np.arange(batch)[:, None, None] * num_res + np.arange(num_res)) * (res_slots + 1)
    weight = np.broadcast_to(2.0 ** np.arange(horizon)[None, :, None], free.shape)
    hist = np.bincount(
        (cell + free).ravel(), weights=weight.ravel(), minlength=batch * num_res * (res_slots + 1)
    ).reshape(batch, num_res, res_slots + 1)
    enough = np.cumsum(hist[:, :, ::-1], axis=2)[:, :, ::-1].astype(np.int64)
    rows = np.arange(batch)[:, None]
    bits = np.full(length.shape, -1, np.int64)
    for r in range(num_res):
        bits &= enough[rows, r, np.clip(demand[:, :, r], 0, res_slots)]
    window = np.full(bits.shape, -1, np.int64)  # all ones
    pos = np.zeros(bits.shape, np.int64)
    power = bits
    k = 0
    while (1 << k) <= horizon:
        take = (length >> k) & 1 == 1
        window = np.where(take, window & (power >> pos), window)
        pos = pos + (take << k)
        power = power & (power >> (1 << k))
        k += 1
    fits = (window != 0) & (length > 0)
    low = window & -window
    first = np.where(fits, np.frexp(low.astype(np.float64))[1] - 1, 0)
    return fits, first


def render(
    shape: DeepRMShape, used: IntArray, length: IntArray, demand: IntArray, backlog: IntArray
) -> npt.NDArray[np.float32]:
    """Draw a batch of states as DeepRM images (module docstring), ``(B, T, W)`` float32."""
    t_len, r_len, m = shape.horizon, shape.res_slots, shape.slots
    batch = used.shape[0]
    cols = np.arange(r_len)
    rows = np.arange(t_len)
    image = np.zeros((batch, t_len, shape.image_width), np.float32)
    block = (1 + m) * r_len
    for r in range(shape.num_res):
        base = r * block
        image[:, :, base : base + r_len] = cols[None, None, :] < used[:, :, r, None]
        slot_img = (rows[None, None, :, None] < length[:, :, None, None]) & (
            cols[None, None, None, :] < demand[:, :, r, None, None]
        )  # (B, M, T, R)
        image[:, :, base + r_len : base + block] = slot_img.transpose(0, 2, 1, 3).reshape(
            batch, t_len, m * r_len
        )
    width = shape.backlog_width
    if width:
        cells = np.arange(t_len * width).reshape(t_len, width)
        start = shape.num_res * block
        image[:, :, start:] = cells[None] < backlog[:, None, None]
    return image


def compact_index(
    shape: DeepRMShape, used: IntArray, length: IntArray, demand: IntArray, backlog: IntArray
) -> npt.NDArray[np.int64]:
    """Rows of the prefix-sum table whose sum is the first layer's ``W·image`` (``(B, n)``).

    Layout of the table (see `dlsched.papers.deeprm.net.prefix_table`): cluster entries
    ``(t, r, k)`` for ``k = 0..R`` cells used; slot entries ``(i, r, l, k)`` for duration ``l``
    and demand ``k``; backlog entries ``b = 0..T·width``.
    """
    t_len, r_len, m, d = shape.horizon, shape.res_slots, shape.slots, shape.num_res
    batch = used.shape[0]
    tr = np.arange(t_len * d).reshape(t_len, d)
    cluster = (tr[None] * (r_len + 1) + used).reshape(batch, t_len * d)
    base_s = t_len * d * (r_len + 1)
    ir = np.arange(m * d).reshape(m, d)
    slot = base_s + ((ir[None] * (t_len + 1) + length[:, :, None]) * (r_len + 1) + demand)
    base_b = base_s + m * d * (t_len + 1) * (r_len + 1)
    back = base_b + np.minimum(backlog, t_len * shape.backlog_width)[:, None]
    return np.concatenate([cluster, slot.reshape(batch, m * d), back], axis=1)


def table_rows(shape: DeepRMShape) -> int:
    """Rows of the prefix-sum table `compact_index` points into."""
    t_len, r_len, m, d = shape.horizon, shape.res_slots, shape.slots, shape.num_res
    cluster = t_len * d * (r_len + 1)
    return cluster + m * d * (t_len + 1) * (r_len + 1) + t_len * shape.backlog_width + 1


class DeepRMBatch:
    """``B`` DeepRM episodes stepped together (module docstring for the rules).

    Args:
        jobsets: one jobset per episode (the same jobset may appear many times).
        shape: state sizes.
        objective: ``"slowdown"`` (reward ``−Σ 1/T_j``) or ``"completion"`` (``−|J|``).
        max_steps: truncate an episode after this many time steps.

    Attributes (all ``(B, …)`` arrays): ``now`` step, ``used`` ``(B, T, d)``, ``slot`` job index
    per slot (−1 empty), ``backlog`` count, ``dropped`` count, ``start`` ``(B, J)`` start step of
    each job (−1 before), ``terminated``, ``truncated``.
    """

    def __init__(
        self,
        jobsets: Sequence[Jobset],
        shape: DeepRMShape | None = None,
        *,
        objective: Objective = "slowdown",
        max_steps: int = 400,
    ) -> None:
        if objective not in ("slowdown", "completion"):
            raise ValueError(f"objective must be 'slowdown' or 'completion', got {objective!r}")
        if not jobsets:
            raise ValueError("DeepRMBatch needs at least one jobset")
        self.shape = shape = shape or DeepRMShape()
        self.objective = objective
        self.max_steps = max_steps
        b = len(jobsets)
        jmax = max(max(len(js) for js in jobsets), 1)
        self.num_jobs = np.array([len(js) for js in jobsets], np.int64)
        self.arrival = np.full((b, jmax + 1), _BIG, np.int64)
        self.length = np.ones((b, jmax + 1), np.int64)
        self.demand = np.zeros((b, jmax + 1, shape.num_res), np.int64)
        for i, js in enumerate(jobsets):
            n = len(js)
            self.arrival[i, :n] = js.arrival
            self.length[i, :n] = js.length
            self.demand[i, :n] = js.demand
        # ranked view: jobs in slot order (duration, then arrival; the padding job last) and
        # which of them wait, in that order
        key = np.where(self.arrival == _BIG, _BIG, self.length)
        self.order = np.lexsort((self.arrival, key))
        self.rank = np.empty_like(self.order)
        np.put_along_axis(self.rank, self.order, np.arange(jmax + 1)[None], axis=1)
        self.waiting = np.zeros((b, jmax + 1), bool)
        self.rows = np.arange(b)
        t_len = shape.horizon
        self.now = np.zeros(b, np.int64)
        self.steps = np.zeros(b, np.int64)
        self.next_job = np.zeros(b, np.int64)
        self.used = np.zeros((b, t_len, shape.num_res), np.int64)
        self.fin_inv = np.zeros((b, t_len + 1))
        self.fin_cnt = np.zeros((b, t_len + 1), np.int64)
        self.slot = np.full((b, shape.slots), -1, np.int64)
        self.slot_len = np.zeros((b, shape.slots), np.int64)
        self.slot_dem = np.zeros((b, shape.slots, shape.num_res), np.int64)
        self.queue = np.zeros((b, max(shape.backlog, 1)), np.int64)
        self.queue_head = np.zeros(b, np.int64)
        self.backlog = np.zeros(b, np.int64)
        self.sys_inv = np.zeros(b)
        self.sys_cnt = np.zeros(b, np.int64)
        self.dropped = np.zeros(b, np.int64)
        self.start = np.full((b, jmax + 1), -1, np.int64)
        self.was_dropped = np.zeros((b, jmax + 1), bool)
        self.terminated = np.zeros(b, bool)
        self.truncated = np.zeros(b, bool)
        self._fits: tuple[BoolArray, IntArray] | None = None
        self._arrive(np.ones(b, bool))
        self._check_done()

    # -- observation ------------------------------------------------------------------------

    @property
    def active(self) -> BoolArray:
        """Episodes neither terminated nor truncated."""
        return ~(self.terminated | self.truncated)

    def fits(self) -> tuple[BoolArray, IntArray]:
        """`fit_table` of the current states of active episodes (cached until the next step);
        in the ranked view a job "fits" only if it fits now (`DeepRMShape.ranked`)."""
        if self._fits is None:
            fits = np.zeros(self.slot.shape, bool)
            first = np.zeros(self.slot.shape, np.int64)
            rows = np.flatnonzero(self.active)
            if rows.size:
                fits[rows], first[rows] = fit_table(
                    self.used[rows], self.slot_len[rows], self.slot_dem[rows], self.shape.res_slots
                )
            if self.shape.ranked:
                fits &= first == 0
            self._fits = fits, first
        return self._fits

    def action_masks(self) -> BoolArray:
        """``(B, M + 1)`` valid actions: ∅ always, slot ``i`` if its job fits in the horizon."""
        fits, _ = self.fits()
        return np.concatenate([np.ones((len(self.rows), 1), bool), fits], axis=1)

    def images(self, rows: IntArray | None = None) -> npt.NDArray[np.float32]:
        """``(B, T, W)`` images of the current states (of ``rows`` only if given)."""
        r = self.rows if rows is None else rows
        return render(self.shape, self.used[r], self.slot_len[r], self.slot_dem[r], self.backlog[r])

    def index(self, rows: IntArray | None = None) -> npt.NDArray[np.int64]:
        """`compact_index` of the current states (of ``rows`` only if given)."""
        r = self.rows if rows is None else rows
        return compact_index(
            self.shape, self.used[r], self.slot_len[r], self.slot_dem[r], self.backlog[r]
        )

    # -- transition -------------------------------------------------------------------------

    def step(self, actions: IntArray) -> tuple[FloatArray, BoolArray]:
        """Apply one action per episode (ignored for finished ones).

        Returns:
            ``(reward (B,), advanced (B,))``: reward 0 where time stayed frozen.
        """
        actions = np.asarray(actions, np.int64)
        act = self.active
        fits, first = self.fits()
        slot_i = np.clip(actions - 1, 0, self.shape.slots - 1)
        chosen = act & (actions > 0) & fits[self.rows, slot_i]
        advance = act & ~chosen
        if chosen.any():
            self._schedule(chosen, slot_i, first[self.rows, slot_i])
        reward = np.zeros(len(self.rows))
        if advance.any():
            penalty = self.sys_inv if self.objective == "slowdown" else self.sys_cnt
            reward[advance] = -penalty[advance]
            self._advance(advance)
        self._fits = None
        self._check_done()
        return reward, advance

    def _schedule(self, rows_mask: BoolArray, slot_i: IntArray, offset: IntArray) -> None:
        rows = self.rows[rows_mask]
        si = slot_i[rows_mask]
        off = offset[rows_mask]
        job = self.slot[rows, si]
        length = self.length[rows, job]
        demand = self.demand[rows, job]
        steps = np.arange(self.shape.horizon)
        span = (steps[None] >= off[:, None]) & (steps[None] < (off + length)[:, None])
        self.used[rows] += span[:, :, None] * demand[:, None, :]
        end = off + length
        self.fin_inv[rows, end] += 1.0 / length
        self.fin_cnt[rows, end] += 1
        self.start[rows, job] = self.now[rows] + off
        if self.shape.ranked:
            self.waiting[rows, self.rank[rows, job]] = False
            self._rank_slots(rows)
            return
        refill = self.backlog[rows] > 0
        head = self.queue_head[rows]
        nxt = np.where(refill, self.queue[rows, head % self.queue.shape[1]], -1)
        self.slot[rows, si] = nxt
        nj = np.maximum(nxt, 0)
        self.slot_len[rows, si] = np.where(refill, self.length[rows, nj], 0)
        self.slot_dem[rows, si] = self.demand[rows, nj] * refill[:, None]
        self.queue_head[rows] = np.where(refill, head + 1, head)
        self.backlog[rows] -= refill

    def _advance(self, rows_mask: BoolArray) -> None:
        rows = self.rows[rows_mask]
        self.now[rows] += 1
        self.steps[rows] += 1
        self.sys_inv[rows] -= self.fin_inv[rows, 1]
        self.sys_cnt[rows] -= self.fin_cnt[rows, 1]
        self.fin_inv[rows, :-1] = self.fin_inv[rows, 1:]
        self.fin_inv[rows, -1] = 0.0
        self.fin_cnt[rows, :-1] = self.fin_cnt[rows, 1:]
        self.fin_cnt[rows, -1] = 0
        self.used[rows, :-1] = self.used[rows, 1:]
        self.used[rows, -1] = 0
        self._arrive(rows_mask)

    def _arrive(self, rows_mask: BoolArray) -> None:
        """Admit every job arriving at ``now`` (slot, else backlog, else dropped)."""
        cap = self.shape.backlog
        width = self.queue.shape[1]
        while True:
            job = self.next_job
            due = rows_mask & (self.arrival[self.rows, job] <= self.now)
            if not due.any():
                return
            rows = self.rows[due]
            j = job[rows]
            if self.shape.ranked:
                self.waiting[rows, self.rank[rows, j]] = True
                self.sys_inv[rows] += 1.0 / self.length[rows, j]
                self.sys_cnt[rows] += 1
                self.next_job[rows] += 1
                self._rank_slots(rows)
                continue
            empty = self.slot[rows] < 0
            has_slot = empty.any(1)
            pos = empty.argmax(1)
            to_slot = rows[has_slot]
            js = j[has_slot]
            self.slot[to_slot, pos[has_slot]] = js
            self.slot_len[to_slot, pos[has_slot]] = self.length[to_slot, js]
            self.slot_dem[to_slot, pos[has_slot]] = self.demand[to_slot, js]
            to_back = ~has_slot & (self.backlog[rows] < cap)
            rb = rows[to_back]
            self.queue[rb, (self.queue_head[rb] + self.backlog[rb]) % width] = j[to_back]
            self.backlog[rb] += 1
            admitted = has_slot | to_back
            ra = rows[admitted]
            self.sys_inv[ra] += 1.0 / self.length[ra, j[admitted]]
            self.sys_cnt[ra] += 1
            self.dropped[rows[~admitted]] += 1
            self.was_dropped[rows[~admitted], j[~admitted]] = True
            self.next_job[rows] += 1

    def _rank_slots(self, rows: IntArray) -> None:
        """Ranked view: the first ``M`` waiting jobs in slot order fill the slots of ``rows``;
        the backlog counts the others."""
        m = self.shape.slots
        wait = self.waiting[rows]
        place = np.cumsum(wait, axis=1)  # 1-based slot of each waiting job
        r, c = np.nonzero(wait & (place <= m))
        self.slot[rows] = -1
        self.slot[rows[r], place[r, c] - 1] = self.order[rows[r], c]
        filled = self.slot[rows] >= 0
        job = np.maximum(self.slot[rows], 0)
        self.slot_len[rows] = np.where(filled, self.length[rows[:, None], job], 0)
        self.slot_dem[rows] = self.demand[rows[:, None], job] * filled[:, :, None]
        self.backlog[rows] = np.maximum(place[:, -1] - m, 0) if wait.shape[1] else 0

    def _check_done(self) -> None:
        all_in = self.next_job >= self.num_jobs
        self.terminated |= all_in & (self.sys_cnt == 0)
        self.truncated |= ~self.terminated & (self.steps >= self.max_steps)

    # -- metrics ----------------------------------------------------------------------------

    def completion_times(self, i: int) -> FloatArray:
        """Completion time ``start + T_j − arrival`` in steps of every admitted job that has
        arrived in episode ``i``; a job not started yet (truncated episode) counts as if it
        started now (a lower bound)."""
        n = int(self.num_jobs[i])
        arrival = self.arrival[i, :n]
        keep = ~self.was_dropped[i, :n] & (arrival <= self.now[i])
        start = np.where(self.start[i, :n] >= 0, self.start[i, :n], self.now[i])
        return np.asarray((start + self.length[i, :n] - arrival)[keep], np.float64)

    def slowdowns(self, i: int) -> FloatArray:
        """Slowdowns (`completion_times` / ``T_j``) of episode ``i``'s admitted jobs."""
        n = int(self.num_jobs[i])
        keep = ~self.was_dropped[i, :n] & (self.arrival[i, :n] <= self.now[i])
        return self.completion_times(i) / self.length[i, :n][keep]
