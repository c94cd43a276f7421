"""The compiled core of Gavel's round mechanism (`dlsched.sim.gavel_core`) behind a
`Simulator`: which runs it replays, its state between segments, the policy's allocation at each
reset (the policy's own code, through its ``round_allocation``), and the `Result` (the same
per-job records, totals and timeline as `Simulator.run`)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np

from dlsched.core import JobSpec
from dlsched.sim import gavel_core as core
from dlsched.sim.las_core_run import arrays, compiles, result_of, unsupported_setting
from dlsched.sim.result import Result
from dlsched.sim.simulator import Simulator

AUTO_MIN_JOBS = 2_000
"""``core="auto"`` replays Gavel runs of at least this many jobs in the core once it is compiled
(in this process or numba's cache): on the first 2,000 jobs of ``philly:6214e9`` the simulator
takes 2.6 s CPU for ``gavel-las``, 2.6 s for ``gavel-ftf`` and 1.7 s for ``gavel-makespan``, the
core 0.8, 1.4 and 1.7 s, loading included (benchmarks/RESULTS.md, issue 31)."""
AUTO_MIN_JOBS_COLD = 16_000
"""The same where the next run would compile it (~11 s): on 8,000 jobs the simulator takes
13 s for ``gavel-las`` and ``gavel-ftf`` and 11 s for ``gavel-makespan``, the core 1.8, 9.6 and
8.1 s (FTF and makespan are mostly their allocations, which the core leaves to the policy)."""


def policy(sim: Simulator) -> str | None:
    """The policy's name for the core (``round_core``, set by the six LP policies of
    `papers.gavel`: the simulator is below the papers), where its class itself sets one."""
    name = vars(type(sim.scheduler)).get("round_core")
    return name if isinstance(name, str) else None


def label(sim: Simulator) -> str:
    """The summary's ``core`` where the core replayed ``sim``: ``compiled Gavel LAS`` and the
    like."""
    return f"compiled {policy(sim) or 'Gavel'}"


def unsupported(sim: Simulator) -> str | None:
    """Why the core cannot replay ``sim`` (None: it can; `dlsched.sim.gavel_core`'s list)."""
    if policy(sim) is None:
        return "the scheduler is not one of Gavel's LP policies (no round_core)"
    if getattr(sim.scheduler, "skip_zero_priority", False):
        return "the policy skips jobs of zero priority"
    types = sim.cluster.server_types
    if types is not None and len(set(types)) > 1:
        return "a cluster of several GPU types"
    return unsupported_setting(sim)


def worth_it(sim: Simulator) -> bool:
    """``simulate(core="auto")``'s choice (`las_core_run.worth_it`'s rule with this core's
    thresholds, `AUTO_MIN_JOBS` and `AUTO_MIN_JOBS_COLD`)."""
    n = len(sim.specs)
    if n < AUTO_MIN_JOBS or unsupported(sim) is not None:
        return False
    return n >= AUTO_MIN_JOBS_COLD or not compiles(core.compiled_replay())


class _Run:
    """What a policy's allocation reads of an active job in the core: its id, spec and the
    work it has left (`JobRun.remaining_work`, the same operations on the core's state)."""

    __slots__ = ("_state", "job_id", "spec")

    def __init__(self, spec: JobSpec, state: tuple[float, float, float, float, float]) -> None:
        self.job_id, self.spec, self._state = spec.job_id, spec, state

    def work_done(self, now_s: float) -> float:
        progress, since, paused, rate, total = self._state
        start = max(since, paused)
        if rate <= 0.0 or now_s <= start:
            return progress
        return min(total, progress + rate * (now_s - start))

    def remaining_work(self, now_s: float) -> float:
        return max(0.0, self.spec.total_work - self.work_done(now_s))


class _Runs(Sequence[_Run]):
    """The active jobs (job indices ``idx``, arrival order) as a policy reads them, built once
    and only when read (LAS reads only how many); their ids and submit times as arrays
    (``ids``, ``submit_times``; from every job's, ``jid`` and ``submit``, where given)."""

    def __init__(
        self,
        specs: Sequence[JobSpec],
        idx: np.ndarray,
        jf: np.ndarray,
        total: np.ndarray,
        jid: np.ndarray | None = None,
        submit: np.ndarray | None = None,
    ) -> None:
        self._specs, self._idx, self._jf, self._total = specs, idx, jf, total
        self._all: list[_Run] | None = None
        if jid is not None and submit is not None:
            self.ids, self.submit_times = jid[idx], submit[idx]

    def remaining_works(self, now_s: float) -> np.ndarray:
        """Each job's `_Run.remaining_work` at ``now_s`` (the same floats: each comparison and
        operation of it made element-wise, ``total`` each spec's ``total_work``), without a
        Python object per job."""
        idx, jf = self._idx, self._jf
        progress, since, paused, rate = (
            jf[r, idx] for r in (core.PROGRESS, core.PTIME, core.PAUSED, core.RATE)
        )
        total = self._total[idx]
        start = np.where(paused > since, paused, since)  # max(since, paused)
        still = (rate <= 0.0) | (now_s <= start)
        ahead = progress + rate * (now_s - start)
        done = np.where(still, progress, np.where(ahead < total, ahead, total))
        left = total - done
        return np.where(left > 0.0, left, 0.0)  # max(0.0, left)

    def __len__(self) -> int:
        return len(self._idx)

    def _runs(self) -> list[_Run]:
        if self._all is None:
            idx, jf, specs = self._idx, self._jf, self._specs
            rows = (core.PROGRESS, core.PTIME, core.PAUSED, core.RATE)
            columns = [jf[r, idx].tolist() for r in rows]
            self._all = [
                _Run(specs[i], (p, t, q, r, specs[i].total_work))
                for i, p, t, q, r in zip(idx.tolist(), *columns, strict=True)
            ]
        return self._all

    def __iter__(self) -> Iterator[_Run]:
        return iter(self._runs())

    @overload
    def __getitem__(self, i: int) -> _Run: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[_Run]: ...

    def __getitem__(self, i: int | slice) -> _Run | Sequence[_Run]:
        return self._runs()[i]


def _estimated_rates(sim: Simulator) -> np.ndarray:
    """Each job's estimated rate on the one type (`books.Books._rates_row`: 1.0 without
    estimates, 0.0 where they name no rate for the type)."""
    estimates: Any = getattr(sim.model, "estimates", None)
    if estimates is None:
        return np.ones(len(sim.specs))
    types = sim.cluster.server_types
    t = types[0] if types else "gpu"
    return np.array([estimates.of(s).get(t, 0.0) for s in sim.specs], dtype=np.float64)


def run(sim: Simulator, compiled: bool = True) -> Result | None:
    """``sim.run()``'s result by the core (compiled, or its plain-Python reference), or None
    where the run leaves what the core replays (the stall rule fired: run ``sim`` itself)."""
    wall0 = time.perf_counter()
    kernel: Any = core.compiled_replay() if compiled else core.replay
    table: Any = arrays(sim)
    submit, jid, nw, dem, total, resume, speed, cap, _, step, gpus, horizon, interval, on_ev = table
    specs, n, S = sim.specs, len(sim.specs), sim.cluster.num_servers
    scheduler: Any = sim.scheduler
    scheduler.reset()  # as `Simulator._start`
    by_type = sim.cluster.gpus_by_type()
    room = int(next(iter(by_type.values()))) if by_type else int(sim.cluster.total.gpu)
    round_s = sim.config.interval_s or 360.0
    grate = _estimated_rates(sim)
    scale = np.maximum(nw, 1).astype(np.int64)
    jf = np.zeros((12, n))
    jf[core.FIRST] = jf[core.FINISH] = np.nan
    ji = np.zeros((4, n), dtype=np.int64)
    holding = np.zeros(n, dtype=np.bool_)
    alloc = np.zeros((n, S), dtype=np.int64)
    used = np.zeros((S, 3))
    heap: tuple[np.ndarray, ...] = (np.empty((1024, 2)), np.empty((1024, 2), dtype=np.int64))
    ngpu = int(np.count_nonzero(gpus > 0))
    samples = np.empty((64, 5 + ngpu))
    fs = np.zeros(9)
    fs[core.LAST_RESET] = fs[core.LAST_POINT] = np.nan
    fs[core.TICK] = (
        math.ceil(submit[0] / interval - 1e-12) * interval if interval > 0 and n else math.inf
    )
    iv = np.zeros(16, dtype=np.int64)
    fixed = (submit, jid, nw, dem, total, resume, speed, cap, step, gpus, horizon, interval)
    policy = (grate, scale, room, float(round_s / 2), float(scheduler.reset_every_s))
    while True:
        status, *heap_, samples = kernel(
            *fixed, on_ev, *policy, jf, ji, holding, alloc, used, *heap, samples, fs, iv
        )
        heap = tuple(heap_)
        if status != core.NEED_X:
            break
        idx = ji[core.ACT, : iv[core.NACT]].copy()
        runs = _Runs(specs, idx, jf, total, jid, submit)
        x = scheduler.round_allocation(
            sim.cluster, grate[idx][:, None], scale[idx].astype(float), runs, fs[core.NOW]
        )
        jf[core.X, idx] = np.asarray(x, dtype=np.float64)[:, 0]
    out = (
        status, jf[core.FIRST], jf[core.FINISH], jf[core.HELD], ji[core.ORDER],
        int(iv[core.DECISIONS]), float(fs[core.NOW]), float(fs[core.BUSY_GPU]),
        float(fs[core.BUSY_CPU]), int(iv[core.POPS]), samples, int(iv[core.NS]),
    )  # fmt: skip
    return result_of(sim, out, wall0)
