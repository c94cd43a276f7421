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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dlsched.core import Arch, ClusterView, Decision, JobRun, JobSpec, Resources
from dlsched.papers.dl2 import slot_kernels as sk
from dlsched.papers.dl2.elastic import no_elastic_job
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


Need = tuple[float, float, float]
"""Resources of one task: (gpu, cpu, mem)."""


class Dl2Slot:
    """One scheduling point being decided action by action (a `SlotBuilder`).

    The per-action work (placing tasks, the acted row's entries, the mask) runs compiled in
    `dlsched.papers.dl2.slot_kernels`; this class builds each batch's arrays and keeps the
    bookkeeping by job id.

    Args:
        view: the cluster as the scheduler sees it.
        shape: J and the job types.
        statics: a cache of what rows take from job specs, by job id, kept from slot to slot
            (checked against the spec object; see `Dl2Encoder`).
    """

    def __init__(
        self, view: ClusterView, shape: Dl2Shape, statics: dict[int, Static] | None = None
    ) -> None:
        self.shape = shape
        self._statics = {} if statics is None else statics
        self.now_s = view.now_s
        cluster = view.cluster
        self.capacity = cluster.capacity_array.sum(axis=0)
        self.jobs: list[JobRun] = view.jobs()
        self._specs = {run.job_id: run.spec for run in self.jobs}
        # the slot is decided from scratch: everything the running jobs hold is given back
        given_back = FreeTracker(cluster, release=view.running).free
        self.free = np.array(given_back, dtype=np.float64).reshape(-1, 3)
        """Free (gpu, cpu, mem) per server in this slot's scratch copy (changed in place)."""
        self._totals_cap = np.empty((2, 3))
        self._totals_cap[0] = self.free.sum(axis=0)
        self._totals_cap[1] = self.capacity
        self.counts: dict[int, tuple[int, int]] = {}  # earlier batches' jobs: (workers, PS)
        self.order: list[int] = []  # earlier batches' job ids in the order they got a task
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
        self._rows = np.zeros((J, sk.ROW_FIELDS), dtype=np.int64)
        self._st = np.zeros(sk.ST_FIELDS, dtype=np.int64)
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
        statics, type_index = self._statics, self._type_index
        pair_ids: dict[tuple[Need, Need], int] = {}
        ints: list[tuple[int, int, int, int, int]] = []  # the table's MAX_W .. SHAPE
        now = self.now_s
        hot: list[tuple[int, int]] = []  # (row, job type) of the one-hot
        extra: list[tuple[float, float, float, float, int, int]] = []
        for i, run in enumerate(self.rows):
            spec = run.spec
            static = statics.get(run.job_id)
            if static is None or static[0] is not spec:
                static = statics[run.job_id] = _static(spec, type_index)
            _, t, (max_w, max_p, min_w, needs_ps), key, total = static
            k = pair_ids.get(key)
            if k is None:
                k = pair_ids[key] = len(pair_ids)
            ints.append((max_w, max_p, min_w, needs_ps, k))
            if t >= 0:
                hot.append((i, t))
            alloc = run.allocation
            left = run.remaining_work(now)
            extra.append(
                (
                    math.log1p(run.slots_run),
                    math.log1p(left),
                    left,
                    total,
                    alloc.num_workers,
                    alloc.num_ps,
                )
            )
        needs, pairs = _need_table(pair_ids)
        table = self._rows
        table[:] = 0
        table[:, sk.SERVED] = -1
        if n:
            table[:n, sk.MAX_W : sk.SHAPE + 1] = ints
        self._needs = np.array(needs, dtype=np.float64).reshape(-1, 3)
        self._pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        self._fits = np.zeros((len(needs), len(self.free)), dtype=np.int64)
        sk.count_fits(self.free, self._needs, self._fits)
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
        self._beyond = max(0, len(self.jobs) - start - n) / J
        self._glob[3] = min(OBS_HIGH, self._beyond)
        self._ids = [run.job_id for run in self.rows]
        st = self._st
        st[sk.N_ROWS] = n
        st[sk.LAST] = self.batch + 1 >= self._num_batches
        st[sk.SERVE] = 0
        sk.fill_globals(self._totals_cap, self._glob)
        self._fill_mask()
        self._kernel_args = (
            self.free, self._totals_cap, self._needs, self._fits, self._pairs,
            self._rows, self._st, self._obs_rows, self._glob, self._mask, self._L,
        )  # fmt: skip

    def _fill_mask(self) -> None:
        sk.fill_mask(
            self.free, self._needs, self._fits, self._pairs, self._rows, self._st, self._mask
        )

    def _close_batch(self) -> None:
        """Move this batch's counts and serve order to the by-job-id bookkeeping."""
        for job_id, (w, p) in zip(self._ids, self.row_counts(), strict=True):
            self.counts[job_id] = (w, p)
        self.order += self._served_ids()

    def _served_ids(self) -> list[int]:
        served = self._rows[: len(self._ids), sk.SERVED].tolist()
        return [
            self._ids[i]
            for i in sorted(range(len(served)), key=served.__getitem__)
            if served[i] >= 0
        ]

    # -- SlotBuilder -----------------------------------------------------------------------------

    def observation(self) -> npt.NDArray[np.float32]:
        return self._obs.copy()

    def observation_view(self) -> npt.NDArray[np.float32]:
        """The observation in place (no copy): valid until the next `apply`; do not change it."""
        return self._obs

    def action_mask(self) -> npt.NDArray[np.bool_]:
        return self._mask.copy()

    def mask_view(self) -> npt.NDArray[np.bool_]:
        """`action_mask` in place (no copy): valid until the next `apply`; do not change it."""
        return self._mask

    def action_label(self, action: int) -> str:
        """What ``action`` does, in words (the report's decision view)."""
        if action == self._void:
            return "void: end this batch" if self.batch + 1 < self._num_batches else "void: done"
        i, kind = divmod(int(action), 3)
        what = ("+1 worker", "+1 PS", "+1 worker +1 PS")[kind]
        return f"job {self._ids[i]}: {what}" if i < len(self._ids) else f"row {i}: {what}"

    def apply(self, action: int) -> bool:
        """Take ``action`` (must be legal); True once the last batch's void ends the slot."""
        if self.done:
            raise ValueError("the slot is already decided")
        self.actions += 1
        if action == self._void:
            if self.batch + 1 < self._num_batches:
                self._close_batch()
                self.batch += 1
                self.changed_part = None
                self._load_batch()
                return False
            self.done = True
            self._mask[:] = False
            return True
        i, kind = divmod(int(action), 3)
        if not (0 <= i < len(self.rows)):
            raise ValueError(f"action {action}: no job in row {i}")
        result = sk.apply_row(i, kind, *self._kernel_args)
        if result != sk.OK:
            why = {
                sk.AT_CAP: f"job {self._ids[i]} is at its cap",
                sk.NO_ROOM_W: "no room for a worker",
                sk.NO_ROOM_PS: "no room for a PS",
            }
            raise ValueError(f"action {action}: {why[result]}")
        self.changed_part = i
        return False

    def decision(self) -> Decision:
        """Jobs that can train with what they got this slot, in the order they were served."""
        current = dict(zip(self._ids, self.row_counts(), strict=True))
        chosen: dict[int, tuple[int, int]] = {}
        for job_id in self.order + self._served_ids():
            w, p = current[job_id] if job_id in current else self.counts[job_id]
            if _can_train(self._specs[job_id], w, p):
                chosen[job_id] = (w, p)
        return Decision.from_counts(chosen)

    # -- helpers for the algorithm ---------------------------------------------------------------

    def row_counts(self) -> list[tuple[int, int]]:
        """(workers, PS) allocated so far this slot to each present row."""
        return [(w, p) for w, p in self._rows[: len(self.rows), sk.W : sk.P + 1].tolist()]

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
        counts = self.row_counts()
        for job_id in order:
            i = row_of.get(job_id)
            if i is None:
                continue
            tw, tp = targets[job_id]
            lack_w, lack_p = counts[i][0] < tw, counts[i][1] < tp
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
        for i, (w, p) in enumerate(self.row_counts()):
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


