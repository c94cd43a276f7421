"""Building blocks of priority-order schedulers (no policy here: callers choose the order).

* `start_in_order`: non-preemptive, work-conserving list scheduling — pending jobs in the given
  order each start at their requested size if they fit; those that do not are skipped
  (DeepRM's comparables, SCED²'s baselines).
* `run_in_order`: preemptive priority scheduling of fixed-size jobs — the jobs to run are chosen
  in the given order as if nothing were running; chosen running jobs stay where they are, chosen
  pending jobs go into what is left, and running jobs not chosen are preempted unless they still
  fit where they are (SRTF, LAS, Tiresias). Choosing first and placing second avoids preempting a
  job only because a scratch placement put a newcomer on its servers.

Both take the order as a plain list (the policy sorted the jobs itself) or as a
`PendingQueue` / `Ranking` that the policy keeps up to date between points; with the latter the
loops skip every remaining job of a shape once one of that shape did not fit (see
`dlsched.schedulers.pending_queue`), and the decisions are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from dlsched.core import ClusterView, Decision, JobRun, JobSpec
from dlsched.schedulers.common import FreeTracker, requested
from dlsched.schedulers.pending_queue import PendingQueue, Ranking, Shape

_EPS = 1e-9

Size = Callable[[JobRun], tuple[int, int]]
"""(workers, PS) a job should run with."""


def requested_size(run: JobRun) -> tuple[int, int]:
    """The (workers, PS) the user asked for."""
    return requested(run.spec)


def _in_order(
    runs: Iterable[JobRun] | PendingQueue | Ranking, dead: set[Shape]
) -> Iterator[tuple[JobRun, Shape | None]]:
    """``runs`` in order with their shapes where known (a shape added to ``dead`` is skipped)."""
    if isinstance(runs, PendingQueue | Ranking):
        return runs.candidates(dead)
    return ((run, None) for run in runs)


def _mark_dead(dead: set[Shape], shape: Shape | None, fits_nowhere: bool) -> None:
    """Record that a job of ``shape`` did not fit. The loops only take resources, so a shape
    that exceeds the summed free resources never fits again at this point; nor does a shape
    without PS whose tasks found no room (whether ``take`` succeeds then depends only on the
    shape and on what is free, which only shrinks; with PS, where the workers land changes
    where the PS fit, so such a shape is not dropped)."""
    if shape is not None and (fits_nowhere or shape[3] == 0):
        dead.add(shape)


def start_in_order(
    view: ClusterView, runs: Iterable[JobRun] | PendingQueue, size: Size = requested_size
) -> Decision:
    """Start each job of ``runs`` (pending ones) that fits, in order; skip those that do not.

    Args:
        view: the cluster now.
        runs: pending jobs in preference order (a `PendingQueue` is in its key order and must
            size jobs as ``size`` does).
        size: (workers, PS) of each job; default what it asked for.

    Returns:
        Targets for the jobs to start, in ``runs`` order.
    """
    decision = Decision()
    tracker = FreeTracker(view.cluster)
    free = list(tracker.total().as_tuple())
    dead: set[Shape] = set()
    for run, shape in _in_order(runs, dead):
        workers, ps = size(run)
        need = _demand(run.spec, workers, ps)
        if _exceeds(need, free):
            _mark_dead(dead, shape, True)
            continue  # cannot fit anywhere: skip the per-server check
        if tracker.take(run.spec, workers, ps):
            decision.set(run.job_id, workers, ps)
            _subtract(free, need)
        else:
            _mark_dead(dead, shape, False)
    return decision


def run_in_order(
    view: ClusterView, runs: Sequence[JobRun] | Ranking, size: Size = requested_size
) -> Decision:
    """Preemptive priority scheduling of fixed-size jobs (module docstring).

    Args:
        view: the cluster now.
        runs: every active job, highest priority first (a `Ranking` is in its key order and
            its queue must size jobs as ``size`` does).
        size: (workers, PS) of a job that starts; running jobs keep their counts.

    Returns:
        The whole desired state: running jobs kept (unchanged counts), then jobs to start in
        priority order; running jobs left out are preempted by the engine.
    """
    chooser = FreeTracker(view.cluster, release=list(view.running))
    free = list(chooser.total().as_tuple())
    chosen: list[JobRun] = []
    dead: set[Shape] = set()
    for run, shape in _in_order(runs, dead):
        workers, ps = _counts(run, size)
        need = _demand(run.spec, workers, ps)
        if _exceeds(need, free):
            _mark_dead(dead, shape, True)
            continue  # cannot fit anywhere: skip the per-server check
        if chooser.take(run.spec, workers, ps):
            chosen.append(run)
            _subtract(free, need)
        else:
            _mark_dead(dead, shape, False)
    chosen_ids = {run.job_id for run in chosen}
    tracker = FreeTracker(
        view.cluster, release=[r for r in view.running if r.job_id not in chosen_ids]
    )
    decision = Decision()
    for run in chosen:
        if run.running:
            decision.set(run.job_id, run.allocation.num_workers, run.allocation.num_ps)
    for run in chosen:
        if not run.running:
            workers, ps = size(run)
            if tracker.take(run.spec, workers, ps):
                decision.set(run.job_id, workers, ps)
    by_rank = runs.running_jobs() if isinstance(runs, Ranking) else runs
    for run in by_rank:  # preempt only those whose place a chosen job really needs
        if (
            run.running
            and run.job_id not in chosen_ids
            and tracker.take_exact(run.spec, run.allocation)
        ):
            decision.set(run.job_id, run.allocation.num_workers, run.allocation.num_ps)
    return decision


def _demand(spec: JobSpec, workers: int, ps: int) -> tuple[float, float, float]:
    """``spec.demand(workers, ps)`` as a tuple, by the same float operations.

    Long queues check thousands of jobs a scheduling point, most of which cannot fit anywhere;
    building `Resources` objects for each was most of the cost.
    """
    wd, pd = spec.worker_demand, spec.ps_demand
    return (
        wd.gpu * workers + pd.gpu * ps,
        wd.cpu * workers + pd.cpu * ps,
        wd.mem * workers + pd.mem * ps,
    )


def _exceeds(need: tuple[float, float, float], free: Sequence[float]) -> bool:
    return need[0] > free[0] + _EPS or need[1] > free[1] + _EPS or need[2] > free[2] + _EPS


def _subtract(free: list[float], need: tuple[float, float, float]) -> None:
    free[0] -= need[0]
    free[1] -= need[1]
    free[2] -= need[2]


def _counts(run: JobRun, size: Size) -> tuple[int, int]:
    if run.running:
        return run.allocation.num_workers, run.allocation.num_ps
    return size(run)


Score = Callable[[list[JobRun], tuple[float, float, float]], list[float]]
"""Scores of candidate jobs given the cluster's free (gpu, cpu, mem); the highest starts first."""


