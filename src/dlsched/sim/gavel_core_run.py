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
from dlsched.models.typed import TypedSpeed
from dlsched.sim import gavel_core as core
from dlsched.sim.las_core_run import arrays, compiles, result_of, speed_table, unsupported_setting
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
AUTO_MIN_JOBS_TYPES = 500
"""`AUTO_MIN_JOBS` on a cluster of several GPU types, where the simulator's rounds cost more
(jobs move between types): ``gavel`` jobs of ``gavel-las-het`` on 36:36:36 GPUs, the simulator
0.30 / 0.64 / 2.77 s CPU for 100 / 300 / 1,000 jobs, the core 0.68 / 0.80 / 1.31 s, loading
included (load 4.6; benchmarks/RESULTS.md, issue 33)."""
AUTO_MIN_JOBS_COLD_TYPES = 6_000
"""`AUTO_MIN_JOBS_COLD` on several types: compiling took 15 s (load 4.7), the simulator takes
~17-23 s CPU on 4,000 of those jobs (the core ~6 s)."""


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
    model = sim.model
    if isinstance(model, TypedSpeed) and model.server_types != tuple(_server_types(sim)):
        return "a speed model of other servers' types"
    unnamed = sum(t not in _GAVEL_ORDER for t in _types(sim))
    if getattr(sim.scheduler, "aware", True) and len(_types(sim)) > 1 and unnamed > 1:
        return "an aware policy on several GPU types Gavel's order does not name"
    return unsupported_setting(sim, typed=True)


_GAVEL_ORDER = ("v100", "p100", "k80")
"""`papers.gavel.rounds.AWARE_TYPE_ORDER` (the papers are above the simulator): an aware
policy orders the types it does not name by the jobs' mean estimated rates, which the core
does not replay where there are several (`GavelRounds.round_type_order` says None)."""


def _server_types(sim: Simulator) -> tuple[str, ...]:
    """Each server's GPU type (the round mechanism's ``"gpu"`` where the cluster names none)."""
    return sim.cluster.server_types or ("gpu",) * sim.cluster.num_servers


def _types(sim: Simulator) -> tuple[str, ...]:
    """The cluster's GPU types in the round mechanism's column order (first seen)."""
    return tuple(dict.fromkeys(_server_types(sim)))


def worth_it(sim: Simulator) -> bool:
    """``simulate(core="auto")``'s choice (`las_core_run.worth_it`'s rule with this core's
    thresholds, `AUTO_MIN_JOBS` and `AUTO_MIN_JOBS_COLD`, or on several GPU types
    `AUTO_MIN_JOBS_TYPES` and `AUTO_MIN_JOBS_COLD_TYPES`)."""
    n = len(sim.specs)
    several = len(_types(sim)) > 1
    warm = AUTO_MIN_JOBS_TYPES if several else AUTO_MIN_JOBS
    if n < warm or unsupported(sim) is not None:
        return False
    cold = AUTO_MIN_JOBS_COLD_TYPES if several else AUTO_MIN_JOBS_COLD
    return n >= cold or not compiles(core.compiled_replay())


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


