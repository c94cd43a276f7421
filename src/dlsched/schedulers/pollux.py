"""Pollux (OSDI'21) and its Optimus+Oracle comparison point, for the ``pollux`` workload.

``pollux`` — every 60 s round (Pollux §4.2):

1. *Job agents* (§4.1): each running job measures its step and sync time at its current
   placement and local batch, and its gradient statistics at its current batch and epoch (the
   simulated job reads them from its application's profile, as the job's own measurement would
   give them; the scheduler never reads a profile otherwise) and refits its goodput model
   (`pollux_model.JobGoodputModel`).
2. *Speed-up* of job j at r GPUs on n nodes: its best goodput over batch sizes there, divided
   by its goodput at its fair share (``ceil(GPUs / jobs)`` GPUs on one node); before the job has
   measured anything, ``r / fair share``. A job may grow to twice the most GPUs it has run on
   (at most 64 and ``max_bsz / min_local_bsz``; ncf: 1), as Pollux's agents report.
3. *Allocation*: maximise the generalised (power) mean with Pollux's fairness exponent p = −1
   of the scaled speed-ups ``speedup · (1 / GPUs) · nodes + 10⁻³`` (a node's worth of GPUs
   counts 1), where a job whose allocation changes has its speed-up multiplied by Pollux's
   restart penalty ``max(age − 30·restarts, 0) / (age + 30)``. With p = −1 the mean is
   ``J / Σ_j 1/x_j``: separable, so instead of Pollux's genetic search we solve it exactly over
   GPU counts by dynamic programming (jobs × GPUs × candidate counts); counts are 1, 2, 4 or
   whole 4-GPU nodes, which always pack.
4. *Placement* (§4.2's rules): as few nodes as possible, at most one distributed job per node
   (a job above one node takes whole nodes), jobs whose count did not change stay where they are.

``optimus-oracle-allreduce`` — the artifact's Optimus+Oracle for GPU jobs: every job (arrival
order) gets one GPU while any is free, then GPUs go one at a time to the job whose remaining
time drops most (true noise-free speeds at packed placements: an oracle); the engine places.

Sources: Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep
Learning", OSDI 2021, §3–4; its artifact's ``pollux.py``/``optimus.py`` (read, not copied).
"""

from __future__ import annotations

import heapq
import math
from typing import ClassVar

import numpy as np

from dlsched.core import Allocation, Arch, ClusterView, Decision, JobRun, Target
from dlsched.models.goodput import (
    GPUS_PER_NODE,
    normalise_placement,
    packed_placement,
    parse_model,
    placement_of,
    profile,
)
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.pollux_model import JobGoodputModel
from dlsched.schedulers.registry import register

RESTART_DELAY_S = 30.0
FAIRNESS_P = -1.0
_FLOOR = 1e-3


def candidate_counts(max_replicas: int, node_gpus: int = GPUS_PER_NODE) -> list[int]:
    """GPU counts a job may be given: 1, 2, 4 (within a node), then whole nodes."""
    small = [r for r in (1, 2, 4) if r <= min(max_replicas, node_gpus)]
    whole = list(range(2 * node_gpus, max_replicas + 1, node_gpus))
    return [0, *small, *whole]


def best_split(costs: list[dict[int, float]], gpus: int) -> list[int]:
    """GPU counts minimising ``Σ_j costs[j][r_j]`` with ``Σ r_j ≤ gpus`` (exact DP).

    Ties go to the count listed first in ``costs[j]``; NaN costs are never chosen."""
    inf = math.inf
    dp = np.full(gpus + 1, inf)
    dp[0] = 0.0
    total = np.arange(gpus + 1)
    choice: list[np.ndarray] = []
    for cost in costs:
        counts = np.array([r for r in cost if r <= gpus], dtype=np.int64)
        if not counts.size:
            dp = np.full(gpus + 1, inf)
            choice.append(np.zeros_like(total))
            continue
        values = np.array([cost[r] for r in counts.tolist()], dtype=float)
        before = total[None, :] - counts[:, None]  # (counts, gpus + 1): GPUs left to the others
        ways = np.where(before >= 0, dp[np.maximum(before, 0)] + values[:, None], inf)
        ways[np.isnan(ways)] = inf
        best = np.argmin(ways, axis=0)  # the first of equal minima, as a strict "<" scan keeps
        dp = ways[best, total]
        choice.append(np.where(dp < inf, counts[best], 0))
    g = int(np.argmin(dp))
    out = [0] * len(costs)
    for j in range(len(costs) - 1, -1, -1):
        r = int(choice[j][g])
        out[j] = r
        g -= r
    return out


