"""Jobs: the frozen request (`JobSpec`) and the engine's mutable record of its run (`JobRun`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from dlsched.core.decision import Allocation
from dlsched.core.resources import Resources


class Arch(str, Enum):
    """How a job trains, which decides what its tasks are and what its speed depends on."""

    PS = "ps"
    """Parameter-server job: workers and parameter servers (DL2); speed depends on both counts."""
    ALLREDUCE = "allreduce"
    """GPU job whose tasks are GPUs (SCED², Philly); speed depends on how many servers it spans."""
    REPLICA = "replica"
    """Identical replicas with a fixed duration or replica-scaled speed (DeepRM, Kubeflow)."""


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What the user submitted; never changes during a run.

    Attributes:
        job_id: unique id within a workload.
        submit_time_s: submission time, seconds from the start of the trace.
        model: model name (keys the throughput model, e.g. ``"resnet-50"``).
        arch: how the job trains (see `Arch`).
        total_work: work to finish the job, in the throughput model's unit: epochs for PS jobs,
            ideal-placement seconds for all-reduce and replica jobs.
        worker_demand: resources of one worker / GPU task / replica.
        ps_demand: resources of one parameter server (zero for jobs without PS).
        num_workers: workers (GPUs, replicas) the user asked for.
        num_ps: parameter servers the user asked for.
        min_workers: fewest workers the job runs with (Kubeflow's min replicas).
        max_workers: most workers the job can use.
        max_ps: most parameter servers the job can use.
        priority: larger is more important (Kubeflow utility); 0 when the workload has none.
    """

    job_id: int
    submit_time_s: float
    model: str
    arch: Arch
    total_work: float
    worker_demand: Resources
    ps_demand: Resources = Resources()  # noqa: RUF009 - frozen, so one shared default is safe
    num_workers: int = 1
    num_ps: int = 0
    min_workers: int = 1
    max_workers: int = 1
    max_ps: int = 0
    priority: float = 0.0

    def demand(self, num_workers: int, num_ps: int = 0) -> Resources:
        """Total resources of ``num_workers`` workers and ``num_ps`` parameter servers."""
        return self.worker_demand * num_workers + self.ps_demand * num_ps

    @property
    def elastic(self) -> bool:
        """True if the job can run with other task counts than the ones it asked for."""
        return self.min_workers < self.max_workers or self.max_ps > max(self.num_ps, 0)

    @property
    def num_gpus(self) -> int:
        """GPUs the job asks for (its requested workers times GPUs per worker)."""
        return round(self.worker_demand.gpu * self.num_workers)


@dataclass(slots=True, eq=False)
class JobRun:
    """The engine's record of one job's progress. Schedulers read it; only the engine writes it.

    Progress is tracked lazily: ``work_done(t)`` integrates the current rate from
    ``progress_time_s`` (or from ``paused_until_s`` while the job is suspended for a rescale).

    Attributes:
        spec: the job's request.
        allocation: where its tasks run now (empty when it holds nothing).
        rate: measured training speed now, work units per second (0 when not running); includes
            interference noise, as a real scheduler would measure it.
        progress_s: work done at ``progress_time_s``.
        progress_time_s: time at which ``progress_s`` was last brought up to date.
        paused_until_s: the job makes no progress before this time (rescale / restart cost).
        first_start_s: when it first got resources (None before).
        finish_s: when it finished (None before).
        slots_run: scheduling points at which it held resources (DL2's ``d``); a property,
            counted by the engine's shared clock while the job runs (see `count_slots`).
        attained_gpu_s: GPU-seconds received so far (Tiresias' attained service).
        held_s: seconds it has held resources so far (a rescale's pause included); JCT minus
            this is the time it queued, preemptions included (``avg_queued_s``).
        observed: (num_ps, num_workers, speed) samples the scheduler could have measured.
        rescales: times its allocation changed while it was running.
        ideal_duration_s: duration at its requested allocation and best placement, for slowdown.
        version: bumped whenever its rate changes (stale completion events are ignored).
    """

    spec: JobSpec
    allocation: Allocation = field(default_factory=lambda: Allocation.EMPTY)
    rate: float = 0.0
    progress_s: float = 0.0
    progress_time_s: float = 0.0
    paused_until_s: float = 0.0
    first_start_s: float | None = None
    finish_s: float | None = None
    attained_gpu_s: float = 0.0
    held_s: float = 0.0
    observed: list[tuple[int, int, float]] = field(default_factory=list)
    rescales: int = 0
    ideal_duration_s: float = 0.0
    version: int = 0
    _slots_base: int = field(default=0, repr=False)
    _slots_clock: list[int] | None = field(default=None, repr=False)
    job_id: int = field(init=False, repr=False)
    """``spec.job_id``, kept as a field: read for every job at every point."""

    def __post_init__(self) -> None:
        self.job_id = self.spec.job_id

    @property
    def slots_run(self) -> int:
        clock = self._slots_clock
        return self._slots_base if clock is None else self._slots_base + clock[0]

    @slots_run.setter
    def slots_run(self, value: int) -> None:
        clock = self._slots_clock
        self._slots_base = value if clock is None else value - clock[0]

    def count_slots(self, clock: list[int] | None) -> None:
        """From now on add ``clock[0]``'s increments to `slots_run` (None: stop adding).

        The engine shares one one-element counter among its running jobs and bumps it once
        per scheduling point, instead of bumping every running job's count.
        """
        # `slots_run`'s getter and setter inlined (the engine calls this at every start and stop)
        old = self._slots_clock
        value = self._slots_base if old is None else self._slots_base + old[0]
        self._slots_clock = clock
        self._slots_base = value if clock is None else value - clock[0]

    def work_done(self, now_s: float) -> float:
        """Work done by ``now_s`` (same unit as ``spec.total_work``)."""
        start = max(self.progress_time_s, self.paused_until_s)
        if self.rate <= 0.0 or now_s <= start:
            return self.progress_s
        return min(self.spec.total_work, self.progress_s + self.rate * (now_s - start))

    def remaining_work(self, now_s: float) -> float:
        return max(0.0, self.spec.total_work - self.work_done(now_s))

    def attained_gpu_s_at(self, now_s: float) -> float:
        """GPU-seconds held up to ``now_s`` (Tiresias' attained service)."""
        held = self.allocation.num_workers * self.spec.worker_demand.gpu
        return self.attained_gpu_s + held * max(0.0, now_s - self.progress_time_s)

    @property
    def running(self) -> bool:
        return not self.allocation.is_empty

    @property
    def finished(self) -> bool:
        return self.finish_s is not None
