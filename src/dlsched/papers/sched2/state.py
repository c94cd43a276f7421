"""SCED²'s state, actions and masks (§III-B, §III-C, Table I), shared by env and scheduler.

At a scheduling point the agent repeatedly picks one of the first ``J`` waiting jobs (arrival
order) or φ ("schedule nothing more now"); time is frozen while it picks. A picked job is placed
by packing (SCED² Fig. 2, `dlsched.schedulers.saf.pack_allocation`, the same rule as the engine's
``pack`` placement) on a scratch copy of the free resources, so the next observation already
shows it. `Sched2Builder.decision` returns the picked jobs with their exact placements for the
engine to apply. `Sched2Env` (training) and the ``sched2`` scheduler (deployment) both use this
builder, so what the policy sees cannot differ between the two.

**Window.** SCED² shows the agent "the first J jobs among all waiting jobs based on their
arrival time" (§III-B); that is ``order="arrival"``, the environment's default. With a long queue
this hides most short jobs from the agent: on held-out ``sched2`` traces at load 1.8 even
shortest-first *within* that window reaches only about 0.67 average effectiveness against 0.85
for SIF over the whole queue. ``order="shortest"`` fills the J slots with the waiting jobs of
shortest ideal time instead (a deviation from the paper, recorded in a policy's card), so that
the agent can match SIF and improve on it with locality-aware choices and holds.

**Observation** (flat float32, ``N·M + J·(k + 2) + 4`` values; times as ``log1p(t / 1 h)``):

* GPU state, ``N × M``: remaining time of the job on each GPU (0 = free), from the job's
  remaining work over its measured rate (as `dlsched.sim.metrics.gpu_remaining_matrix`); jobs
  picked this round count with their profiled time on the placement they got.
* for each of the first ``J`` waiting jobs: its ``k`` profiled execution times
  (`sched2_profile.JobProfile.times_s`), its GPU demand over ``M``, its waiting time; zeros for
  empty slots.
* statistics of the other waiting jobs: ``log1p(count)``, average demand over ``M``, average
  ideal execution time, average waiting time.

**Actions**: ``0..J-1`` pick that slot's job; ``J`` is φ. **Mask**: a slot is legal if it holds a
job whose GPUs (and CPU/memory) fit in what is free; φ is illegal only when the cluster would stay
idle although a job fits (nothing runs and nothing was picked this round): holding an empty
cluster never helps, because every job then gets its best placement, and it could stall a run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dlsched.core import Allocation, ClusterView, Decision, JobRun, JobSpec, Resources, Target
from dlsched.papers.sched2.profiling import K_PROFILES, Profiler
from dlsched.schedulers.common import tasks_that_fit
from dlsched.schedulers.saf import pack_allocation

J_SLOTS = 10
"""Waiting jobs the agent chooses among (SCED² §IV-A: the first 10)."""
WINDOW_ORDERS = ("arrival", "shortest")
"""How the J slots are filled (`Sched2Shape.order`); a card stores the index."""
TIME_SCALE_S = 3600.0
"""Times enter the observation as ``log1p(t / TIME_SCALE_S)``."""


def scale_time(t: float | npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``log1p(t / 1 h)``, the observation's time scale."""
    return np.log1p(np.asarray(t, dtype=np.float64) / TIME_SCALE_S)


@dataclass(frozen=True)
class Sched2Shape:
    """Sizes the network and spaces depend on.

    Attributes:
        servers: N, servers in the cluster.
        gpus_per_server: M, GPUs per server.
        slots: J, waiting jobs the agent sees.
        k: profiled placements per job.
        order: which waiting jobs fill the J slots: ``"arrival"`` (SCED² §III-B: the first J in
            arrival order) or ``"shortest"`` (the J with the shortest ideal time, then arrival;
            see the module docstring).
    """

    servers: int
    gpus_per_server: int
    slots: int = J_SLOTS
    k: int = K_PROFILES
    order: str = "arrival"

    def __post_init__(self) -> None:
        if self.order not in WINDOW_ORDERS:
            raise ValueError(
                f"sched2 window order must be one of {WINDOW_ORDERS}, got {self.order!r}"
            )

    @property
    def job_features(self) -> int:
        return self.k + 2

    @property
    def obs_dim(self) -> int:
        return self.servers * self.gpus_per_server + self.slots * self.job_features + 4

    @property
    def num_actions(self) -> int:
        return self.slots + 1

    def as_card(self) -> dict[str, int]:
        """Shape fields for a checkpoint card."""
        return {
            "N": self.servers,
            "M": self.gpus_per_server,
            "J": self.slots,
            "k": self.k,
            "order": WINDOW_ORDERS.index(self.order),
            "obs_dim": self.obs_dim,
            "num_actions": self.num_actions,
        }


