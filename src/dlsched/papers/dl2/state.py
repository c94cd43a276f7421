"""DL2's state and incremental actions (DL2 §4.1), shared by the environment and the scheduler.

At each scheduling point (time slot) the policy rebuilds the allocation from scratch by a
sequence of small actions, each chosen from the state updated by the previous ones:

* **State** over ``J`` job rows in arrival order, per row (DL2's ``s = (x, d, e, r, w, u)`` plus
  a few observable extras): ``x`` the job type one-hot over ``L`` types; ``d`` time slots it
  has run; ``e`` remaining epochs; ``r`` dominant share of the cluster allocated to it so far
  this slot; ``w``/``u`` workers/PS allocated so far this slot; extras: row present, fraction
  of its epochs done, workers/PS it held last slot, row position ``i / J``. Then four global
  entries: free fraction of GPU, CPU and memory in this slot's scratch copy, and how many
  active jobs wait beyond this batch (÷ J). Everything is what a real scheduler observes
  (`ClusterView`: progress, counts, free resources); no speed function, noisy or not, is read.
* **Actions** ``3J + 1``: ``3i`` add a worker to row ``i``, ``3i + 1`` add a PS, ``3i + 2``
  add one of each, ``3J`` the void action that ends the batch. Actions that would exceed the
  job's caps or that do not fit in the free resources are masked.
* **Batches** (DL2 Fig. 17): with more than ``J`` active jobs, rows are filled with the first
  ``J`` by arrival; the void action then moves to the next ``J`` (the resources they took stay
  taken) and only the last batch's void ends the slot.

The void action that would end a slot in which no job got enough to train is masked while
some other action is legal, so a policy can never leave the cluster idle with jobs waiting
(which would stall the simulation).

Jobs whose slot allocation lacks a worker or (PS jobs) a PS cannot train and are left out of
the `Decision`; their reserved resources stay idle for the slot, as in DL2.

Scales: ``d`` is ``log1p(slots)/5``, ``e`` is ``log1p(epochs)/12``, ``r`` is 10 × share, counts
are ÷ 16 (`COUNT_SCALE`); all entries are clipped to ``[0, OBS_HIGH]`` as they are written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dlsched.core import Arch, ClusterView, Decision, JobRun, JobSpec
from dlsched.papers.dl2.free import Need, ScratchFree
from dlsched.schedulers.common import FreeTracker
from dlsched.workloads.dl2 import JOB_TYPES

DEFAULT_J = 40
"""Job rows of the state (DL2 §4.1 and Fig. 17)."""
ROW_EXTRA = 10
"""Per-row entries besides the type one-hot: present, d, e, done, r, w, u, last w, last u,
row position (i / J)."""
GLOBAL = 4
"""Global entries: free GPU, CPU and memory fractions; jobs beyond this batch ÷ J."""
COUNT_SCALE = 16.0
SHARE_SCALE = 10.0
OBS_HIGH = 10.0
ADD_WORKER, ADD_PS, ADD_BOTH = 0, 1, 2
_EPS = 1e-9


@dataclass(frozen=True)
class Dl2Shape:
    """Sizes of DL2's observation and action spaces.

    Attributes:
        J: job rows (jobs scheduled per batch).
        job_types: the ``L`` job types of the one-hot, in order (unknown types: all zeros).
    """

    J: int = DEFAULT_J
    job_types: tuple[str, ...] = JOB_TYPES

    def __post_init__(self) -> None:
        if self.J < 1:
            raise ValueError(f"J must be >= 1, got {self.J}")

    @property
    def L(self) -> int:
        return len(self.job_types)

    @property
    def row_dim(self) -> int:
        return self.L + ROW_EXTRA

    @property
    def obs_dim(self) -> int:
        return self.J * self.row_dim + GLOBAL

    @property
    def num_actions(self) -> int:
        return 3 * self.J + 1

    @property
    def void(self) -> int:
        return 3 * self.J

    def fields(self) -> dict[str, int]:
        """Shape fields for a checkpoint card."""
        return {"J": self.J, "L": self.L, "obs_dim": self.obs_dim, "num_actions": self.num_actions}


Flags = tuple[bool, bool, bool]


class Dl2Slot:
    """One scheduling point being decided action by action (a `SlotBuilder`).

    Args:
        view: the cluster as the scheduler sees it.
        shape: J and the job types.
    """

    def __init__(self, view: ClusterView, shape: Dl2Shape) -> None:
        self.shape = shape
        self.now_s = view.now_s
        cluster = view.cluster
        self.capacity = cluster.capacity_array.sum(axis=0)
        self._cap = [float(c) for c in self.capacity]
        self._cap_used = [(r, c) for r, c in enumerate(self._cap) if c > 0]
        self.jobs: list[JobRun] = view.jobs()
        # the slot is decided from scratch: everything the running jobs hold is given back
        given_back = FreeTracker(cluster, release=view.running).free
        self.free = ScratchFree([list(row) for row in given_back])  # changes rows in place
        self.counts: dict[int, list[int]] = {run.job_id: [0, 0] for run in self.jobs}
        self._specs = {run.job_id: run.spec for run in self.jobs}
        self.order: list[int] = []  # job ids in the order they first got a task
        self._served: set[int] = set()
        self._trains = False  # some job can train with this slot's counts (they only grow)
        self.batch = 0
        self.done = False
        self.actions = 0
        self.changed_part: int | None = None  # the row the last action changed (None: a batch)
        self._type_index = {t: i for i, t in enumerate(shape.job_types)}
        self._num_batches = max(1, math.ceil(len(self.jobs) / shape.J))
        J = shape.J
        self._void = shape.void
        self._L = shape.L
        self._obs = np.zeros(shape.obs_dim, dtype=np.float32)
        self._obs_rows = self._obs[: J * shape.row_dim].reshape(J, shape.row_dim)
        self._glob = self._obs[J * shape.row_dim :]
        self._mask = np.zeros(shape.num_actions, dtype=bool)
        self._mask_rows = self._mask[: 3 * J].reshape(J, 3)
        self._load_batch()

    # -- batch ---------------------------------------------------------------------------------

    @property
    def num_batches(self) -> int:
        return self._num_batches

    def _load_batch(self) -> None:
        J, L = self.shape.J, self.shape.L
        start = self.batch * J
        self.rows: list[JobRun] = self.jobs[start : start + J]
        n = len(self.rows)
        if self.batch > 0:
            self._obs[:] = 0.0
        obs_rows = self._obs_rows
        self._w = [0] * J
        self._p = [0] * J
        self._max_w = [0] * J
        self._max_p = [0] * J
        self._cap_ok = np.zeros((J, 3), dtype=bool)  # legal by the job's caps: w, PS, both
        self._shape_of = np.zeros(J, dtype=np.int64)
        self._row_shape: list[int] = []
        self._needs: list[tuple[Need, Need]] = []
        shape_ids: dict[tuple[Need, Need], int] = {}
        self._flags: list[Flags] | None = None  # per shape: worker, PS, both fit; None: stale
        self._mask_flags: list[Flags] | None = None  # the flags the mask's rows were built from
        self._mask_row: int | None = None  # a row whose caps changed since the mask was built
        now, counts, type_index = self.now_s, self.counts, self._type_index
        hot: list[tuple[int, int]] = []  # (row, job type) of the one-hot
        extra: list[tuple[float, float, float, float, int, int]] = []
        for i, run in enumerate(self.rows):
            spec = run.spec
            t = type_index.get(spec.model)
            if t is not None:
                hot.append((i, t))
            alloc = run.allocation
            left = run.remaining_work(now)
            extra.append(
                (
                    math.log1p(run.slots_run),
                    math.log1p(left),
                    left,
                    max(spec.total_work, _EPS),
                    alloc.num_workers,
                    alloc.num_ps,
                )
            )
            w, p = counts[run.job_id]
            self._w[i], self._p[i] = w, p
            self._max_w[i] = spec.max_workers
            self._max_p[i] = spec.max_ps if spec.arch is Arch.PS else 0
            key = (spec.worker_demand.as_tuple(), spec.ps_demand.as_tuple())
            k = shape_ids.get(key)
            if k is None:
                k = shape_ids[key] = len(self._needs)
                self._needs.append(key)
            self._row_shape.append(k)
        if n:
            # float64 columns, written as float32: the values writing entry by entry would give
            x = np.array(extra)
            block = np.zeros((n, ROW_EXTRA))
            block[:, 0] = 1.0
            np.minimum(x[:, 0] / 5.0, OBS_HIGH, out=block[:, 1])
            np.minimum(x[:, 1] / 12.0, OBS_HIGH, out=block[:, 2])
            np.clip(1.0 - x[:, 2] / x[:, 3], 0.0, 1.0, out=block[:, 3])
            np.minimum(x[:, 4:6] / COUNT_SCALE, OBS_HIGH, out=block[:, 7:9])
            block[:, 9] = np.arange(n) / J
            obs_rows[:n, L:] = block
            if hot:
                obs_rows[tuple(np.array(hot).T)] = 1.0
            self._shape_of[:n] = self._row_shape
            for i in range(n):
                if self._w[i] or self._p[i]:
                    self._refresh_row(i)
                else:  # r, w, u stay 0; only the caps
                    can_w, can_p = self._max_w[i] > 0, self._max_p[i] > 0
                    self._cap_ok[i] = (can_w, can_p, can_w and can_p)
        self._beyond = max(0, len(self.jobs) - start - n) / J
        self._glob[3] = min(OBS_HIGH, self._beyond)
        self._ids = [run.job_id for run in self.rows]

    def _refresh_row(self, i: int) -> None:
        L = self._L
        wd, pd = self._needs[self._row_shape[i]]
        w, p = self._w[i], self._p[i]
        row = self._obs_rows[i]
        dom = 0.0
        for r, cap in self._cap_used:
            share = (wd[r] * w + pd[r] * p) / cap
            if share > dom:
                dom = share
        row[L + 4] = min(OBS_HIGH, SHARE_SCALE * dom)
        row[L + 5] = w / COUNT_SCALE
        row[L + 6] = p / COUNT_SCALE
        can_w, can_p = w < self._max_w[i], p < self._max_p[i]
        cap_ok = self._cap_ok[i]
        cap_ok[ADD_WORKER] = can_w
        cap_ok[ADD_PS] = can_p
        cap_ok[ADD_BOTH] = can_w and can_p

    # -- SlotBuilder -----------------------------------------------------------------------------

    def observation(self) -> npt.NDArray[np.float32]:
        return self.observation_view().copy()

    def observation_view(self) -> npt.NDArray[np.float32]:
        """The observation in place (no copy): valid until the next `apply`; do not change it."""
        free = self.free.totals
        glob = self._glob
        for r, cap in self._cap_used:  # an unused resource's entry stays 0
            glob[r] = min(1.0, max(0.0, free[r] / cap))
        return self._obs

    def _shape_flags(self) -> list[Flags]:
        """Per task shape: whether a worker, a PS, both fit now (cached until an action)."""
        flags = self._flags
        if flags is None:
            free = self.free
            flags = self._flags = []
            for wn, pn in self._needs:
                w = free.can_place(wn)
                p = free.can_place(pn)
                flags.append((w, p, w and p and free.can_place_both(wn, pn)))
        return flags

    def action_mask(self) -> npt.NDArray[np.bool_]:
        return self.mask_view().copy()

    def mask_view(self) -> npt.NDArray[np.bool_]:
        """`action_mask` in place (no copy): valid until the next `apply`; do not change it."""
        mask = self._mask
        if self.done:
            mask[:] = False
            return mask
        void = self._void
        mask[void] = True
        if not self.rows:
            return mask
        per = self._mask_rows  # (J, 3); absent rows: all False
        flags = self._shape_flags()
        i = self._mask_row
        if flags != self._mask_flags:
            ok = np.array(flags, dtype=bool).reshape(len(flags), 3)
            np.logical_and(self._cap_ok, ok[self._shape_of], out=per)
            self._mask_flags = flags
        elif i is not None:  # only row i's caps changed: the other rows' entries stand
            can_w, can_p, can_both = flags[self._row_shape[i]]
            caps = self._cap_ok[i]
            per[i] = (can_w and caps[0], can_p and caps[1], can_both and caps[2])
        self._mask_row = None
        if not self._trains and self.batch + 1 >= self._num_batches and per.any():
            mask[void] = False  # never end a slot with an idle cluster (no stalls)
        return mask

    def apply(self, action: int) -> bool:
        """Take ``action`` (must be legal); True once the last batch's void ends the slot."""
        if self.done:
            raise ValueError("the slot is already decided")
        self.actions += 1
        if action == self._void:
            if self.batch + 1 < self._num_batches:
                self.batch += 1
                self.changed_part = None
                self._load_batch()
                return False
            self.done = True
            return True
        i, kind = divmod(int(action), 3)
        if not (0 <= i < len(self.rows)):
            raise ValueError(f"action {action}: no job in row {i}")
        wn, pn = self._needs[self._row_shape[i]]
        add_w = kind != ADD_PS
        add_p = kind != ADD_WORKER
        if (add_w and self._w[i] >= self._max_w[i]) or (add_p and self._p[i] >= self._max_p[i]):
            raise ValueError(f"action {action}: job {self.rows[i].job_id} is at its cap")
        sw = self.free.place(wn) if add_w else -1
        if sw is None:
            raise ValueError(f"action {action}: no room for a worker")
        if add_p and self.free.place(pn) is None:
            self.free.undo(sw, wn)
            raise ValueError(f"action {action}: no room for a PS")
        self._flags = None
        self._mask_row = i
        job_id = self._ids[i]
        if job_id not in self._served:
            self._served.add(job_id)
            self.order.append(job_id)
        w = self._w[i] = self._w[i] + add_w
        p = self._p[i] = self._p[i] + add_p
        self.counts[job_id] = [w, p]
        if not self._trains:
            self._trains = _can_train(self._specs[job_id], w, p)
        self._refresh_row(i)
        self.changed_part = i
        return False

    def decision(self) -> Decision:
        """Jobs that can train with what they got this slot, in the order they were served."""
        counts: dict[int, tuple[int, int]] = {}
        for job_id in self.order:
            w, p = self.counts[job_id]
            if _can_train(self._specs[job_id], w, p):
                counts[job_id] = (w, p)
        return Decision.from_counts(counts)

    # -- helpers for the algorithm ---------------------------------------------------------------

    def row_counts(self) -> list[tuple[int, int]]:
        """(workers, PS) allocated so far this slot to each present row."""
        return [(int(self._w[i]), int(self._p[i])) for i in range(len(self.rows))]

    def teacher_action(self, targets: dict[int, tuple[int, int]], order: list[int]) -> int:
        """The next action toward a teacher's slot allocation (for supervised learning).

        Jobs are served in the teacher's order (its decision's order); each gets one worker
        and one PS together while it lacks both, then the missing workers, then the missing
        PS. Targets that do not fit (or exceed caps) are skipped; void when nothing is left.

        Args:
            targets: job id → (workers, PS) the teacher gave this slot.
            order: job ids in the teacher's order.
        """
        mask = self.action_mask()
        row_of = {run.job_id: i for i, run in enumerate(self.rows)}
        for job_id in order:
            i = row_of.get(job_id)
            if i is None:
                continue
            tw, tp = targets[job_id]
            lack_w, lack_p = self._w[i] < tw, self._p[i] < tp
            for kind, wanted in (
                (ADD_BOTH, lack_w and lack_p),
                (ADD_WORKER, lack_w),
                (ADD_PS, lack_p),
            ):
                if wanted and mask[3 * i + kind]:
                    return 3 * i + kind
        return self.shape.void

    def poor_state_fixes(self) -> list[int]:
        """Legal actions that fix a job in one of DL2's poor states (§4.3).

        A job with workers but no PS gets a PS; with PS but no worker, a worker; with more
        than 10 workers per PS, a PS; with more than 10 PS per worker, a worker.
        """
        mask = self.action_mask()
        fixes: list[int] = []
        for i in range(len(self.rows)):
            w, p = int(self._w[i]), int(self._p[i])
            if w == 0 and p == 0:
                continue
            if (w > 0 and p == 0) or (p > 0 and w / p > 10):
                a = 3 * i + ADD_PS
            elif (p > 0 and w == 0) or (w > 0 and p / w > 10):
                a = 3 * i + ADD_WORKER
            else:
                continue
            if mask[a]:
                fixes.append(a)
        return fixes


def _can_train(spec: JobSpec, workers: int, ps: int) -> bool:
    if workers < max(1, spec.min_workers):
        return False
    return not (spec.arch is Arch.PS and spec.max_ps > 0 and ps < 1)


class Dl2Encoder:
    """`SlotEncoder` for DL2: a fresh `Dl2Slot` per scheduling point."""

    def __init__(self, shape: Dl2Shape) -> None:
        self.shape = shape

    def start(self, view: ClusterView) -> Dl2Slot:
        return Dl2Slot(view, self.shape)
