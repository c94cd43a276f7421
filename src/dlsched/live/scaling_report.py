"""What a resize of a live job reports (`ScalingReport`), filled from the coordinator's round
report."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from dlsched.live.config import Roster


@dataclass(slots=True)
class ScalingReport:
    """What one `LiveJob.scale_to` did and how long each part took.

    For hot scaling the four steps of DL2 §5 (Fig. 12) are timed separately; only step 4
    interrupts training. For checkpoint-restart, ``details`` splits the suspension into
    checkpointing, stopping and relaunching.

    Attributes:
        mode: ``"hot"`` or ``"restart"``.
        before: (PS, workers) before.
        after: (PS, workers) after.
        clock: version (step count) at which the change took effect.
        added_ps, removed_ps, added_workers, removed_workers: member ids.
        registration_s: step 1, slowest newcomer's REGISTER round trip, seconds.
        assignment_s: step 2, best-fit assignment + clock handshake with all members, seconds.
        migration_s: step 3, from the first old PS reaching the clock to the last PS holding
            its new blocks, seconds.
        worker_update_s: step 4, mean suspension of the workers that kept training, seconds
            (hot: from reaching the clock to resuming; restart: from stopping to the relaunched
            workers' first step).
        suspension_s: worker id → its suspension, seconds (hot only).
        clock_wait_s: from the clock's commit to the first PS reaching it (training goes on).
        moved_params: parameters that changed PS.
        moved_bytes: bytes sent between PS (parameters and momentum).
        wall_s: duration of the whole call (includes starting new processes), seconds.
        details: mode-specific timings, seconds. Hot: ``stall_s``, the mean delay the change
            added to the workers' step cadence (interval from the start of the last step before
            the clock to the resumption, minus the usual step interval) — a stricter measure
            than DL2's suspension, which starts only once the last parameters arrived.
    """

    mode: str
    before: tuple[int, int]
    after: tuple[int, int]
    clock: int = 0
    added_ps: list[int] = field(default_factory=list)
    removed_ps: list[int] = field(default_factory=list)
    added_workers: list[int] = field(default_factory=list)
    removed_workers: list[int] = field(default_factory=list)
    registration_s: float = 0.0
    assignment_s: float = 0.0
    migration_s: float = 0.0
    worker_update_s: float = 0.0
    suspension_s: dict[int, float] = field(default_factory=dict)
    clock_wait_s: float = 0.0
    moved_params: int = 0
    moved_bytes: int = 0
    wall_s: float = 0.0
    details: dict[str, float] = field(default_factory=dict)


def fill_hot_report(
    report: ScalingReport,
    rep: dict[str, Any],
    roster: Roster,
    new: Roster,
    remove_ps: list[int],
    remove_w: list[int],
) -> None:
    """Fill ``report`` from the coordinator's report ``rep`` of a hot scaling round that moved
    the job from ``roster`` to ``new``."""
    report.clock = int(rep["clock"])
    report.added_ps = sorted(set(new.ps) - set(roster.ps))
    report.removed_ps = sorted(remove_ps)
    report.added_workers = sorted(set(new.workers) - set(roster.workers))
    report.removed_workers = sorted(remove_w)
    report.registration_s = float(rep["registration_s"])
    report.assignment_s = float(rep["assignment_s"])
    report.migration_s = float(rep["migration_s"])
    report.suspension_s = {int(k[1:]): float(v) for k, v in rep["suspension_s"].items()}
    report.worker_update_s = (
        statistics.fmean(report.suspension_s.values()) if report.suspension_s else 0.0
    )
    report.clock_wait_s = float(rep["clock_wait_s"])
    report.moved_params = int(rep["moved_params"])
    report.moved_bytes = int(rep["moved_bytes"])
    stall = [float(v) for v in rep.get("stall_s", {}).values()]
    report.details = {"clock_retries": float(rep["clock_retries"])}
    if stall:
        report.details["stall_s"] = statistics.fmean(stall)
