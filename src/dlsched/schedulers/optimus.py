"""Optimus: greedy marginal gains on a speed model fitted online (DL2's strongest baseline).

Rule, every scheduling point, from a cluster emptied of every active job:

1. every job, in arrival order, first gets its minimum — one worker and one PS for PS jobs (as
   Optimus and DL2's ``optimus_env.py`` do, so no job starves); fixed-size jobs get their
   requested size, which never changes;
2. then, repeatedly, one more worker or one more PS goes to the job and task kind whose addition
   cuts the job's estimated remaining time the most per unit of dominant resource the task takes
   (``(R/s(p, w) − R/s(p', w')) / dominant share of the task``, ``R`` the remaining epochs),
   until no addition shortens any job, fits, or stays under the job's caps.

Speeds ``s(p, w)``:

* ``optimus`` — Optimus' own model, ``1/s = θ0·M/w + θ1 + θ2·w/p + θ3·w + θ4·p``, fitted by
  `OptimusFit` to the speeds the job has been *observed* to train at (`JobRun.observed`,
  interference noise included), falling back on the fit pooled over jobs of the same model
  until the job has seen enough configurations (`ObservedSpeeds`). It never reads the
  simulator's true speed function, so its estimates are wrong where DL2 says Optimus' are:
  interference, and a model shape that is not the real one.
* ``optimus-oracle`` — the same greedy on the true noise-free speeds (``view.oracle_speed``):
  an upper bound on what the greedy can do with a perfect model, labelled as an oracle.

Sources: Peng et al., "Optimus: An Efficient Dynamic Resource Scheduler for Deep Learning
Clusters", EuroSys 2018, §4–§5 (marginal gain per resource, online-fitted speed model); DL2 §6.2
and its simulator (``pengyanghua/DL2``, ``optimus_env.py``).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import ClassVar

from dlsched.core import Arch, ClusterView, Decision, JobRun, Resources
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.common import FreeTracker, requested
from dlsched.schedulers.drf import next_bundle
from dlsched.schedulers.registry import register
from dlsched.schedulers.speed_estimate import ObservedSpeeds, OracleSpeeds, SpeedFn

WORKER, PS = 0, 1
_TINY_SHARE = 1e-6


def give_minimum(
    runs: Sequence[JobRun], tracker: FreeTracker, counts: dict[int, tuple[int, int]]
) -> None:
    """Give each job without tasks its minimum (PS jobs) or requested size (others), in order."""
    for run in runs:
        spec = run.spec
        if counts.get(run.job_id, (0, 0))[0] > 0:
            continue
        if spec.arch is Arch.PS:
            bundle = next_bundle(spec, 0, 0)
            workers, ps = bundle if bundle is not None else (0, 0)
        else:
            workers, ps = requested(spec)
        if workers and tracker.take(spec, workers, ps):
            counts[run.job_id] = (workers, ps)


def marginal_greedy(
    runs: Sequence[JobRun],
    tracker: FreeTracker,
    counts: dict[int, tuple[int, int]],
    speed: SpeedFn,
    now_s: float,
    total: Resources,
) -> None:
    """Optimus' greedy: add the single task with the largest time saved per dominant share.

    Only PS jobs already holding a worker and a PS grow. ``counts`` (job id → (workers, PS)) is
    updated in place; tasks are reserved in ``tracker``.

    Args:
        runs: candidate jobs.
        tracker: free resources left.
        counts: current (workers, PS) per job id.
        speed: estimated speed of a job at (PS, workers).
        now_s: current time, seconds (for remaining work).
        total: cluster capacity (dominant shares are relative to it).
    """
    heap: list[tuple[float, int, int]] = []
    blocked: dict[int, set[int]] = {}
    remaining = [run.remaining_work(now_s) for run in runs]
    shares = [
        (
            max(run.spec.worker_demand.dominant_share(total), _TINY_SHARE),
            max(run.spec.ps_demand.dominant_share(total), _TINY_SHARE),
        )
        for run in runs
    ]
    known: dict[tuple[int, int, int], float] = {}

    def speed_at(i: int, ps: int, workers: int) -> float:
        key = (i, ps, workers)
        value = known.get(key)
        if value is None:
            value = known[key] = speed(runs[i], ps, workers)
        return value

    def push(i: int) -> None:
        run = runs[i]
        spec = run.spec
        workers, ps = counts.get(run.job_id, (0, 0))
        if spec.arch is not Arch.PS or workers < 1 or ps < 1:
            return
        now_speed = speed_at(i, ps, workers)
        if now_speed <= 0:
            return
        left = remaining[i] / now_speed
        best: tuple[float, int] | None = None
        for role, p, w, share, cap_ok in (
            (WORKER, ps, workers + 1, shares[i][0], workers < spec.max_workers),
            (PS, ps + 1, workers, shares[i][1], ps < spec.max_ps),
        ):
            if not cap_ok or role in blocked.get(i, ()):
                continue
            faster = speed_at(i, p, w)
            if faster <= 0:
                continue
            gain = (left - remaining[i] / faster) / share
            if gain > 0 and (best is None or gain > best[0]):
                best = (gain, role)
        if best is not None:
            heapq.heappush(heap, (-best[0], i, best[1]))

    for i in range(len(runs)):
        push(i)
    while heap:
        _, i, role = heapq.heappop(heap)
        run = runs[i]
        workers, ps = counts[run.job_id]
        add_w, add_p = (1, 0) if role == WORKER else (0, 1)
        if tracker.take(run.spec, add_w, add_p):
            counts[run.job_id] = (workers + add_w, ps + add_p)
        else:
            blocked.setdefault(i, set()).add(role)
        push(i)


class Optimus(BaseScheduler):
    """Optimus' greedy on observed (fitted) or, as an oracle, true speeds (module docstring).

    Args:
        oracle: read true speeds (``optimus-oracle``) instead of fitting observed ones.
    """

    preemptive: ClassVar[bool] = True

    def __init__(self, oracle: bool = False) -> None:
        self.name = "optimus-oracle" if oracle else "optimus"
        self.oracle = oracle
        self.speeds = ObservedSpeeds()

    def reset(self) -> None:
        self.speeds.reset()

    def decide(self, view: ClusterView) -> Decision:
        jobs = view.jobs()
        speed: SpeedFn
        if self.oracle:
            speed = OracleSpeeds(view)
        else:
            self.speeds.update(jobs)
            speed = self.speeds.speed
        tracker = FreeTracker(view.cluster, release=list(view.running))
        counts: dict[int, tuple[int, int]] = {}
        give_minimum(jobs, tracker, counts)
        marginal_greedy(jobs, tracker, counts, speed, view.now_s, view.cluster.total)
        return Decision.from_counts({j: c for j, c in counts.items() if c[0] > 0})


class OptimusOracle(Optimus):
    """ORACLE: Optimus' greedy on the simulator's true speeds."""

    is_oracle: ClassVar[bool] = True

    def __init__(self) -> None:
        super().__init__(oracle=True)


@register(
    "optimus",
    setting="elastic PS (dl2)",
    source="Optimus (EuroSys 2018); DL2 §6.2",
    description="greedy marginal gain per dominant resource, speeds fitted to observations",
)
def _make(_arg: str | None) -> Scheduler:
    return Optimus()


@register(
    "optimus-oracle",
    setting="elastic PS (dl2)",
    source="Optimus (EuroSys 2018); DL2 §6.2",
    description="(oracle) Optimus' greedy on the true noise-free speeds",
)
def _make_oracle(_arg: str | None) -> Scheduler:
    return OptimusOracle()