def cluster_shape(view: ClusterView) -> tuple[int, int]:
    """(servers, GPUs per server) of the view's cluster; ValueError if servers differ in GPUs."""
    gpus = view.cluster.capacity_array[:, 0]
    if gpus.size == 0 or float(gpus.min()) != float(gpus.max()):
        raise ValueError("sched2 needs servers with equal GPU counts")
    return int(gpus.size), int(gpus[0])


@dataclass
class Picked:
    """A job picked this round: its run, placement and profiled time on it (seconds)."""

    run: JobRun
    placement: Allocation
    estimated_s: float


def remaining_matrix(view: ClusterView, gpus_per_server: int) -> npt.NDArray[np.float64]:
    """``(N, M)`` remaining seconds of the job on each GPU, 0 when free.

    The same values as `dlsched.sim.metrics.gpu_remaining_matrix` (remaining work over the
    measured rate plus any rescale pause, 1e9 s when the rate is 0), built with plain lists
    because it runs at every scheduling point.
    """
    rows: list[list[float]] = [[] for _ in range(view.cluster.num_servers)]
    now = view.now_s
    for run in view.running:
        per_task = run.spec.worker_demand.gpu
        if per_task <= 0:
            continue
        left = min(run.remaining_work(now) / run.rate, 1e9) if run.rate > 0 else 1e9
        left += max(0.0, run.paused_until_s - now)
        for server, n in run.allocation.workers:
            rows[server].extend([left] * round(n * per_task))
    matrix = np.zeros((len(rows), gpus_per_server), dtype=np.float64)
    for i, row in enumerate(rows):
        if row:
            matrix[i, : len(row)] = row[:gpus_per_server]
    return matrix


HOLD_MASKS = ("none", "local")
"""Where φ (hold) is legal: ``none`` whenever something runs or was picked (SCED²), ``local``
also not while a window job fits at its best locality (`Sched2Builder.action_mask`)."""


def check_hold_mask(hold_mask: str, where: str) -> None:
    """ValueError naming ``where`` unless ``hold_mask`` is one of `HOLD_MASKS`."""
    if hold_mask not in HOLD_MASKS:
        raise ValueError(f"{where}: hold_mask must be one of {HOLD_MASKS}, got {hold_mask!r}")


