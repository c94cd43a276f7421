"""DeepRM's discrete-time cluster as PyTorch tensors: `TorchDeepRMBatch`, for a CUDA device.

The same state machine as `dlsched.papers.deeprm.state.DeepRMBatch` (whose module docstring
states every rule and its source), for the paper's view only (slots in arrival order, a FIFO
backlog of at most ``backlog`` jobs, later arrivals dropped; ``DeepRMShape(ranked=False)``).
Every operation acts on the whole batch under masks, so a step is a fixed sequence of tensor
operations whatever the episodes do (no per-episode indexing, few host synchronisations). The
arithmetic is the NumPy version's, in the same order and in float64, so both give the same
trajectories bit for bit (``tests/rl/test_deeprm_batched.py``).

Where a job first fits is found differently (same result): the steps at which it fits are
``ok[b, m, t]``, and a window of ``l`` steps from ``o`` fits when the running count of misfits
is the same at ``o`` and ``o + l`` (the NumPy version packs the steps into integer bits).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from dlsched.papers.deeprm.shape import DeepRMShape, Jobset
from dlsched.papers.deeprm.state import Objective

_BIG = np.iinfo(np.int64).max // 4


class TorchDeepRMBatch:
    """``B`` DeepRM episodes on one torch device (`DeepRMBatch`'s interface and rules).

    Args:
        jobsets: one jobset per episode.
        shape: state sizes (``ranked`` must be False).
        objective: ``"slowdown"`` (reward ``−Σ 1/T_j``) or ``"completion"`` (``−|J|``).
        max_steps: truncate an episode after this many time steps.
        device: where the tensors live (``"cpu"``, ``"cuda"``, ...).
    """

    def __init__(
        self,
        jobsets: Sequence[Jobset],
        shape: DeepRMShape | None = None,
        *,
        objective: Objective = "slowdown",
        max_steps: int = 400,
        device: str | torch.device = "cpu",
    ) -> None:
        self.shape = shape = shape or DeepRMShape()
        if shape.ranked:
            raise ValueError("TorchDeepRMBatch: only the paper's view (ranked=False)")
        if objective not in ("slowdown", "completion"):
            raise ValueError(f"objective must be 'slowdown' or 'completion', got {objective!r}")
        if not jobsets:
            raise ValueError("TorchDeepRMBatch needs at least one jobset")
        self.objective = objective
        self.max_steps = max_steps
        self.device = dev = torch.device(device)
        b = len(jobsets)
        jmax = max(max(len(js) for js in jobsets), 1)
        arrival = np.full((b, jmax + 1), _BIG, np.int64)
        length = np.ones((b, jmax + 1), np.int64)
        demand = np.zeros((b, jmax + 1, shape.num_res), np.int64)
        for i, js in enumerate(jobsets):
            n = len(js)
            arrival[i, :n], length[i, :n], demand[i, :n] = js.arrival, js.length, js.demand

        def zeros(*size: int, dtype: torch.dtype = torch.int64) -> torch.Tensor:
            return torch.zeros(size, dtype=dtype, device=dev)

        self.num_jobs = torch.tensor([len(js) for js in jobsets], dtype=torch.int64, device=dev)
        self.arrival = torch.from_numpy(arrival).to(dev)
        self.length = torch.from_numpy(length).to(dev)
        self.demand = torch.from_numpy(demand).to(dev)
        t_len, m, d = shape.horizon, shape.slots, shape.num_res
        self.rows = torch.arange(b, device=dev)
        self._slot_ids = torch.arange(m, device=dev)
        self._steps = torch.arange(t_len, device=dev)
        self.now, self.steps, self.next_job = zeros(b), zeros(b), zeros(b)
        self.used = zeros(b, t_len, d)
        self.fin_inv = zeros(b, t_len + 1, dtype=torch.float64)
        self.fin_cnt = zeros(b, t_len + 1)
        self.slot = torch.full((b, m), -1, dtype=torch.int64, device=dev)
        self.slot_len, self.slot_dem = zeros(b, m), zeros(b, m, d)
        self.queue = zeros(b, max(shape.backlog, 1))
        self.queue_head, self.backlog = zeros(b), zeros(b)
        self.sys_inv, self.sys_cnt = zeros(b, dtype=torch.float64), zeros(b)
        self.dropped = zeros(b)
        self.start = torch.full((b, jmax + 1), -1, dtype=torch.int64, device=dev)
        self.was_dropped = zeros(b, jmax + 1, dtype=torch.bool)
        self.terminated, self.truncated = zeros(b, dtype=torch.bool), zeros(b, dtype=torch.bool)
        self._fits: tuple[torch.Tensor, torch.Tensor] | None = None
        self._arrive(torch.ones(b, dtype=torch.bool, device=dev))
        self._check_done()

    # -- observation ------------------------------------------------------------------------

    @property
    def active(self) -> torch.Tensor:
        """Episodes neither terminated nor truncated, ``(B,)`` bool."""
        return ~(self.terminated | self.truncated)

    def fits(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(fits, first)``, ``(B, M)`` each: whether each slot's job fits for its whole
        duration somewhere in the horizon, and the first step offset at which it does (0 where
        it does not); False for finished episodes. Cached until the next step."""
        if self._fits is None:
            r_len, t_len = self.shape.res_slots, self.shape.horizon
            free = (r_len - self.used).clamp(0, r_len)  # (B, T, d)
            dem = self.slot_dem.clamp(0, r_len)  # (B, M, d)
            ok = (free[:, None, :, :] >= dem[:, :, None, :]).all(dim=3)  # (B, M, T)
            bad = torch.nn.functional.pad((~ok).to(torch.int32).cumsum(dim=2), (1, 0))
            end = self._steps[None, None, :] + self.slot_len[:, :, None]  # (B, M, T)
            inside = end <= t_len
            window_bad = bad.gather(2, end.clamp(max=t_len)) - bad[:, :, :t_len]
            starts = inside & (window_bad == 0)
            fits = starts.any(dim=2) & (self.slot_len > 0) & self.active[:, None]
            first = torch.where(fits, starts.to(torch.int8).argmax(dim=2), 0)
            self._fits = fits, first
        return self._fits

    def action_masks(self) -> torch.Tensor:
        """``(B, M + 1)`` valid actions: ∅ always, slot ``i`` if its job fits in the horizon."""
        fits, _ = self.fits()
        return torch.cat([torch.ones_like(fits[:, :1]), fits], dim=1)

    def index(self, rows: torch.Tensor | None = None) -> torch.Tensor:
        """`dlsched.papers.deeprm.state.compact_index` of the current states, ``(B, n)``."""
        s = self.shape
        t_len, r_len, m, d = s.horizon, s.res_slots, s.slots, s.num_res
        used, length, demand, backlog = self.used, self.slot_len, self.slot_dem, self.backlog
        if rows is not None:
            used, length, demand, backlog = used[rows], length[rows], demand[rows], backlog[rows]
        batch = used.shape[0]
        dev = self.device
        tr = torch.arange(t_len * d, device=dev).reshape(t_len, d)
        cluster = (tr[None] * (r_len + 1) + used).reshape(batch, t_len * d)
        base_s = t_len * d * (r_len + 1)
        ir = torch.arange(m * d, device=dev).reshape(m, d)
        slot = base_s + ((ir[None] * (t_len + 1) + length[:, :, None]) * (r_len + 1) + demand)
        base_b = base_s + m * d * (t_len + 1) * (r_len + 1)
        back = base_b + backlog.clamp(max=t_len * s.backlog_width)[:, None]
        return torch.cat([cluster, slot.reshape(batch, m * d), back], dim=1)

    def images(self) -> torch.Tensor:
        """``(B, T, W)`` float32 DeepRM images (`dlsched.papers.deeprm.state.render`)."""
        s = self.shape
        t_len, r_len, m = s.horizon, s.res_slots, s.slots
        batch, dev = self.used.shape[0], self.device
        cols, rows = torch.arange(r_len, device=dev), torch.arange(t_len, device=dev)
        image = torch.zeros((batch, t_len, s.image_width), dtype=torch.float32, device=dev)
        block = (1 + m) * r_len
        for r in range(s.num_res):
            base = r * block
            image[:, :, base : base + r_len] = cols[None, None, :] < self.used[:, :, r, None]
            slot_img = (rows[None, None, :, None] < self.slot_len[:, :, None, None]) & (
                cols[None, None, None, :] < self.slot_dem[:, :, r, None, None]
            )  # (B, M, T, R)
            image[:, :, base + r_len : base + block] = slot_img.permute(0, 2, 1, 3).reshape(
                batch, t_len, m * r_len
            )
        width = s.backlog_width
        if width:
            cells = torch.arange(t_len * width, device=dev).reshape(t_len, width)
            image[:, :, s.num_res * block :] = cells[None] < self.backlog[:, None, None]
        return image

    # -- transition -------------------------------------------------------------------------

    def step(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Apply one action per episode (ignored for finished ones).

        Returns:
            ``(reward (B,) float64, advanced (B,) bool)``: reward 0 where time stayed frozen.
        """
        actions = torch.as_tensor(actions, dtype=torch.int64, device=self.device)
        act = self.active
        fits, first = self.fits()
        slot_i = (actions - 1).clamp(0, self.shape.slots - 1)
        pick = slot_i[:, None]
        chosen = act & (actions > 0) & fits.gather(1, pick)[:, 0]
        advance = act & ~chosen
        self._schedule(chosen, slot_i, first.gather(1, pick)[:, 0])
        penalty = self.sys_inv if self.objective == "slowdown" else self.sys_cnt.double()
        reward = torch.where(advance, -penalty, torch.zeros_like(penalty))
        self._advance(advance)
        self._fits = None
        self._check_done()
        return reward, advance

    def _job(self, job: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Duration ``(B,)`` and demand ``(B, d)`` of one job per episode (``job >= 0``)."""
        return self.length.gather(1, job[:, None])[:, 0], self.demand[self.rows, job]

    def _schedule(self, mask: torch.Tensor, slot_i: torch.Tensor, off: torch.Tensor) -> None:
        """Reserve the chosen slot's job at ``off`` steps from now where ``mask``; the backlog's
        head takes its slot."""
        job = self.slot.gather(1, slot_i[:, None])[:, 0].clamp(min=0)
        length, demand = self._job(job)
        end = off + length
        span = (self._steps >= off[:, None]) & (self._steps < end[:, None]) & mask[:, None]
        self.used += span[:, :, None] * demand[:, None, :]
        end_i = end.clamp(max=self.shape.horizon)[:, None]
        inv = torch.where(mask, 1.0 / length.double(), 0.0)
        self.fin_inv.scatter_add_(1, end_i, inv[:, None])
        self.fin_cnt.scatter_add_(1, end_i, mask.long()[:, None])
        old = self.start.gather(1, job[:, None])[:, 0]
        self.start.scatter_(1, job[:, None], torch.where(mask, self.now + off, old)[:, None])
        refill = mask & (self.backlog > 0)
        width = self.queue.shape[1]
        head = self.queue_head
        nxt = torch.where(refill, self.queue.gather(1, (head % width)[:, None])[:, 0], -1)
        nxt_len, nxt_dem = self._job(nxt.clamp(min=0))
        here = (self._slot_ids[None] == slot_i[:, None]) & mask[:, None]
        self.slot = torch.where(here, nxt[:, None], self.slot)
        self.slot_len = torch.where(here, (nxt_len * refill)[:, None], self.slot_len)
        self.slot_dem = torch.where(
            here[:, :, None], (nxt_dem * refill[:, None])[:, None, :], self.slot_dem
        )
        self.queue_head = head + refill
        self.backlog = self.backlog - refill.long()

    def _advance(self, mask: torch.Tensor) -> None:
        """One time step for the episodes in ``mask``: jobs end, the images shift, jobs arrive."""
        self.now = self.now + mask
        self.steps = self.steps + mask
        self.sys_inv = torch.where(mask, self.sys_inv - self.fin_inv[:, 1], self.sys_inv)
        self.sys_cnt = torch.where(mask, self.sys_cnt - self.fin_cnt[:, 1], self.sys_cnt)
        col = mask[:, None]
        self.fin_inv = torch.where(col, _shift(self.fin_inv), self.fin_inv)
        self.fin_cnt = torch.where(col, _shift(self.fin_cnt), self.fin_cnt)
        self.used = torch.where(col[:, :, None], _shift(self.used), self.used)
        self._arrive(mask)

    def _arrive(self, mask: torch.Tensor) -> None:
        """Admit every job arriving at ``now`` (slot, else backlog, else dropped)."""
        cap, width = self.shape.backlog, self.queue.shape[1]
        while True:
            j = self.next_job
            due = mask & (self.arrival.gather(1, j[:, None])[:, 0] <= self.now)
            if not bool(due.any()):
                return
            length, demand = self._job(j)
            empty = self.slot < 0
            has_slot = due & empty.any(dim=1)
            pos = empty.to(torch.int8).argmax(dim=1)
            here = (self._slot_ids[None] == pos[:, None]) & has_slot[:, None]
            self.slot = torch.where(here, j[:, None], self.slot)
            self.slot_len = torch.where(here, length[:, None], self.slot_len)
            self.slot_dem = torch.where(here[:, :, None], demand[:, None, :], self.slot_dem)
            to_back = due & ~has_slot & (self.backlog < cap)
            at = ((self.queue_head + self.backlog) % width)[:, None]
            old = self.queue.gather(1, at)[:, 0]
            self.queue.scatter_(1, at, torch.where(to_back, j, old)[:, None])
            self.backlog = self.backlog + to_back
            admitted = has_slot | to_back
            self.sys_inv = torch.where(admitted, self.sys_inv + 1.0 / length.double(), self.sys_inv)
            self.sys_cnt = self.sys_cnt + admitted
            drop = due & ~admitted
            self.dropped = self.dropped + drop
            self.was_dropped.scatter_(
                1, j[:, None], (self.was_dropped.gather(1, j[:, None])[:, 0] | drop)[:, None]
            )
            self.next_job = self.next_job + due

    def _check_done(self) -> None:
        all_in = self.next_job >= self.num_jobs
        self.terminated |= all_in & (self.sys_cnt == 0)
        self.truncated |= ~self.terminated & (self.steps >= self.max_steps)

    # -- metrics ----------------------------------------------------------------------------

    def mean_slowdowns(self) -> torch.Tensor:
        """``(B,)`` mean slowdown of each episode's admitted, arrived jobs (a job not started
        yet counts as if it started now, as `DeepRMBatch.completion_times`); NaN if none."""
        jobs = torch.arange(self.arrival.shape[1], device=self.device)[None]
        keep = (jobs < self.num_jobs[:, None]) & ~self.was_dropped
        keep &= self.arrival <= self.now[:, None]
        start = torch.where(self.start >= 0, self.start, self.now[:, None])
        done = (start + self.length - self.arrival).double() / self.length.double()
        total = torch.where(keep, done, 0.0).sum(dim=1)
        count = keep.sum(dim=1)
        return torch.where(count > 0, total / count.clamp(min=1), torch.nan)


def _shift(values: torch.Tensor) -> torch.Tensor:
    """``values`` moved one step earlier along axis 1, zero at the end."""
    return torch.cat([values[:, 1:], torch.zeros_like(values[:, :1])], dim=1)
