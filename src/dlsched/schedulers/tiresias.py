"""Tiresias: discretised two-dimensional least-attained-service with preemption (Tiresias-G).

Rule: a job's attained service is the GPU-seconds it has received (its GPUs × time held: the
two dimensions, space and time). Queues are cut by thresholds on attained service
(`DEFAULT_THRESHOLDS_GPU_S`: two queues split at one GPU-hour; ``tiresias:T1,T2,...`` sets
them): a job starts in the highest-priority queue and is demoted when its service crosses the
next threshold. Jobs are ranked by queue, then first-come first-served within a queue (by
arrival), which avoids the constant preemptions of continuous LAS; the jobs to run are chosen
in that order at their requested size while they fit, and running jobs not chosen are
preempted unless they still fit where they are. Starvation guard: a job that has been waiting
longer than `PROMOTE_KNOB` times its last continuous run is promoted back to the highest queue
(its service counted afresh from then on).

Demotions take effect at the next scheduling point (the simulator schedules on job arrivals and
completions; a scheduler cannot ask for a wake-up).

Source: Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI 2019
(§3.1–§4.2: 2D-LAS, discretised into K queues, FIFO within a queue, promotion on starvation).
The thresholds and the knob are our defaults; the paper tunes them per cluster.
"""

from __future__ import annotations

import bisect
import heapq
import math
import operator
from typing import Any, ClassVar

from dlsched.core import ClusterView, Decision, JobRun
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.schedulers.ordered import requested_size, run_in_order
from dlsched.schedulers.pending_queue import PendingQueue, Ranking
from dlsched.schedulers.registry import register

_FIRST = operator.itemgetter(0)

DEFAULT_THRESHOLDS_GPU_S: tuple[float, ...] = (3600.0,)
"""Attained GPU-seconds at which a job moves to the next (lower-priority) queue."""

PROMOTE_KNOB = 8.0
"""Promote a job that has waited this many times its last continuous run."""