def _place(
    counts: dict[int, int], keep: dict[int, Allocation], free: list[int]
) -> dict[int, Allocation] | None:
    """Place ``counts`` into ``free`` GPUs per node (modified); None if one does not fit."""
    out: dict[int, Allocation] = {}
    for job, r in sorted(counts.items(), key=lambda kv: -kv[1]):
        if job in keep:
            continue
        if r > GPUS_PER_NODE:
            nodes = [i for i, f in enumerate(free) if f == GPUS_PER_NODE][: r // GPUS_PER_NODE]
            if len(nodes) * GPUS_PER_NODE < r:
                return None
            for i in nodes:
                free[i] = 0
            out[job] = Allocation.of((i, GPUS_PER_NODE) for i in nodes)
        else:
            fits = [i for i, f in enumerate(free) if f >= r]
            if not fits:
                return None
            i = min(fits, key=lambda k: (free[k], k))  # best fit
            free[i] -= r
            out[job] = Allocation.of([(i, r)])
    return out


class Pollux(BaseScheduler):
    """Pollux's co-adaptive scheduler (module docstring)."""

    name = "pollux"
    preemptive: ClassVar[bool] = True

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.models: dict[int, JobGoodputModel] = {}
        self.restarts: dict[int, int] = {}

    def _model(self, run: JobRun) -> JobGoodputModel:
        m = self.models.get(run.job_id)
        if m is None:
            prof = profile(parse_model(run.spec.model)[0])
            m = JobGoodputModel(prof.init_bsz, prof.max_bsz, prof.min_local_bsz, prof.max_local_bsz)
            self.models[run.job_id] = m
        return m

    def _measure(self, run: JobRun, now_s: float) -> None:
        """The job agent: measure the current step, sync time and gradient statistics."""
        placement = placement_of(run.allocation)
        app, fixed = parse_model(run.spec.model)
        prof = profile(app)
        replicas = sum(placement)
        cfg = (
            prof.best_config(normalise_placement(placement))[0]
            if fixed is None
            else prof.fixed_batch_config(fixed, replicas)
        )
        if cfg is None:
            return
        step, sync = prof.step_sync_s(placement, float(cfg.atomic_bsz))
        model = self._model(run)
        batch = replicas * cfg.atomic_bsz * (cfg.accum_steps + 1)
        epoch = min(
            int(np.searchsorted(prof.epoch_ends, run.work_done(now_s), side="right")),
            prof.max_epochs - 1,
        )
        sqr, var = prof.grad_stats(batch)
        model.set_grad(float(sqr[epoch]), float(var[epoch]))
        model.observe(len(placement), replicas, cfg.atomic_bsz, step, sync)

    def _max_replicas(self, run: JobRun, gpus: int) -> int:
        app, _ = parse_model(run.spec.model)
        if app == "ncf":
            return 1
        prof = profile(app)
        grow = max(2 * self._model(run).max_profiled_replicas, 1)
        return max(1, min(grow, 64, prof.max_bsz // prof.min_local_bsz, run.spec.max_workers, gpus))

    def decide(self, view: ClusterView) -> Decision:
        now = view.now_s
        for run in view.running:
            self._measure(run, now)
        jobs = sorted(view.jobs(), key=lambda r: (r.attained_gpu_s_at(now), r.spec.submit_time_s))
        gpus = round(view.cluster.total.gpu)
        num_nodes = view.cluster.num_servers
        fair = max(1, min(GPUS_PER_NODE, math.ceil(gpus / max(len(jobs), 1))))
        costs: list[dict[int, float]] = []
        for run in jobs:
            model = self._model(run)
            current = run.allocation.num_workers
            age = max(now - run.spec.submit_time_s, 0.0)
            restarts = self.restarts.get(run.job_id, 0)
            penalty = max(age - restarts * RESTART_DELAY_S, 0.0) / (age + RESTART_DELAY_S)
            options = candidate_counts(self._max_replicas(run, gpus))
            base, goodputs = 0.0, [0.0] * len(options)
            if model.params is not None:
                sizes = [(math.ceil(r / GPUS_PER_NODE), r) for r in options]
                base, *goodputs = model.best_goodputs([(1, fair), *sizes])
            cost: dict[int, float] = {}
            for r, goodput in zip(options, goodputs, strict=True):
                if r == 0:
                    speedup = 0.0
                elif base > 0:
                    speedup = goodput / base
                else:
                    speedup = r / fair
                scaled = speedup * num_nodes / gpus
                if r != current:
                    scaled *= penalty
                cost[r] = (scaled + _FLOOR) ** FAIRNESS_P
            costs.append(cost)
        split = best_split(costs, gpus)
        counts = {run.job_id: r for run, r in zip(jobs, split, strict=True) if r > 0}
        return self._decision(view, jobs, counts)

    def _decision(self, view: ClusterView, jobs: list[JobRun], counts: dict[int, int]) -> Decision:
        capacity = [round(row[0]) for row in view.cluster.capacity_rows]
        runs = {run.job_id: run for run in jobs}
        keep = {
            j: runs[j].allocation
            for j, r in counts.items()
            if runs[j].allocation.num_workers == r and r > 0
        }
        free = capacity[:]
        for alloc in keep.values():
            for server, n in alloc.workers:
                free[server] -= n
        placed = _place(counts, keep, free)
        if placed is None:  # repack everything
            keep = {}
            placed = _place(counts, keep, capacity[:]) or {}
        decision = Decision()
        for j, r in counts.items():
            if j in keep:
                decision.targets[j] = Target(r)
            elif j in placed:
                alloc = placed[j]
                same = alloc == runs[j].allocation
                decision.targets[j] = Target(r, 0, None if same else alloc)
                if not same and runs[j].running:
                    self.restarts[j] = self.restarts.get(j, 0) + 1
        return decision


class OptimusOracleAllreduce(BaseScheduler):
    """ORACLE: the artifact's Optimus+Oracle on GPU jobs (module docstring)."""

    name = "optimus-oracle-allreduce"
    preemptive: ClassVar[bool] = True
    is_oracle: ClassVar[bool] = True

    def decide(self, view: ClusterView) -> Decision:
        now = view.now_s
        jobs = view.jobs()
        for run in jobs:
            if run.spec.arch is Arch.PS:
                raise ValueError(
                    f"{self.name} schedules GPU jobs without parameter servers; "
                    f"job {run.job_id} ({run.spec.model}) is a PS job"
                )
        free = round(view.cluster.total.gpu)
        counts: dict[int, int] = {}
        for run in jobs:
            if free >= run.spec.min_workers:
                counts[run.job_id] = run.spec.min_workers
                free -= run.spec.min_workers

        def speed(run: JobRun, r: int) -> float:
            alloc = Allocation.of(enumerate(packed_placement(r)))
            return view.oracle_speed(run.spec, alloc)

        def gain(run: JobRun, r: int) -> float:
            if r + 1 > run.spec.max_workers:
                return 0.0
            now_speed, next_speed = speed(run, r), speed(run, r + 1)
            if now_speed <= 0 or next_speed <= 0:
                return 0.0
            return run.remaining_work(now) * (1 / now_speed - 1 / next_speed)

        heap = [
            (-gain(run, counts[run.job_id]), i)
            for i, run in enumerate(jobs)
            if run.job_id in counts
        ]
        heapq.heapify(heap)
        while free > 0 and heap:
            g, i = heapq.heappop(heap)
            if g >= 0:
                break
            run = jobs[i]
            counts[run.job_id] += 1
            free -= 1
            heapq.heappush(heap, (-gain(run, counts[run.job_id]), i))
        return Decision.from_counts({j: (r, 0) for j, r in counts.items()})


@register(
    "pollux",
    setting="goodput GPU jobs (pollux)",
    source="Pollux (OSDI 2021)",
    description="per-job goodput fitted online, batch per allocation, p=-1 mean, restart penalty",
)
def _make(_arg: str | None) -> Scheduler:
    return Pollux()


@register(
    "optimus-oracle-allreduce",
    setting="elastic GPU jobs (pollux)",
    source="Optimus (EuroSys 2018) as Pollux's artifact runs it",
    description="(oracle) one GPU each, then GPUs by largest remaining-time cut; true speeds",
)
def _make_optimus(_arg: str | None) -> Scheduler:
    return OptimusOracleAllreduce()