Static = tuple[JobSpec, int, tuple[int, int, int, int], tuple[Need, Need], float]
"""What a row needs from a job's spec alone: the spec, its type's index (-1: unknown), caps
(max workers, max PS, workers to train, 1 if it cannot train without a PS), the worker's and
the PS's demand, total work (> 0)."""


def _static(spec: JobSpec, type_index: dict[str, int]) -> Static:
    ps = spec.arch is Arch.PS
    caps = (
        spec.max_workers,
        spec.max_ps if ps else 0,
        max(1, spec.min_workers),
        int(ps and spec.max_ps > 0),
    )
    key = (spec.worker_demand.as_tuple(), spec.ps_demand.as_tuple())
    return spec, type_index.get(spec.model, -1), caps, key, max(spec.total_work, _EPS)


def _can_train(spec: JobSpec, workers: int, ps: int) -> bool:
    if workers < max(1, spec.min_workers):
        return False
    return not (spec.arch is Arch.PS and spec.max_ps > 0 and ps < 1)


_STATICS_KEPT = 10_000
"""Jobs whose spec-derived row entries an encoder caches (cleared beyond)."""


class Dl2Encoder:
    """`SlotEncoder` for DL2: a fresh `Dl2Slot` per scheduling point."""

    def __init__(self, shape: Dl2Shape) -> None:
        self.shape = shape
        self._statics: dict[int, Static] = {}

    def cannot_run(self, jobs: Sequence[JobSpec], servers: Sequence[Resources]) -> str | None:
        """`no_elastic_job`: with no elastic job DL2 has nothing to decide; None otherwise."""
        return no_elastic_job(jobs)

    def start(self, view: ClusterView) -> Dl2Slot:
        if len(self._statics) > _STATICS_KEPT:
            self._statics.clear()
        return Dl2Slot(view, self.shape, self._statics)


def _need_table(
    pair_ids: dict[tuple[Need, Need], int],
) -> tuple[list[Need], list[tuple[int, int]]]:
    """The distinct task needs, and each (worker, PS) pair as indices into them; pair k is the
    k-th key of ``pair_ids`` (insertion order)."""
    needs: list[Need] = []
    need_ids: dict[Need, int] = {}
    pairs: list[tuple[int, int]] = []
    for key in pair_ids:
        pair = []
        for need in key:
            m = need_ids.get(need)
            if m is None:
                m = need_ids[need] = len(needs)
                needs.append(need)
            pair.append(m)
        pairs.append((pair[0], pair[1]))
    return needs, pairs