class Sched2Builder:
    """One scheduling point being decided action by action (see the module docstring)."""

    def __init__(
        self, view: ClusterView, shape: Sched2Shape, profiler: Profiler, hold_mask: str = "none"
    ) -> None:
        self.view = view
        self.hold_mask = hold_mask
        self.shape = shape
        self.profiler = profiler
        self.now_s = view.now_s
        self.free: list[list[float]] = view.cluster.free_array.tolist()
        self.gpu_time_s = remaining_matrix(view, shape.gpus_per_server)
        self.waiting: list[JobRun] = list(view.pending)
        if shape.order == "shortest":  # pending jobs make no progress: remaining work is fixed
            self.waiting.sort(
                key=lambda r: (r.spec.total_work - r.progress_s, r.spec.submit_time_s)
            )
        specs = [r.spec for r in self.waiting]
        self._totals = [
            float(len(specs)),
            float(sum(s.num_gpus for s in specs)),
            float(sum(s.total_work for s in specs)),
            float(sum(s.submit_time_s for s in specs)),
        ]
        self._rows: dict[int, npt.NDArray[np.float64]] = {}
        self.picked: list[Picked] = []
        self.nothing_running = not view.running
        self._free_gpus = [row[0] for row in self.free]

    # -- what the policy sees -------------------------------------------------------------

    def window(self) -> list[JobRun]:
        """The first J waiting jobs (arrival order, or shortest first; `Sched2Shape.order`)."""
        return self.waiting[: self.shape.slots]

    def observation(self) -> npt.NDArray[np.float32]:
        shape = self.shape
        m = shape.gpus_per_server
        gpu = scale_time(self.gpu_time_s[:, :m]).reshape(-1)
        jobs = np.zeros((shape.slots, shape.job_features), dtype=np.float64)
        count, gpus, work, submit = self._totals
        for i, run in enumerate(self.window()):
            spec = run.spec
            row = self._rows.get(spec.job_id)
            if row is None:
                row = self._rows[spec.job_id] = scale_time(
                    np.asarray(self.profiler.profile(spec).times_s)
                )
            jobs[i, : shape.k] = row
            jobs[i, shape.k] = spec.num_gpus / m
            jobs[i, shape.k + 1] = math.log1p((self.now_s - spec.submit_time_s) / TIME_SCALE_S)
            count, gpus, work, submit = (
                count - 1,
                gpus - spec.num_gpus,
                work - spec.total_work,
                submit - spec.submit_time_s,
            )
        stats = np.zeros(4, dtype=np.float64)
        if count >= 0.5:  # the other waiting jobs, beyond the window
            stats[0] = math.log1p(count)
            stats[1] = gpus / count / m
            stats[2] = math.log1p(max(work / count, 0.0) / TIME_SCALE_S)
            stats[3] = math.log1p(max(self.now_s - submit / count, 0.0) / TIME_SCALE_S)
        return np.concatenate([gpu, jobs.reshape(-1), stats]).astype(np.float32)

    def _fits(self, run: JobRun) -> bool:
        need = run.spec.worker_demand.as_tuple()
        g = run.spec.num_workers
        if sum(self._free_gpus) + 1e-9 < g * need[0]:
            return False
        room = 0
        for row in self.free:
            room += tasks_that_fit(row, need)
            if room >= g:
                return True
        return False

    def action_mask(self) -> npt.NDArray[np.bool_]:
        mask = np.zeros(self.shape.num_actions, dtype=bool)
        for i, run in enumerate(self.window()):
            mask[i] = self._fits(run)
        idle = self.nothing_running and not self.picked
        mask[-1] = not (idle and mask[:-1].any())
        if self.hold_mask == "local" and mask[-1]:
            window = self.window()
            mask[-1] = not any(self._fits_at_best(window[i]) for i in np.flatnonzero(mask[:-1]))
        return mask

    def _fits_at_best(self, run: JobRun) -> bool:
        """Packing would place ``run`` on its fewest possible servers, ``ceil(GPUs / M)``: the
        most-free servers, largest first, hold its GPUs (`arrays.hold_blocked`, one job)."""
        m, gpus = self.shape.gpus_per_server, run.spec.num_gpus
        best = max(1, -(-gpus // m))
        return sum(sorted(self._free_gpus, reverse=True)[:best]) >= gpus

    # -- acting ------------------------------------------------------------------------------

    def action_label(self, action: int) -> str:
        """What ``action`` does, in words (the report's decision view)."""
        window = self.window()
        if action >= self.shape.slots or action >= len(window):
            return "φ: end the round"
        return f"slot {action}: start job {window[action].job_id}"

    def apply(self, action: int) -> bool:
        """Pick slot ``action`` (or φ = J); True when the round is over."""
        if action >= self.shape.slots:
            return True
        window = self.window()
        if action < 0 or action >= len(window):
            raise ValueError(f"sched2: action {action} names no waiting job")
        run = window[action]
        alloc = pack_allocation(self.free, run.spec, run.spec.num_workers, 0)
        if alloc is None:
            raise ValueError(f"sched2: job {run.job_id} does not fit (illegal action {action})")
        self._free_gpus = [row[0] for row in self.free]
        prof = self.profiler.profile(run.spec)
        estimate = prof.estimate_time_s(alloc.num_servers, run.remaining_work(self.now_s))
        for server, n in alloc.workers:
            row = self.gpu_time_s[server]
            free_slots = np.flatnonzero(row == 0)[:n]
            row[free_slots] = estimate
        self.picked.append(Picked(run, alloc, estimate))
        del self.waiting[action]
        spec = run.spec
        totals = self._totals
        totals[0] -= 1
        totals[1] -= spec.num_gpus
        totals[2] -= spec.total_work
        totals[3] -= spec.submit_time_s
        return not self.action_mask()[:-1].any()

    def decision(self) -> Decision:
        return Decision(
            {p.run.job_id: Target(p.placement.num_workers, 0, p.placement) for p in self.picked}
        )


class Sched2Encoder:
    """`SlotEncoder` for SCED²: checks the cluster's shape and starts a `Sched2Builder`.

    Args:
        shape: the sizes the policy was made for.
        profiler: the profiling tool (default: a `Profiler` for ``shape.gpus_per_server``).
        where: how to name the policy in shape errors.
        hold_mask: ``"none"`` (SCED²) or ``"local"``: φ is illegal while a window job fits at
            its best locality (``train sched2 --paper --hold-mask local``, a deviation).
    """

    def __init__(
        self,
        shape: Sched2Shape,
        profiler: Profiler | None = None,
        where: str = "sched2",
        hold_mask: str = "none",
    ) -> None:
        check_hold_mask(hold_mask, where)
        self.shape = shape
        self.hold_mask = hold_mask
        self.profiler = profiler or Profiler(shape.gpus_per_server, k=shape.k)
        self.where = where

    def cannot_run(self, jobs: Sequence[JobSpec], servers: Sequence[Resources]) -> str | None:
        """`Profiler.cannot_profile`'s reason, where some job cannot be profiled."""
        return self.profiler.cannot_profile(jobs)

    def start(self, view: ClusterView) -> Sched2Builder:
        servers, gpus = cluster_shape(view)
        if (servers, gpus) != (self.shape.servers, self.shape.gpus_per_server):
            raise ValueError(
                f"{self.where}: made for {self.shape.servers} servers x "
                f"{self.shape.gpus_per_server} GPUs, this cluster has {servers} x {gpus}; "
                f"pass --servers {self.shape.servers} or train a policy for it with "
                "`dlsched train sched2 --workload ... --out DIR`"
            )
        return Sched2Builder(view, self.shape, self.profiler, self.hold_mask)