class Tiresias(BaseScheduler):
    """Discretised 2D-LAS (module docstring).

    Args:
        thresholds_gpu_s: increasing queue thresholds on attained service, GPU-seconds.
        promote_knob: starvation guard (waiting time / last run time), > 0.
    """

    name = "tiresias"
    preemptive: ClassVar[bool] = True

    def __init__(
        self,
        thresholds_gpu_s: tuple[float, ...] = DEFAULT_THRESHOLDS_GPU_S,
        promote_knob: float = PROMOTE_KNOB,
    ) -> None:
        if list(thresholds_gpu_s) != sorted(thresholds_gpu_s) or any(
            t <= 0 for t in thresholds_gpu_s
        ):
            raise ValueError(f"tiresias: thresholds must be increasing and > 0: {thresholds_gpu_s}")
        if promote_knob <= 0:
            raise ValueError(f"tiresias: promote_knob must be > 0, got {promote_knob}")
        self.thresholds_gpu_s = tuple(thresholds_gpu_s)
        self.promote_knob = promote_knob
        self.reset()

    def reset(self) -> None:
        self._prev_decision_s = 0.0
        self._run_started_s: dict[int, float] = {}
        self._last_run_s: dict[int, float] = {}
        self._waiting_since_s: dict[int, float] = {}
        self._service_offset: dict[int, float] = {}
        # running jobs' ranking entries, kept while their keys hold (`_rank`)
        self._ranked: dict[int, tuple[Any, ...]] = {}
        # the jobs in _run_started_s (seen running, not yet seen waiting or finished)
        self._tracked: dict[int, JobRun] = {}
        # waiting jobs that may be promoted: (when, job id, waiting since, last run, job)
        self._starving: list[tuple[float, int, float, float, JobRun]] = []
        self._running_seen: object = None  # view.running at the last decision
        # waiting jobs kept sorted between points; the running ones are ranked at each
        self.queue = PendingQueue(self._key, requested_size)

    def queue_of(self, run: JobRun, now_s: float) -> int:
        """Queue index (0 = highest priority) of ``run`` at ``now_s``."""
        service = run.attained_gpu_s_at(now_s) - self._service_offset.get(run.job_id, 0.0)
        return bisect.bisect_right(self.thresholds_gpu_s, service)

    def _key(self, run: JobRun, now_s: float) -> tuple[int, float, int]:
        """Queue, then arrival (a waiting job's key changes only when it is promoted)."""
        spec = run.spec
        return (self.queue_of(run, now_s), spec.submit_time_s, spec.job_id)

    def _rank(self, view: ClusterView) -> Ranking:
        """`PendingQueue.rank` with each running job's ranking entry kept while its key cannot
        change: its queue changes only when its service crosses the next threshold, so its
        entry is kept, with a time safely before that crossing, until then (hundreds of
        running jobs are ranked at every point on all of Philly; few cross a threshold).

        An entry is checked against the job's allocation (by identity), its attained service
        and its progress time, which the engine changes together. The service offset is not:
        it changes only while a job waits (`_promote`), and a job that runs again has had its
        progress time moved by its start.
        """
        now = view.now_s
        kept = self._ranked
        ranked = []
        for run in view.running:
            entry = kept.get(run.job_id)
            if (
                entry is None
                or entry[0] is not run.allocation
                or entry[1] != run.attained_gpu_s
                or entry[2] != run.progress_time_s
                or not now < entry[3]
            ):
                entry = self._rank_entry(run, now)
            ranked.append(entry[4])
        if len(kept) > 2 * len(ranked) + 64:  # forget the jobs no longer running
            ids = {run.job_id for run in view.running}
            self._ranked = {job: v for job, v in kept.items() if job in ids}
            self.queue.forget_held(view.running)
        ranked.sort(key=_FIRST)
        return Ranking(self.queue, ranked)

    def _rank_entry(self, run: JobRun, now_s: float) -> tuple[Any, ...]:
        """(allocation, attained, progress time, kept until, (key, job, shape)) of a running
        job at ``now_s``, kept for `_rank`."""
        key = self._key(run, now_s)
        alloc = run.allocation
        held = alloc.num_workers * run.spec.worker_demand.gpu
        if held > 0:
            offset = self._service_offset.get(run.job_id, 0.0)
            until = self._same_queue_until(run, key[0], held, offset)
        else:
            until = -math.inf
        entry = (
            alloc,
            run.attained_gpu_s,
            run.progress_time_s,
            until,
            (key, run, self.queue.held_shape(run)),
        )
        self._ranked[run.job_id] = entry
        return entry

    def _same_queue_until(self, run: JobRun, queue: int, held: float, offset: float) -> float:
        """A time before which ``run``, holding ``held`` GPUs from its last progress update on,
        is surely still in ``queue`` (service grows with time, so its queue only goes up).

        The margin (a relative 1e-9 of every term) is far above the round-off of `queue_of`'s
        sums, so a job this says is still in its queue is, by the exact test too.
        """
        if queue >= len(self.thresholds_gpu_s):
            return math.inf  # the last queue
        threshold = self.thresholds_gpu_s[queue]
        attained, since = run.attained_gpu_s, run.progress_time_s
        gap = threshold + offset - attained
        margin = 1e-9 * (abs(threshold) + abs(offset) + abs(attained) + held * (abs(since) + 1.0))
        if gap - margin <= 0:
            return -math.inf
        return since + (gap - margin) / held * (1.0 - 1e-9)

    def _track(self, view: ClusterView) -> None:
        """Record run and wait spells (as seen at decisions), and promote starved jobs.

        Only the jobs whose spell changed are visited: those seen running at the last decision
        and the waiting jobs due for promotion (a heap by due time).
        """
        now = view.now_s
        prev = self._prev_decision_s
        tracked = self._tracked
        running = view.running
        if running is self._running_seen and type(running) is tuple:
            # the same jobs run as at the last decision (the simulator hands the same tuple
            # while none started or stopped): no spell changed, only promotions are due
            self._promote(now)
            self._prev_decision_s = now
            return
        self._running_seen = running
        by_id = {run.job_id: run for run in running}
        # (the order in which jobs are visited here changes nothing: the heap orders itself)
        for job in by_id.keys() - tracked.keys():  # started by the last decision
            self._waiting_since_s.pop(job, None)
            self._run_started_s[job] = prev
            tracked[job] = by_id[job]
        if len(tracked) > len(by_id):  # some were running at the last decision only
            for job in tracked.keys() - by_id.keys():
                run = tracked.pop(job)
                started = self._run_started_s.pop(job)
                if run.finish_s is not None:
                    continue  # finished: its spells no longer matter
                # preempted by the last decision, at which it was last seen running
                last = self._last_run_s[job] = prev - started
                self._waiting_since_s[job] = prev
                if last > 0:
                    when = prev + self.promote_knob * last
                    heapq.heappush(self._starving, (when, job, prev, last, run))
        self._promote(now)
        self._prev_decision_s = now

    def _promote(self, now: float) -> None:
        """Promote each waiting job that has waited `promote_knob` times its last run."""
        starving = self._starving
        later = []
        # the heap's times are rounded sums: look a little ahead, decide by the exact test
        while starving and starving[0][0] <= now + 1e-6 * max(1.0, abs(now)):
            entry = heapq.heappop(starving)
            _, job, since, last, run = entry
            if (
                self._waiting_since_s.get(job) != since
                or self._last_run_s.get(job) != last
                or run.running
                or run.finish_s is not None
            ):
                continue  # it ran again since (a newer entry stands for it) or finished
            if now - since >= self.promote_knob * last:
                self._service_offset[job] = run.attained_gpu_s_at(now)
                self._waiting_since_s[job] = now
                self._last_run_s[job] = 0.0
                if run in self.queue:
                    self.queue.rekey(run, now)
            else:
                later.append(entry)
        for entry in later:
            heapq.heappush(starving, entry)

    def decide(self, view: ClusterView) -> Decision:
        self.queue.update(view)
        self._track(view)
        return run_in_order(view, self._rank(view), changes_only=True)


@register(
    "tiresias",
    setting="fixed-GPU (sched2, philly, trace, pollux)",
    source="Tiresias (NSDI 2019)",
    description="discretised 2D-LAS: GPU-second queues, FIFO within; preemptive (tiresias:T1,..)",
)
def _make(arg: str | None) -> Scheduler:
    if arg is None:
        return Tiresias()
    try:
        thresholds = tuple(float(x) for x in arg.split(","))
    except ValueError:
        raise ValueError(f"tiresias:T1,T2,... needs GPU-second thresholds, got {arg!r}") from None
    return Tiresias(thresholds)
