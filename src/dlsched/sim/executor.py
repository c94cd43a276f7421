"""The one executor: the rules that turn a scheduler's `Decision` into allocation changes.

Every backend uses it: the simulator (`dlsched.sim.simulator`), the live runtime
(`dlsched.live.cluster`) and the Kubernetes controller. It

1. checks the decision's type (a wrong type is the scheduler's bug: `TypeError` naming it);
2. validates every target before anything changes: integer counts >= 0, within the job's caps,
   both kinds of task for a parameter-server job, a placement of real servers whose counts are
   integers >= 0 and sum to the target, no resizing by a non-preemptive scheduler;
3. suspends the running jobs a preemptive scheduler left out (or, in a `Decision` that lists
   only changes, marked with `Target(0, 0)`: the others keep what they hold);
4. applies shrinks first, then growth in decision order, asking the placement policy where tasks
   go unless the target says, and takes the resources in the `Cluster` (which refuses anything
   that does not fit);
5. hands each change to an `Actuator`, which makes it real: the simulator updates progress and
   rates, the live runtime starts, resizes or suspends processes, the Kubernetes controller
   patches replica counts. An actuator may refuse; the job then gets its old allocation back.

A target that fails validation, placement or actuation changes nothing and is reported in the
returned statuses, by job id.

`Executor.repack` is the one change no scheduler asks for: with the simulator's ``repack``
option (`dlsched.sim.SimConfig.repack`), a running job spread over several servers is moved
onto one server once one has room for all its tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from numbers import Integral
from typing import Protocol

from dlsched.core import Allocation, Arch, Cluster, Decision, JobRun, JobSpec, Status, Target
from dlsched.core.decision import is_suspension, total_tasks
from dlsched.placement.base import Placement
from dlsched.sim.event_log import EventLog

_Change = tuple[JobRun, int, int, Allocation | None]


class Actuator(Protocol):
    """Makes one validated allocation change real."""

    def change(self, run: JobRun, old: Allocation, new: Allocation) -> Status:
        """Make ``run`` hold ``new`` in place of ``old``.

        The cluster already holds ``new`` for the job. Return a non-ok status to refuse (the
        executor then gives ``old`` back in the cluster); on success set
        ``run.allocation = new``.
        """
        ...


class Applying:
    """An `Actuator` that hands each change to ``apply(run, new)`` and never refuses (the
    simulator's: it sets progress, rates and completions)."""

    __slots__ = ("apply",)

    def __init__(self, apply: Callable[[JobRun, Allocation], None]) -> None:
        self.apply = apply

    def change(self, run: JobRun, old: Allocation, new: Allocation) -> Status:
        self.apply(run, new)
        return _SUCCESS


_SUCCESS = Status.success()


def _is_count(x: object) -> bool:
    """A task count: an integer (Python or NumPy, not bool) >= 0."""
    if type(x) is int:  # the usual case, without the slow abstract-class check
        return x >= 0
    return isinstance(x, Integral) and not isinstance(x, bool) and int(x) >= 0


def _check_pairs(pairs: object, num_servers: int) -> str | None:
    """Why ``pairs`` is not ``((server, count), ...)`` of real servers and counts >= 0, or None."""
    if not isinstance(pairs, tuple):
        return f"{pairs!r} is not a tuple of (server, count) pairs"
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            return f"{pair!r} is not a (server, count) pair"
        server, n = pair
        if type(server) is int and type(n) is int and 0 <= server < num_servers and n >= 0:
            continue  # the usual pair: what the two checks below find, without the calls
        if not (_is_count(server) and server < num_servers):
            return f"no server {server!r}"
        if not _is_count(n):
            return f"task count {n!r} on server {server} is not an integer >= 0"
    return None


def _is_normal(pairs: tuple[tuple[int, int], ...]) -> bool:
    """Sorted by server, each server once, no zero counts (what `Allocation.of` builds)."""
    last = -1
    for server, n in pairs:
        if server <= last or n == 0:
            return False
        last = server
    return True


def check_target(run: JobRun, target: object, preemptive: bool, num_servers: int) -> Status:
    """Whether ``target`` is a legal wish for ``run`` on a cluster of ``num_servers`` servers."""
    spec = run.spec
    if not isinstance(target, Target):
        return Status.invalid(
            f"job {spec.job_id}: target is a {type(target).__name__}, not a Target"
        )
    workers, ps = target.num_workers, target.num_ps
    if not (_is_count(workers) and _is_count(ps)):
        return Status.invalid(
            f"job {spec.job_id}: task counts must be integers >= 0, got {workers!r} workers "
            f"and {ps!r} PS"
        )
    if workers > spec.max_workers or (0 < workers < spec.min_workers):
        return Status.invalid(
            f"job {spec.job_id}: {workers} workers outside [{spec.min_workers}, {spec.max_workers}]"
        )
    if ps > (spec.max_ps if spec.arch is Arch.PS else 0):
        return Status.invalid(f"job {spec.job_id}: {ps} PS above its cap")
    if (workers or ps) and (workers == 0 or (spec.arch is Arch.PS and ps == 0)):
        # a PS job needs both kinds of task to train; holding one kind only wastes it
        return Status.invalid(
            f"job {spec.job_id}: {workers} workers and {ps} PS cannot train; "
            "give it both or nothing"
        )
    placement = target.placement
    if placement is not None:
        if not isinstance(placement, Allocation):
            return Status.invalid(
                f"job {spec.job_id}: placement is a {type(placement).__name__}, not an Allocation"
            )
        why = _check_pairs(placement.workers, num_servers) or _check_pairs(
            placement.ps, num_servers
        )
        if why is not None:
            return Status.invalid(f"job {spec.job_id}: placement: {why}")
        # summed from the pairs just checked: a placement built around `Allocation`'s
        # constructor has no derived counts
        if total_tasks(placement.workers) != workers or total_tasks(placement.ps) != ps:
            return Status.invalid(f"job {spec.job_id}: placement counts differ from target")
    if (
        not preemptive
        and run.running
        and (workers != run.allocation.num_workers or ps != run.allocation.num_ps)
    ):
        return Status.invalid(
            f"job {spec.job_id}: a non-preemptive scheduler cannot resize a running job"
        )
    return _SUCCESS


def _suspensions(decision: Decision, running: Iterable[JobRun], preemptive: bool) -> list[_Change]:
    """The running jobs ``decision`` suspends, in ``running`` order: those a preemptive
    scheduler's whole-state decision leaves out, or those a ``changes_only`` one lists as
    ``Target(0, 0)`` (its running jobs not listed keep what they hold)."""
    targets = decision.targets
    if not preemptive:
        return []
    if not decision.changes_only:
        return [(run, 0, 0, None) for run in running if run.job_id not in targets]
    suspend = {job_id for job_id, target in targets.items() if is_suspension(target)}
    if not suspend:
        return []
    return [(run, 0, 0, None) for run in running if run.job_id in suspend]


class Executor:
    """Applies decisions to one cluster with one placement policy.

    Args:
        cluster: the bookkeeping of what every job holds.
        placement: where tasks go when a target gives no placement.
    """

    def __init__(self, cluster: Cluster, placement: Placement) -> None:
        self.cluster = cluster
        self.placement = placement
        # job id -> the allocation this executor gave it (the very object): a target asking
        # for exactly that again passed every check when it was given (a job that finished
        # while holding it keeps its entry: one small entry a job, never read again)
        self._given: dict[int, Allocation] = {}
        # (job id, workers, PS) -> the spec of a start target without a placement that passed
        # every check: for a job holding nothing those checks read only its spec and the two
        # counts, so the same start of the same spec is valid again (a preempted job restarts
        # many times under LAS)
        self._valid_starts: dict[tuple[int, int, int], JobSpec] = {}
        self.events: EventLog | None = None
        """Where every change made is recorded (`dlsched.sim.event_log`); None: nowhere."""

    def apply(
        self,
        decision: Decision,
        *,
        active: Callable[[int], JobRun | None],
        running: Iterable[JobRun],
        preemptive: bool,
        actuator: Actuator,
        source: str = "scheduler",
    ) -> dict[int, Status]:
        """Apply ``decision``: shrinks first (suspensions included), then growth in decision
        order; return the status of every target that failed, by job id.

        Args:
            active: job id → its run if the job is submitted and not done, else None.
            running: the jobs holding resources, in the order suspensions happen.
            preemptive: whether running jobs left out (or, in a ``changes_only`` decision,
                listed as ``Target(0, 0)``) are suspended and listed ones resized.
            actuator: makes each change real.
            source: the scheduler's name, for errors.

        Raises:
            TypeError: ``decision`` is not a `Decision` whose targets are a dict.
        """
        if not isinstance(decision, Decision) or not isinstance(decision.targets, dict):
            raise TypeError(
                f"scheduler {source!r} returned a {type(decision).__name__}, not a Decision"
                + (" with a dict of targets" if isinstance(decision, Decision) else "")
            )
        statuses: dict[int, Status] = {}
        targets = decision.targets
        if not targets and (not preemptive or decision.changes_only):
            return statuses  # nothing changes
        shrink = _suspensions(decision, running, preemptive)
        suspended = {run.job_id for run, _, _, _ in shrink}
        grow: list[_Change] = []
        num_servers = self.cluster.num_servers
        for job_id, target in targets.items():
            if job_id in suspended:
                continue
            try:
                maybe = active(job_id)
            except TypeError:  # an unhashable or odd key
                maybe = None
            if maybe is None:
                statuses[job_id] = Status.invalid(f"job {job_id!r} is not active")
                continue
            run = maybe
            alloc = run.allocation
            if (
                type(target) is Target
                and target.placement is None
                and type(target.num_workers) is int
                and type(target.num_ps) is int
                and target.num_workers == alloc.num_workers
                and target.num_ps == alloc.num_ps
                and (alloc.is_empty or self._given.get(job_id) is alloc)
            ):
                continue  # no change, and valid: (0, 0) always is, and so is what it was given
            status = self._check(run, target, preemptive, num_servers)
            if status is not _SUCCESS and not status.ok:
                statuses[job_id] = status
                continue
            workers, ps, placement = target.num_workers, target.num_ps, target.placement
            if (
                workers == alloc.num_workers
                and ps == alloc.num_ps
                and (placement is None or alloc.is_empty)
            ):
                continue  # no change (an empty target's placement is empty anyway)
            item = (run, workers, ps, placement)
            if workers <= alloc.num_workers and ps <= alloc.num_ps:
                shrink.append(item)
            else:
                grow.append(item)
        for run, workers, ps, placement in shrink + grow:
            status = self._reallocate(run, workers, ps, placement, actuator)
            if status is not _SUCCESS and not status.ok:
                statuses[run.job_id] = status
        return statuses

    def _check(self, run: JobRun, target: object, preemptive: bool, num_servers: int) -> Status:
        """`check_target`, skipped for a start of this spec at these counts found valid before."""
        start = None
        if (
            type(target) is Target
            and run.allocation.is_empty
            and target.placement is None
            and type(target.num_workers) is int
            and type(target.num_ps) is int
        ):
            start = (run.job_id, target.num_workers, target.num_ps)
            if self._valid_starts.get(start) is run.spec:
                return _SUCCESS
        status = check_target(run, target, preemptive, num_servers)
        if start is not None and status.ok:
            self._valid_starts[start] = run.spec
        return status

    def _reallocate(
        self,
        run: JobRun,
        workers: int,
        ps: int,
        placement: Allocation | None,
        actuator: Actuator,
    ) -> Status:
        spec = run.spec
        old = run.allocation
        new: Allocation | Status
        if workers == 0 and ps == 0:
            new = Allocation.EMPTY
        elif placement is not None:
            if not (_is_normal(placement.workers) and _is_normal(placement.ps)):
                new = Allocation.of(placement.workers, placement.ps)
            elif (
                type(placement) is Allocation
                and getattr(placement, "num_workers", None) == workers
                and getattr(placement, "num_ps", None) == ps
                and getattr(placement, "is_empty", None) is False
            ):
                # its pairs passed `check_target` and sum to these counts, and its derived
                # fields (unset in an object built around the constructor) say so: what the
                # constructor would build (Gavel's rounds move ~27 jobs a round, each to a
                # placement built by the constructor)
                new = placement
            else:  # an object built by the constructor, which derives the counts
                new = Allocation(placement.workers, placement.ps)
        else:
            new = self.placement.place(self.cluster, spec, old, workers, ps)
        if isinstance(new, Status):
            return new
        if new.workers == old.workers and new.ps == old.ps:  # `new == old`, without the call
            return _SUCCESS
        status = self.cluster.allocate(spec, new)
        if status is not _SUCCESS and not status.ok:
            return status
        status = actuator.change(run, old, new)
        if status is not _SUCCESS and not status.ok:
            self.cluster.allocate(spec, old)
            return status
        if self.events is not None:
            self.events.change(run, old, new)
        if new.is_empty:
            self._given.pop(spec.job_id, None)
        else:
            self._given[spec.job_id] = new
        return status

    def repack(self, running: Iterable[JobRun], actuator: Actuator) -> list[int]:
        """Move each job of ``running`` (in that order) whose tasks span several servers onto
        one server with room for all of them, the same task counts; return the moved job ids.

        Room counts what the job itself holds there. Among the servers with room, the one
        holding most of its workers (fewest tasks move), then the fullest (least free GPU: best
        fit), then the lowest id. The cluster refuses what does not fit and the actuator may
        refuse a move (the job then keeps its place), as for any change.
        """
        moved: list[int] = []
        for run in list(running):
            old = run.allocation
            if len(old.workers) + len(old.ps) < 2 or len(old.servers()) < 2:
                continue
            server = self._one_server_for(run)
            if server is None:
                continue
            ps = ((server, old.num_ps),) if old.num_ps else ()
            new = Allocation(((server, old.num_workers),), ps)
            if not self.cluster.allocate(run.spec, new).ok:
                continue
            if actuator.change(run, old, new).ok:
                self._given[run.job_id] = new
                moved.append(run.job_id)
                if self.events is not None:
                    self.events.change(run, old, new)
            else:
                self.cluster.allocate(run.spec, old)
        return moved

    def _one_server_for(self, run: JobRun) -> int | None:
        """The server `repack` moves ``run`` to, or None if no server has room for it all."""
        old = run.allocation
        own = dict(old.workers)
        free = self.cluster.free_rows()
        best: tuple[int, float, int] | None = None
        for server in range(self.cluster.num_servers):
            ps = ((server, old.num_ps),) if old.num_ps else ()
            whole = Allocation(((server, old.num_workers),), ps)
            if not self.cluster.check(run.spec, whole).ok:
                continue
            key = (-own.get(server, 0), free[server][0], server)
            if best is None or key < best:
                best = key
        return None if best is None else best[2]
