"""The coordinator's rounds as data: their kinds, phases, and the pure decisions about them.

A round is one multi-message operation (at most one at a time): starting the job, a scaling
round (DL2 §5), a checkpoint, or a rollback after a PS failure. Its phases:

=========== ========================================================================
``JOIN``    waiting for newcomers to register (start, scale)
``START``   START sent, waiting for every member's READY / RESUMED (start)
``PREPARE`` new roster and scaling clock sent, waiting for every ACK (scale, checkpoint)
``MIGRATE`` COMMIT sent, waiting for every PS's MIGRATED (scale, checkpoint)
``SUSPEND`` waiting for every worker to stop at the clock (checkpoint)
``ROLLBACK`` ROLLBACK sent, waiting for every PS's ROLLED_BACK (rollback)
``RESUME``  RESUME sent, waiting for every worker's RESUMED (scale, rollback)
=========== ========================================================================

Nothing here sends a message or reads a clock: the functions take ``now`` (monotonic seconds)
and return what to do, so they are tested with a fake clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from dlsched.live.config import Roster


class RoundKind(str, Enum):
    START = "start"
    SCALE = "scale"
    CHECKPOINT = "checkpoint"
    ROLLBACK = "rollback"

    def __str__(self) -> str:
        return self.value


class Phase(str, Enum):
    JOIN = "join"
    START = "start"
    PREPARE = "prepare"
    MIGRATE = "migrate"
    SUSPEND = "suspend"
    ROLLBACK = "rollback"
    RESUME = "resume"

    def __str__(self) -> str:
        return self.value


FINAL_PHASES = frozenset({Phase.START, Phase.RESUME, Phase.SUSPEND})
"""Phases in which a round is over once nobody is awaited any more."""


class FailureAction(str, Enum):
    """What the death of members means for the round in flight."""

    ABORT = "abort"
    """Abort the round; members keep the roster they train on."""
    ABORT_AND_ROLLBACK = "abort_and_rollback"
    """Abort the round and resynchronise everyone on the last snapshot (last good state)."""
    DROP_WAITING = "drop_waiting"
    """Only dead workers, while resuming: stop waiting for them, reconfigure after the round."""


@dataclass(slots=True)
class Round:
    """One multi-message operation in flight.

    Attributes:
        kind: start, scale, checkpoint or rollback.
        client: routing identity of the owner's control connection to answer (None: none).
        req: the owner's request number.
        deadline: the round is aborted at this time, monotonic seconds.
        phase: where the round is (see the module docstring).
        join: nonces of the newcomers the round waits for.
        remove_ps, remove_workers: member ids the round removes.
        roster: the roster the round moves to.
        clock: scaling clock (version at which the change takes effect).
        version: version to start or roll back at.
        files: block files to restore from (start, rollback).
        ckpt_dir: directory of a checkpoint round (resolved, inside the job directory).
        participants: member keys that take part.
        waiting: member keys whose answer the current phase waits for.
        nacks: versions of members that had passed the proposed clock.
        retries: clock retries.
        t_assign0: start of the assignment step, perf-counter seconds.
        t_commit_wall: wall-clock time of the COMMIT.
        assign_s: duration of the assignment step, seconds.
        moved: parameters that change PS.
        migrated, resumed: the MIGRATED / RESUMED bodies by member key.
        suspended: worker key → wall time it stopped at the clock.
    """

    kind: RoundKind
    client: bytes | None
    req: int
    deadline: float
    phase: Phase = Phase.JOIN
    join: set[str] = field(default_factory=set)
    remove_ps: set[int] = field(default_factory=set)
    remove_workers: set[int] = field(default_factory=set)
    roster: Roster | None = None
    clock: int = 0
    version: int = 0
    files: list[str] | None = None
    ckpt_dir: str = ""
    participants: set[str] = field(default_factory=set)
    waiting: set[str] = field(default_factory=set)
    nacks: list[int] = field(default_factory=list)
    retries: int = 0
    t_assign0: float = 0.0
    t_commit_wall: float = 0.0
    assign_s: float = 0.0
    moved: int = 0
    migrated: dict[str, dict[str, Any]] = field(default_factory=dict)
    resumed: dict[str, dict[str, Any]] = field(default_factory=dict)
    suspended: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, str]:
        """``{"kind", "phase"}`` as plain strings (status replies, state file)."""
        return {"kind": self.kind.value, "phase": self.phase.value}


def new_round(
    kind: RoundKind, client: bytes | None, req: int, now: float, timeout_s: float
) -> Round:
    """A round of ``kind`` opened at ``now`` that must finish within ``timeout_s`` seconds."""
    return Round(kind, client, req, now + timeout_s)


def timed_out(r: Round | None, now: float) -> bool:
    """True once ``now`` reaches the round's deadline."""
    return r is not None and now >= r.deadline


def rollback_needed_on_abort(r: Round) -> bool:
    """True when aborting ``r`` leaves members half-way (they acknowledged a clock, migrated or
    rolled back): everyone must then resynchronise on the last snapshot. A round still waiting
    for newcomers, or a start, changed nothing anyone trains on."""
    return r.phase != Phase.JOIN and r.kind in (
        RoundKind.SCALE,
        RoundKind.CHECKPOINT,
        RoundKind.ROLLBACK,
    )


def is_finished(r: Round) -> bool:
    """True when the round has reached a final phase and awaits nobody."""
    return not r.waiting and r.phase in FINAL_PHASES


def on_failures(r: Round, dead_keys: set[str], dead_ps: bool, in_roster: set[str]) -> FailureAction:
    """What members ``dead_keys`` dying means for round ``r``.

    Args:
        r: the round in flight.
        dead_keys: keys of the members just declared dead.
        dead_ps: whether one of them is a PS.
        in_roster: keys of the members of the current roster.
    """
    if r.kind == RoundKind.ROLLBACK:
        return FailureAction.ABORT_AND_ROLLBACK
    if r.kind == RoundKind.START:
        return FailureAction.ABORT
    if r.phase == Phase.RESUME and not dead_ps:
        return FailureAction.DROP_WAITING
    if r.phase == Phase.JOIN and not (dead_keys & in_roster):
        return FailureAction.ABORT
    return FailureAction.ABORT_AND_ROLLBACK


def acknowledge(r: Round, key: str, clock: int, epoch: int, ok: bool, version: int) -> bool:
    """Record ``key``'s ACK of the PREPARE for ``clock``/``epoch``; True if it counted."""
    if r.phase != Phase.PREPARE or r.roster is None or clock != r.clock:
        return False
    if epoch != r.roster.epoch or key not in r.waiting:
        return False
    r.waiting.discard(key)
    if not ok:
        r.nacks.append(version)
    return True
