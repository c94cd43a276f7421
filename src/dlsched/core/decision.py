"""What schedulers and placement policies return: `Allocation`, `Target`, `Decision`, `Status`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar, Protocol


def _normalise(counts: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    merged: dict[int, int] = {}
    for server, n in counts:
        if n < 0:
            raise ValueError(f"negative task count {n} on server {server}")
        if n:
            merged[server] = merged.get(server, 0) + n
    return tuple(sorted(merged.items()))


def total_tasks(counts: tuple[tuple[int, int], ...]) -> int:
    """The task count of ``(server, count)`` pairs (their counts summed)."""
    if not counts:
        return 0
    if len(counts) == 1:
        return counts[0][1]
    return sum(n for _, n in counts)


@dataclass(frozen=True, slots=True)
class Allocation:
    """Where one job's tasks run: task counts per server id.

    Attributes:
        workers: ``(server_id, count)`` pairs of workers (GPU tasks, replicas), sorted by server.
        ps: ``(server_id, count)`` pairs of parameter servers, sorted by server.
    """

    workers: tuple[tuple[int, int], ...] = ()
    ps: tuple[tuple[int, int], ...] = ()
    # Derived once at construction: the engine reads them millions of times a trace replay
    # (every reallocation, every running job at every point), an allocation is built far less.
    num_workers: int = field(init=False, repr=False, compare=False)
    """Workers in all (sum of ``workers``' counts)."""
    num_ps: int = field(init=False, repr=False, compare=False)
    """Parameter servers in all."""
    is_empty: bool = field(init=False, repr=False, compare=False)
    """True if it holds no task."""

    EMPTY: ClassVar[Allocation]

    def __post_init__(self) -> None:
        workers, ps = self.workers, self.ps
        set_field = object.__setattr__
        set_field(self, "num_workers", total_tasks(workers))
        set_field(self, "num_ps", total_tasks(ps))
        set_field(self, "is_empty", not workers and not ps)

    @staticmethod
    def of(
        workers: Iterable[tuple[int, int]] = (), ps: Iterable[tuple[int, int]] = ()
    ) -> Allocation:
        """Build an allocation, merging repeated servers and dropping zero counts."""
        return Allocation(_normalise(workers), _normalise(ps))

    @property
    def num_servers(self) -> int:
        """Servers spanned by the workers (what locality-sensitive speed depends on)."""
        return len(self.workers)

    def servers(self) -> set[int]:
        return {s for s, _ in self.workers} | {s for s, _ in self.ps}


Allocation.EMPTY = Allocation()


@dataclass(frozen=True, slots=True)
class Target:
    """A scheduler's wish for one job this round.

    Attributes:
        num_workers: workers (GPUs for all-reduce jobs, replicas for replica jobs).
        num_ps: parameter servers (0 for jobs without PS).
        placement: where to put them; None lets the simulator's placement policy choose.
    """

    num_workers: int
    num_ps: int = 0
    placement: Allocation | None = None

    def __post_init__(self) -> None:
        if self.num_workers < 0 or self.num_ps < 0:
            raise ValueError(f"task counts must be >= 0, got {self.num_workers}, {self.num_ps}")


class Holder(Protocol):
    """A running job as `Decision.whole` reads it (a `dlsched.core.JobRun`)."""

    @property
    def job_id(self) -> int: ...

    @property
    def allocation(self) -> Allocation: ...


@dataclass(slots=True)
class Decision:
    """What a scheduler wants for this round.

    ``targets`` maps job id to its `Target`; insertion order is the order in which the engine
    places jobs, so put the most important first. For a preemptive (elastic) scheduler, running
    jobs left out are suspended; for a non-preemptive one they keep what they hold.

    With ``changes_only`` the targets list only what changes — jobs to start or resize, and
    ``Target(0)`` for each running job to suspend — and running jobs left out keep what they
    hold, whatever the scheduler. A preemptive policy that keeps most running jobs at most points
    (SRTF, LAS, Tiresias on a large cluster) then costs the engine what changes, not every
    running job at every point. `whole` restates such a decision as the whole desired state.
    """

    targets: dict[int, Target] = field(default_factory=dict)
    changes_only: bool = False

    def whole(self, running: Iterable[Holder]) -> Decision:
        """This decision as the whole desired state, given the jobs running now: each running job
        not listed kept at its counts (in ``running`` order), then the listed targets other
        than suspensions of running jobs. A decision that is not ``changes_only`` is returned
        as it is."""
        if not self.changes_only:
            return self
        targets: dict[int, Target] = {}
        held = set()
        for run in running:
            held.add(run.job_id)
            if run.job_id not in self.targets:
                alloc = run.allocation
                targets[run.job_id] = Target(alloc.num_workers, alloc.num_ps)
        for job_id, target in self.targets.items():
            if not (job_id in held and is_suspension(target)):
                targets[job_id] = target
        return Decision(targets)

    def set(self, job_id: int, num_workers: int, num_ps: int = 0) -> None:
        self.targets[job_id] = Target(num_workers, num_ps)

    def __iter__(self) -> Iterator[int]:
        return iter(self.targets)

    def __len__(self) -> int:
        return len(self.targets)

    @staticmethod
    def from_counts(counts: Mapping[int, tuple[int, int]]) -> Decision:
        return Decision({j: Target(w, p) for j, (w, p) in counts.items()})


def is_suspension(target: object) -> bool:
    """Whether ``target`` is ``Target(0, 0)`` with plain int counts (a changes-only decision's
    way to suspend a running job)."""
    return (
        type(target) is Target
        and type(target.num_workers) is int
        and type(target.num_ps) is int
        and target.num_workers == 0
        and target.num_ps == 0
        and target.placement is None
    )


class Code(str, Enum):
    """Outcome of a placement or admission step (as the Kubernetes scheduler framework's)."""

    SUCCESS = "success"
    UNSCHEDULABLE = "unschedulable"
    """Does not fit now; may fit later."""
    INVALID = "invalid"
    """Asks for something the job or cluster can never satisfy (caps, unknown job)."""


@dataclass(frozen=True, slots=True)
class Status:
    """Typed result with a reason, used instead of exceptions for "does not fit"."""

    code: Code
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS

    @staticmethod
    def success() -> Status:
        return _SUCCESS

    @staticmethod
    def unschedulable(reason: str) -> Status:
        return Status(Code.UNSCHEDULABLE, reason)

    @staticmethod
    def invalid(reason: str) -> Status:
        return Status(Code.INVALID, reason)


_SUCCESS = Status(Code.SUCCESS)
