"""Per-job state of the live loop and the actions it runs on real jobs without waiting.

Every action on a job (start, resize, suspend, resume, finish, and the repairs after a fault)
runs as a `JobOp` in a daemon thread: the loop starts it, goes on with the other jobs, and
collects the outcome at a later poll. One action at a time per job; the loop talks to a job's
coordinator only while no action of the job runs. `repair_needed` reads a job's status and says
what a fault needs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlsched.core import Allocation, JobRun
from dlsched.live.job import LiveJob
from dlsched.live.stream import LiveJobRequest

log = logging.getLogger(__name__)


class JobOp:
    """One action on a job, run in a daemon thread.

    Args:
        action: what it does (`dlsched.live.snapshot.ScalingEvent.action`).
        before, after: (PS, workers) before and after.
        t_s: when it started, seconds into the run.
        fn: the action; returns the workers' suspension in seconds (0 if none).
        note: what fault it repairs (for the event), empty if none.
        steps_redone: steps the repair makes the job do again.
        start: start the thread now (else call `start`).

    Attributes:
        restore: the allocation the books give back if a resize fails (None: none).
    """

    def __init__(
        self,
        action: str,
        before: tuple[int, int],
        after: tuple[int, int],
        t_s: float,
        fn: Callable[[], float],
        note: str = "",
        steps_redone: int = 0,
        start: bool = True,
    ) -> None:
        self.action, self.before, self.after, self.t_s = action, before, after, t_s
        self.note, self.steps_redone = note, steps_redone
        self.suspension_s = 0.0
        self.seconds = 0.0
        self.error: BaseException | None = None
        self.restore: Allocation | None = None
        self._fn = fn
        self._done = threading.Event()
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name=f"live-{action}", daemon=True)
        if start:
            self.start()

    def start(self) -> None:
        self._t0 = time.perf_counter()
        self._thread.start()

    def _run(self) -> None:
        try:
            self.suspension_s = self._fn()
        except BaseException as exc:  # handed to the loop, which decides
            self.error = exc
        finally:
            self.seconds = time.perf_counter() - self._t0
            self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def join(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds; True if the action has ended."""
        return self._done.wait(timeout_s)


@dataclass(slots=True)
class LiveEntry:
    """The loop's state of one job (the `JobRun` is what schedulers see).

    Attributes:
        failed: why the job was given up (empty while it is not).
        start_failures: failed starts and resumes in a row.
        repairs: repairs after faults so far (the job is given up after `MAX_REPAIRS`).
        steps: synchronous steps done (highest measured); speed: steps/s measured.
        steps_redone: steps done again after faults, in all.
        status_req: a status request in flight: (request number, when sent, monotonic s).
        status_misses: status requests in a row that got no answer in time.
        rollbacks_seen: times of the coordinator's rollback events already counted.
    """

    request: LiveJobRequest
    run: JobRun
    job: LiveJob | None = None
    arrived: bool = False
    failed: str = ""
    start_failures: int = 0
    repairs: int = 0
    steps: int = 0
    speed: float = 0.0
    steps_redone: int = 0
    best_speed: dict[tuple[int, int], float] = field(default_factory=dict)
    op: JobOp | None = None
    status_req: tuple[int, float] | None = None
    status_misses: int = 0
    rollbacks_seen: set[float] = field(default_factory=set)

    @property
    def busy(self) -> bool:
        """An action on the job is running."""
        return self.op is not None and not self.op.done


def size(alloc: Allocation) -> tuple[int, int]:
    return (alloc.num_ps, alloc.num_workers)


def repair_needed(status: dict[str, Any], alloc: Allocation) -> tuple[str, str] | None:
    """What a running job's ``status`` (`LiveJob.status`) needs to hold ``alloc`` again:
    ``("relaunch", why)`` when it cannot go on (no PS or no worker left, or the coordinator
    gave up), ``("replace", why)`` when members died (fewer PS or workers than held), None
    when it is whole or a round of its coordinator (rollback, scaling) is still settling."""
    if status.get("failed"):
        return "relaunch", f"coordinator gave up: {status['failed']}"
    if status.get("finished") or status.get("round") is not None:
        return None
    roster = status.get("roster")
    if not isinstance(roster, dict):
        return None
    have = (len(roster.get("ps", {})), len(roster.get("workers", [])))
    if have[0] == 0 or have[1] == 0:
        return "relaunch", f"no {'PS' if have[0] == 0 else 'worker'} left"
    if have != size(alloc):
        return "replace", f"{have[0]} PS and {have[1]} workers alive of {size(alloc)}"
    return None


def new_rollbacks(entry: LiveEntry, status: dict[str, Any]) -> int:
    """Steps the coordinator rolled back (after a PS died) since the last call."""
    redone = 0
    for e in status.get("events", []):
        if isinstance(e, dict) and e.get("kind") == "rollback":
            t = float(e.get("t", 0.0))
            if t not in entry.rollbacks_seen:
                entry.rollbacks_seen.add(t)
                redone += int(e.get("steps_rolled_back", 0))
    return redone


# ---------------------------------------------------------------- the actions' functions


def start_job(job: LiveJob) -> float:
    job.start()
    return 0.0


def resume_job(job: LiveJob, after: tuple[int, int]) -> float:
    job.resume(*after)
    return 0.0


def suspend_job(job: LiveJob) -> float:
    job.suspend()
    return 0.0


def reset_job(job: LiveJob) -> float:
    job.reset_to_snapshot()
    return 0.0


def stop_job(job: LiveJob) -> float:
    job.stop(timeout_s=5.0)
    return 0.0


def restart_coordinator(job: LiveJob) -> float:
    job.restart_coordinator()
    return 0.0


def finish_job(job: LiveJob, params_path: Path | None) -> float:
    """Save the finished job's parameters (if asked), then stop its processes."""
    if params_path is not None:
        import torch

        params_path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(job.parameters(), params_path)
    job.stop(timeout_s=5.0)
    return 0.0
