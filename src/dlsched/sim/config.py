"""Simulation settings: when to schedule, what rescaling costs, noise, horizon."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class RescaleCost:
    """Seconds a job makes no progress when its allocation changes.

    DL2 §6.3 (Fig. 11) measured hot scaling suspensions of 62–625 ms for adding 1–6 PS and
    checkpoint-restart taking tens of seconds; the defaults round these to 1 s and 30 s.

    Attributes:
        mode: ``"hot"`` (DL2's hot scaling) or ``"restart"`` (checkpoint, stop, relaunch).
        hot_s: suspension of a hot rescale, seconds.
        restart_s: suspension of a checkpoint-restart, seconds; also paid when a suspended job
            resumes, whatever the mode.
        per_model: model → (hot_s, restart_s) overriding the defaults for that model.
    """

    mode: Literal["hot", "restart"] = "hot"
    hot_s: float = 1.0
    restart_s: float = 30.0
    per_model: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def rescale_s(self, model: str) -> float:
        """Cost of resizing a running job."""
        hot, restart = self.per_model.get(model, (self.hot_s, self.restart_s))
        return hot if self.mode == "hot" else restart

    def resume_s(self, model: str) -> float:
        """Cost of restarting a suspended job from its checkpoint."""
        return self.per_model.get(model, (self.hot_s, self.restart_s))[1]


@dataclass(frozen=True)
class SimConfig:
    """How the simulator runs.

    Attributes:
        interval_s: periodic scheduling points every this many seconds (DL2's time slot), or
            None for event-driven scheduling only.
        on_events: also schedule at every arrival and completion.
        horizon_s: stop at this time; unfinished jobs are reported as such. None: run to the end.
        noise: relative std of multiplicative interference noise on speed, drawn per job and
            interval (and on every allocation change); 0 disables it.
        rescale: cost model for resizing and resuming jobs.
        seed: seed of the simulator's own randomness (noise).
        timeline_step_s: minimum spacing of timeline samples, seconds (None: ``interval_s``, or
            when event-driven 600 s or the arrival span / 2,000 if larger, so that a months-long
            trace keeps a timeline of a few thousand samples).
        idle_retry_s: when jobs wait on an idle cluster and nothing else will happen, ask the
            scheduler again after this many seconds (policies that delay jobs on purpose).
        max_idle_retries: after this many fruitless retries in a row the run stops with
            `SimulationStalled`.
        repack: after each decision, move every running job whose tasks span several servers
            onto one server that has room for all of them (`Executor.repack`); the move is a
            checkpoint-restart: the job pauses ``rescale.resume_s(model)`` seconds (the
            workload's restart cost). Off by default (jobs stay where they were placed).
    """

    interval_s: float | None = None
    on_events: bool = True
    horizon_s: float | None = None
    noise: float = 0.0
    rescale: RescaleCost = field(default_factory=RescaleCost)
    seed: int = 0
    timeline_step_s: float | None = None
    idle_retry_s: float = 60.0
    max_idle_retries: int = 1000
    repack: bool = False

    def __post_init__(self) -> None:
        if self.interval_s is None and not self.on_events:
            raise ValueError(
                "SimConfig needs interval_s or on_events, or nothing is ever scheduled"
            )
        if self.interval_s is not None and self.interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {self.interval_s}")
        if self.noise < 0:
            raise ValueError(f"noise must be >= 0, got {self.noise}")
