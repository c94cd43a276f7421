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
`dlsched.schedulers.pending_queue`), and the decisions are the same. With a `Ranking`,
`run_in_order` also reuses the previous point's choosing walk as far as it agrees with this
one (`dlsched.schedulers.walk_memo`): the running jobs are not re-placed on the scratch copy at
every point.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import cast

from dlsched.core import ClusterView, Decision, JobRun, JobSpec, Target
from dlsched.schedulers.common import FreeTracker, requested, requested_size
from dlsched.schedulers.count_walk import count_walk_merged, count_walk_split, tasks_free
from dlsched.schedulers.pending_queue import PendingQueue, Ranking, Shape
from dlsched.schedulers.walk_memo import EXCEEDS, NO_ROOM, TOOK, WalkMemo

_EPS = 1e-9

Size = Callable[[JobRun], tuple[int, int]]
"""(workers, PS) a job should run with."""


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
    view: ClusterView,
    runs: Sequence[JobRun] | Ranking,
    size: Size = requested_size,
    *,
    changes_only: bool = False,
) -> Decision:
    """Preemptive priority scheduling of fixed-size jobs (module docstring).

    With a `Ranking` the choosing walk reuses the unchanged prefix of the previous point's walk
    (`dlsched.schedulers.walk_memo`, kept by the ranking's queue); the decision is the same.

    Args:
        view: the cluster now.
        runs: every active job, highest priority first (a `Ranking` is in its key order and
            its queue must size jobs as ``size`` does).
        size: (workers, PS) of a job that starts; running jobs keep their counts.
        changes_only: return only what changes (`Decision.changes_only`): the jobs to start,
            then ``Target(0, 0)`` for each running job to preempt. The engine does the same as
            with the whole state, at the cost of what changes.

    Returns:
        The whole desired state: running jobs kept (unchanged counts), then jobs to start in
        priority order; running jobs left out are preempted by the engine. With
        ``changes_only``, the jobs to start and the jobs to preempt.
    """
    cluster = view.cluster
    running = view.running
    if isinstance(runs, Ranking):
        if changes_only:
            changes = _changes_by_count(view, runs, size)
            if changes is not None:
                return changes
        chosen = _choose_by_count(view, runs)
        if chosen is None:
            chosen = _choose_with_memo(view, runs, runs.queue.memo)
    else:
        chosen = _choose(view, runs, size)
    running_ids = {run.job_id for run in running}
    decision = Decision(changes_only=changes_only)
    targets = decision.targets
    chosen_ids = set()
    starting = []
    for run, shape in chosen:
        job = run.job_id
        chosen_ids.add(job)
        if job not in running_ids:
            starting.append(run)
        elif changes_only:
            continue
        elif shape is not None:  # the counts it holds
            targets[job] = _target(shape[2], shape[3])
        else:
            alloc = run.allocation
            targets[job] = _target(alloc.num_workers, alloc.num_ps)
    if not starting and len(chosen_ids) - len(starting) == len(running_ids):
        return decision  # every running job kept, none started: nothing to place
    tracker = FreeTracker(cluster, release=[r for r in running if r.job_id not in chosen_ids])
    for run in starting:
        workers, ps = size(run)
        if tracker.take(run.spec, workers, ps):
            targets[run.job_id] = _target(workers, ps)
    if isinstance(runs, Ranking):  # running jobs only, by rank
        by_rank: Iterable[JobRun] = (run for _, run, _ in runs.running)
    else:
        by_rank = (run for run in runs if run.running)
    for run in by_rank:  # preempt only those whose place a chosen job really needs
        if run.job_id in chosen_ids:
            continue
        if tracker.take_exact(run.spec, run.allocation):
            if not changes_only:
                targets[run.job_id] = _target(run.allocation.num_workers, run.allocation.num_ps)
        elif changes_only:
            targets[run.job_id] = _target(0, 0)
    return decision


_TARGETS: dict[tuple[int, int], Target] = {}


def _target(workers: int, ps: int) -> Target:
    """``Target(workers, ps)``, one shared object per pair (targets are immutable)."""
    target = _TARGETS.get((workers, ps))
    if target is None:
        target = _TARGETS[(workers, ps)] = Target(workers, ps)
    return target


def _emptied_rows(view: ClusterView) -> list[tuple[float, ...]]:
    """Each server's free resources with every running job's tasks given back, by the same
    float operations, in the same order, as ``FreeTracker(cluster, release=view.running)``
    (the capacities themselves where those operations are exact: `Cluster.emptied_rows`)."""
    exact = view.cluster.emptied_rows(view.running)
    if exact is not None:
        return exact
    rows: list[Sequence[float]] = list(view.cluster.free_rows())
    for run in view.running:
        spec, alloc = run.spec, run.allocation
        for tasks, demand in ((alloc.workers, spec.worker_demand), (alloc.ps, spec.ps_demand)):
            if tasks:
                g, c, m = demand.as_tuple()
                for server, n in tasks:
                    row = rows[server]
                    rows[server] = (row[0] + g * n, row[1] + c * n, row[2] + m * n)
    return list(map(tuple, rows))


Chosen = list[tuple[JobRun, Shape | None]]
"""The jobs to run in order, with their shapes where known."""