def _rates(sim: Simulator, types: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``(types, jobs)``: each job's estimated rate on each type (`books.Books._rates_row`: 1.0
    without estimates, 0.0 where they name no rate for the type) and its true rate there
    (`TypedSpeed.rate`; 1.0 under another model)."""
    specs, model = sim.specs, sim.model
    estimates: Any = getattr(model, "estimates", None)
    grate = np.ones((len(types), len(specs)))
    trate = np.ones((len(types), len(specs)))
    for i, spec in enumerate(specs):
        if estimates is not None:
            row = estimates.of(spec)
            grate[:, i] = [row.get(t, 0.0) for t in types]
        if isinstance(model, TypedSpeed):
            trate[:, i] = [model.rate(spec, t) for t in types]
    return grate, trate


def _orders(scheduler: Any, types: tuple[str, ...], rounds: int) -> np.ndarray:
    """The next ``rounds`` rounds' orders of the types (columns), drawn from the policy's own
    generator (`GavelRounds.round_type_order`)."""
    column = {t: k for k, t in enumerate(types)}
    rows = [[column[t] for t in scheduler.round_type_order(types)[0]] for _ in range(rounds)]
    return np.array(rows, dtype=np.int64).reshape(rounds, len(types))


# Not split further: the segments' loop hands the kernel's state back and forth with the
# policy (its allocations and type orders) on the arrays set up just before: over 80 lines.
def run(sim: Simulator, compiled: bool = True) -> Result | None:
    """``sim.run()``'s result by the core (compiled, or its plain-Python reference), or None
    where the run leaves what the core replays (the stall rule fired: run ``sim`` itself)."""
    wall0 = time.perf_counter()
    kernel: Any = core.compiled_replay() if compiled else core.replay
    table: Any = arrays(sim)
    submit, jid, nw, dem, total, resume, _, cap, _, step, gpus, horizon, interval, on_ev = table
    specs, n, S = sim.specs, len(sim.specs), sim.cluster.num_servers
    model: Any = sim.model
    speed = speed_table(sim, model.inner if isinstance(model, TypedSpeed) else model)
    rescale = np.array([sim.config.rescale.rescale_s(s.model) for s in specs], dtype=np.float64)
    scheduler: Any = sim.scheduler
    scheduler.reset()  # as `Simulator._start`
    types = _types(sim)
    T = len(types)
    stype = np.array([types.index(t) for t in _server_types(sim)], dtype=np.int64)
    by_type = sim.cluster.gpus_by_type() or {"gpu": int(sim.cluster.total.gpu)}
    rooms = np.array([int(by_type.get(t, 0)) for t in types], dtype=np.int64)
    first_order, fixed_order = scheduler.round_type_order(types)
    torder = np.array([types.index(t) for t in first_order], dtype=np.int64)
    perms = np.zeros((0, T), dtype=np.int64)
    round_s = sim.config.interval_s or 360.0
    grate, trate = _rates(sim, types)
    scale = np.maximum(nw, 1).astype(np.int64)
    jf = np.zeros((8, n))
    jf[core.FIRST] = jf[core.FINISH] = np.nan
    tb = np.zeros((4, T, n))
    wt = np.zeros(T)
    ji = np.zeros((6, n), dtype=np.int64)
    holding = np.zeros(n, dtype=np.bool_)
    alloc = np.zeros((n, S), dtype=np.int64)
    used = np.zeros((S, 3))
    heap: tuple[np.ndarray, ...] = (np.empty((1024, 2)), np.empty((1024, 2), dtype=np.int64))
    ngpu = int(np.count_nonzero(gpus > 0))
    samples = np.empty((64, 5 + ngpu))
    fs = np.zeros(8)
    fs[core.LAST_RESET] = fs[core.LAST_POINT] = np.nan
    fs[core.TICK] = (
        math.ceil(submit[0] / interval - 1e-12) * interval if interval > 0 and n else math.inf
    )
    iv = np.zeros(19, dtype=np.int64)
    iv[core.MAX_IDLE] = sim.config.max_idle_retries
    if not fixed_order:  # a shuffle a round: the first one drawn is the first round's
        perms = np.concatenate([torder[None, :], _orders(scheduler, types, 255)])
    fixed = (submit, jid, nw, dem, total, resume, rescale, speed, cap, step, gpus, horizon)
    policy = (interval, on_ev, grate, trate, scale, rooms, stype, torder)
    books = (float(round_s / 2), float(scheduler.reset_every_s), jf, tb, wt, ji, holding)
    oi = np.zeros((7, T, n), dtype=np.int64)
    oi[core.OPOS] = -1
    kept = (oi, np.zeros((T, 6), dtype=np.int64))
    while True:
        status, *heap_, samples = kernel(
            *fixed, *policy, perms, *books, alloc, used, *heap, samples, fs, iv, *kept
        )
        heap = tuple(heap_)
        if status == core.NEED_ORDER:
            perms = _orders(scheduler, types, 4 * len(perms))
            iv[core.PERM] = 0
            continue
        if status != core.NEED_X:
            break
        idx = ji[core.ACT, : iv[core.NACT]].copy()
        runs = _Runs(specs, idx, jf, total, jid, submit)
        rates = np.ascontiguousarray(grate[:, idx].T)
        x = scheduler.round_allocation(
            sim.cluster, rates, scale[idx].astype(float), runs, fs[core.NOW]
        )
        tb[core.X][:, idx] = np.asarray(x, dtype=np.float64).T
    out = (
        status, jf[core.FIRST], jf[core.FINISH], jf[core.HELD], ji[core.ORDER],
        int(iv[core.DECISIONS]), float(fs[core.NOW]), float(fs[core.BUSY_GPU]),
        float(fs[core.BUSY_CPU]), int(iv[core.POPS]), samples, int(iv[core.NS]),
    )  # fmt: skip
    return result_of(sim, out, wall0, ji[core.RESCALES])
