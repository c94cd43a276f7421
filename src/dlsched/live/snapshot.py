"""What a live run shows and records: job rows, the per-slot snapshot, and scaling events."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class JobRow:
    """One job as the live view shows it.

    Attributes:
        state: ``waiting`` (not arrived), ``pending``, ``running``, ``suspended``, ``finished``
            or ``failed``.
        steps: synchronous steps done; total_steps: steps to do.
        speed: measured steps per second (0 when unknown or not running).
    """

    job_id: int
    model: str
    state: str
    num_ps: int
    num_workers: int
    steps: int
    total_steps: int
    speed: float
    rescales: int


@dataclass(frozen=True, slots=True)
class LiveSnapshot:
    """What the live view renders after each slot.

    Attributes:
        now_s: seconds since the run started.
        slot: scheduling slots so far.
        jobs: every job of the stream.
        used: resources held now; total: capacity of this machine.
        processes: processes of the jobs running now.
    """

    now_s: float
    slot: int
    jobs: list[JobRow]
    used: tuple[float, float, float]
    total: tuple[float, float, float]
    processes: int


@dataclass(frozen=True, slots=True)
class ScalingEvent:
    """One action on a real job.

    Attributes:
        t_s: seconds since the run started.
        action: ``start``, ``hot`` (hot scaling), ``suspend``, ``resume``, ``finish``; after a
            fault ``replace`` (dead members replaced by hot scaling), ``relaunch`` (every
            process restarted from the last snapshot), ``rollback`` (the coordinator reloaded
            a snapshot after a PS died), ``restart_coordinator``; ``failed`` (an action that
            failed; the job goes on) and ``job_failed`` (the job is given up).
        before, after: (PS, workers).
        seconds: wall time of the action; suspension_s: workers' suspension (hot only).
        error: why a failed action failed, or what fault an action repairs.
        steps_redone: synchronous steps done again because of the fault (lost since the last
            snapshot).
    """

    t_s: float
    job_id: int
    action: str
    before: tuple[int, int]
    after: tuple[int, int]
    seconds: float
    suspension_s: float = 0.0
    error: str = ""
    steps_redone: int = 0


def job_state(
    *, failed: bool, finished: bool, running: bool, suspended: bool, arrived: bool
) -> str:
    """A job's `JobRow.state`, the first that holds in this order."""
    if failed:
        return "failed"
    if finished:
        return "finished"
    if running:
        return "running"
    if suspended:
        return "suspended"
    return "pending" if arrived else "waiting"