def _choose(view: ClusterView, runs: Sequence[JobRun], size: Size) -> Chosen:
    """The jobs to run: ``runs`` in order, each kept if it fits on a scratch copy of the
    cluster with every running job removed."""
    chooser = FreeTracker(view.cluster, release=list(view.running))
    free = list(chooser.total().as_tuple())
    chosen: Chosen = []
    for run in runs:
        workers, ps = _counts(run, size)
        need = _demand(run.spec, workers, ps)
        if _exceeds(need, free):
            continue  # cannot fit anywhere: skip the per-server check
        if chooser.take(run.spec, workers, ps):
            chosen.append((run, None))
            _subtract(free, need)
    return chosen


def _choose_by_count(view: ClusterView, ranking: Ranking) -> Chosen | None:
    """`_choose` over a ranking by counting tasks where that is exact
    (`dlsched.schedulers.count_walk`), else None."""
    tasks = _tasks_free(view, ranking.queue)
    if tasks is None:
        return None
    return cast(Chosen, count_walk_merged(ranking.queue.lanes(), ranking.running, tasks))


def _changes_by_count(view: ClusterView, ranking: Ranking, size: Size) -> Decision | None:
    """`run_in_order`'s changes-only decision from the counted walk's jobs to start and
    running jobs left out (`count_walk_split`), where counting is exact, else None: the
    same decision, without listing the running jobs kept."""
    tasks = _tasks_free(view, ranking.queue)
    if tasks is None:
        return None
    starting, left_out = count_walk_split(ranking.queue.lanes(), ranking.running, tasks)
    decision = Decision(changes_only=True)
    if not starting and not left_out:
        return decision  # every running job kept, none started: nothing to place
    targets = decision.targets
    if left_out:
        left_ids = {run.job_id for run in left_out}
        release = [run for run in view.running if run.job_id in left_ids]
    else:
        release = []
    tracker = FreeTracker(view.cluster, release=release)
    for run in starting:
        workers, ps = size(run)
        if tracker.take(run.spec, workers, ps):
            targets[run.job_id] = _target(workers, ps)
    for run in left_out:  # by rank: preempt only those whose place a chosen job needs
        if not tracker.take_exact(run.spec, run.allocation):
            targets[run.job_id] = _target(0, 0)
    return decision


def _tasks_free(view: ClusterView, queue: PendingQueue) -> int | None:
    """Tasks of the queue's one demand free on the emptied cluster, where the counted walk is
    exact (`dlsched.schedulers.count_walk`), else None; kept while the cluster is unchanged."""
    need = queue.uniform.need
    if need is None:
        return None
    cluster = view.cluster
    known = queue.counted
    if known is not None and known[0] is cluster and known[1] == cluster.version:
        tasks = known[3]  # nothing taken or given back since: the same emptied cluster
    else:
        start = _emptied_rows(view)
        if known is not None and known[2] == start:  # the capacities again: the same count
            tasks = known[3]
        else:
            counted = tasks_free(start, need)
            if counted is None:
                return None
            tasks = counted
        queue.counted = (cluster, cluster.version, start, tasks)
    return tasks


def _choose_with_memo(view: ClusterView, ranking: Ranking, memo: WalkMemo) -> Chosen:
    """`_choose` over a ranking, shapes marked dead as they fail, reusing the previous walk's
    agreeing prefix (`dlsched.schedulers.walk_memo`)."""
    cluster = view.cluster
    if memo.start is not None and memo.cluster is cluster and memo.version == cluster.version:
        start = memo.start  # nothing taken or given back since: the same emptied rows
    else:
        start = _emptied_rows(view)
        memo.cluster, memo.version = cluster, cluster.version
    # FreeTracker.total's sums, column by column in server order
    free = [sum(column) for column in zip(*start, strict=True)] if start else [0.0, 0.0, 0.0]
    chosen: Chosen = []
    dead: set[Shape] = set()
    walk = ranking.candidates(dead)
    old_shapes, old_outcomes = memo.shapes, memo.outcomes
    i = 0  # steps that agree with the last walk
    first: tuple[JobRun, Shape] | None = None  # where the walks part
    if memo.start == start:
        n_old = len(old_shapes)
        for run, shape in walk:
            if i == n_old or (old_shapes[i] is not shape and old_shapes[i] != shape):
                first = (run, shape)
                break
            outcome = old_outcomes[i]
            if outcome == TOOK:
                chosen.append((run, shape))
            else:
                _mark_dead(dead, shape, outcome == EXCEEDS)
            i += 1
        else:
            if i < n_old:  # this walk is a prefix of the last one
                memo.record(start, old_shapes[:i], old_outcomes[:i], memo.rows[:i], memo.free[:i])
            return chosen
    shapes, outcomes = old_shapes[:i], old_outcomes[:i]
    rows, frees = memo.rows[:i], memo.free[:i]
    if i:  # resume from the state after the last agreeing step
        chooser = FreeTracker.from_rows(cluster, rows[-1])
        free = list(frees[-1])
    else:  # own rows: the cluster's may change under the memo
        chooser = FreeTracker.from_rows(cluster, start)
    rest = walk if first is None else itertools.chain((first,), walk)
    for run, shape in rest:
        workers, ps = shape[2], shape[3]
        need = _demand(run.spec, workers, ps)
        if _exceeds(need, free):
            outcome = EXCEEDS
        elif chooser.take(run.spec, workers, ps):
            outcome = TOOK
            _subtract(free, need)
        else:
            outcome = NO_ROOM
        shapes.append(shape)
        outcomes.append(outcome)
        rows.append(list(chooser.free))
        frees.append((free[0], free[1], free[2]))
        if outcome == TOOK:
            chosen.append((run, shape))
        else:
            _mark_dead(dead, shape, outcome == EXCEEDS)
    memo.record(start, shapes, outcomes, rows, frees)
    return chosen


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
