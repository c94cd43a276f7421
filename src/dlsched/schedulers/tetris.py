"""Tetris as DL2 runs it (§6.2): packing efficiency × shortest remaining time, then fill.

Rule, every scheduling point, from a cluster emptied of every active job: score every job not
yet served by the alignment of one of its task bundles (a worker and a PS) with the cluster's
free resources (Tetris' packing efficiency: dot product of demand and free, as fractions of
capacity) times the inverse of its estimated remaining time (remaining epochs over the speed at
its requested (PS, workers), estimated from observed speeds, `ObservedSpeeds`); pick the
highest, and — as DL2 §6.3 describes Tetris — keep adding bundles to that job (its minimum
first) until it reaches the threshold or the next bundle does not fit. Repeat with the next
best job until every job has been served once. The threshold defaults to the workers the job
asked for (DL2's code fills to its ``MAX_NUM_WORKERS`` = 16, which on the measured speeds wastes
most of what it adds, as `srtf`'s docstring explains); ``tetris:N`` fills a job to N workers
(within its caps). Fixed-size jobs take their requested size when picked (remaining ideal
seconds as remaining time).

DL2's code (``tetris_env.py``) scores per server and adds the remaining-time term with a weight;
we score against the whole cluster (one number per job, cheap) and multiply, as the issue asks.

Sources: DL2 §6.2–§6.3; Grandl et al., Tetris (SIGCOMM 2014).
"""

from __future__ import annotations

from typing import ClassVar

from dlsched.core import Arch, ClusterView, Decision, JobRun
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.common import FreeTracker, requested
from dlsched.schedulers.drf import next_bundle
from dlsched.schedulers.registry import register
from dlsched.schedulers.srtf import Srtf


class Tetris(BaseScheduler):
    """Pick by packing × shortness, fill the pick up to a threshold (module docstring).

    Args:
        threshold: most workers a picked job is filled to; None = the workers it asked for.
    """

    name = "tetris"
    preemptive: ClassVar[bool] = True

    def __init__(self, threshold: int | None = None) -> None:
        if threshold is not None and threshold < 1:
            raise ValueError(f"tetris: threshold must be >= 1, got {threshold}")
        self.threshold = threshold
        self._estimator = Srtf()

    def reset(self) -> None:
        self._estimator.reset()

    def decide(self, view: ClusterView) -> Decision:
        jobs = view.jobs()
        now = view.now_s
        self._estimator.speeds.update(jobs)
        total = view.cluster.total.as_tuple()
        shortness = {r.job_id: 1.0 / max(self._estimator.remaining_s(r, now), 1e-9) for r in jobs}
        tracker = FreeTracker(view.cluster, release=list(view.running))
        decision = Decision()
        left = list(jobs)
        while left:
            free = tracker.total().as_tuple()
            best = max(range(len(left)), key=lambda i: _score(left[i], free, total, shortness))
            run = left.pop(best)
            workers, ps = self._fill(run, tracker)
            if workers:
                decision.set(run.job_id, workers, ps)
        return decision

    def _fill(self, run: JobRun, tracker: FreeTracker) -> tuple[int, int]:
        spec = run.spec
        if spec.arch is not Arch.PS:
            workers, ps = requested(spec)
            return (workers, ps) if tracker.take(spec, workers, ps) else (0, 0)
        cap = spec.num_workers if self.threshold is None else self.threshold
        cap = min(max(cap, spec.min_workers), spec.max_workers)
        workers = ps = 0
        while (bundle := next_bundle(spec, workers, ps)) is not None:
            if workers + bundle[0] > cap or not tracker.take(spec, *bundle):
                break
            workers, ps = workers + bundle[0], ps + bundle[1]
        return workers, ps


def _score(
    run: JobRun,
    free: tuple[float, float, float],
    total: tuple[float, float, float],
    shortness: dict[int, float],
) -> float:
    spec = run.spec
    bundle = (
        spec.worker_demand + spec.ps_demand
        if spec.arch is Arch.PS
        else spec.demand(*requested(spec))
    )
    need = bundle.as_tuple()
    align = sum(need[r] * free[r] / (total[r] * total[r]) for r in range(3) if total[r] > 0)
    return align * shortness[run.job_id]


@register(
    "tetris",
    setting="elastic PS (dl2)",
    source="DL2 §6.2 (Grandl et al. 2014)",
    description="packing × 1/remaining time picks a job, filled up to a threshold (tetris:N)",
)
def _make(arg: str | None) -> Scheduler:
    if arg is None:
        return Tetris()
    try:
        return Tetris(int(arg))
    except ValueError:
        raise ValueError(f"tetris:N needs a positive integer threshold, got {arg!r}") from None