def start_greedy(view: ClusterView, runs: Iterable[JobRun], score: Score) -> Decision:
    """Start pending jobs one at a time, each time the best-scoring one that fits.

    Scores are recomputed after every start (they may depend on what is still free); jobs that
    do not fit are dropped from the candidates. Ties go to the earlier candidate.

    Args:
        view: the cluster now.
        runs: pending jobs (candidates), in arrival order.
        score: scores of the candidates that fit, given the free resources summed over servers.

    Returns:
        Targets (requested sizes) in the order the jobs were picked.
    """
    decision = Decision()
    tracker = FreeTracker(view.cluster)
    free = tracker.total().as_tuple()
    candidates = list(runs)
    while candidates:
        fitting = [r for r in candidates if run_fits(r, free)]
        if not fitting:
            break
        scores = score(fitting, free)
        best = max(range(len(fitting)), key=lambda i: scores[i])  # first of the maxima
        run = fitting[best]
        candidates = [r for r in fitting if r is not run]
        workers, ps = requested(run.spec)
        if tracker.take(run.spec, workers, ps):
            decision.set(run.job_id, workers, ps)
            need = _demand(run.spec, workers, ps)
            free = (free[0] - need[0], free[1] - need[1], free[2] - need[2])
    return decision


def run_fits(run: JobRun, free: tuple[float, float, float]) -> bool:
    """Whether the job's requested resources fit in ``free`` (summed over servers)."""
    return not _exceeds(_demand(run.spec, *requested(run.spec)), free)


def alignment(run: JobRun, free: tuple[float, float, float], total: tuple[float, ...]) -> float:
    """Tetris' packing score: the dot product of the job's demand and the free resources,
    each as a fraction of the cluster's capacity (resources the cluster lacks are ignored)."""
    need = _demand(run.spec, *requested(run.spec))
    return sum(need[r] * free[r] / (total[r] * total[r]) for r in range(3) if total[r] > 0)
