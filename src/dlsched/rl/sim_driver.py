"""Drive the existing `Simulator` one scheduling point at a time (for Gymnasium environments).

`Simulator.run` calls its scheduler synchronously at every scheduling point. An environment
needs the inverse: stop at a scheduling point, let the agent take several actions, then hand the
decision over and run to the next point. `SimDriver` does that with the simulator's own methods
(the body of ``Simulator.run``'s loop split in two halves); nothing of the simulation is
re-implemented, so an environment episode and `dlsched.simulate` with the same decisions give
the same trajectory.

Example::

    driver = SimDriver(workload, seed=3)
    t = driver.next_point()             # first scheduling point (None: episode over)
    while t is not None:
        view = driver.view()
        driver.apply(Decision(...))     # decide this point, simulate to the next
        t = driver.next_point()
    result = driver.result()
"""

from __future__ import annotations

import math
import time
from typing import ClassVar

from dlsched.core import ClusterView, Decision
from dlsched.placement import make_placement
from dlsched.schedulers.base import BaseScheduler
from dlsched.sim import RescaleCost, Result, SimConfig, Simulator
from dlsched.sim.engine import EventKind
from dlsched.workloads.base import Workload


class _Handover(BaseScheduler):
    """The scheduler the simulator calls: returns whatever decision the driver was given."""

    name = "env"

    def __init__(self, preemptive: bool) -> None:
        self.preemptive = preemptive  # type: ignore[misc]
        self.decision = Decision()

    def decide(self, view: ClusterView) -> Decision:
        return self.decision


class SimDriver:
    """One simulation of ``workload``, advanced scheduling point by scheduling point.

    Args:
        workload: jobs, cluster, model and settings.
        seed: seed of the simulator's noise.
        preemptive: whether decisions are the whole desired state (elastic; DL2) or only start
            pending jobs.
        horizon_s: stop at this time (s); None runs until every job finished.
        rescale: rescale/restart cost model (default `RescaleCost()`).
    """

    is_oracle: ClassVar[bool] = False

    def __init__(
        self,
        workload: Workload,
        *,
        seed: int = 0,
        preemptive: bool = True,
        horizon_s: float | None = None,
        rescale: RescaleCost | None = None,
    ) -> None:
        self.workload = workload
        self._handover = _Handover(preemptive)
        config = SimConfig(
            interval_s=workload.interval_s,
            on_events=workload.on_events,
            horizon_s=horizon_s,
            noise=workload.noise,
            rescale=rescale or RescaleCost(),
            seed=seed,
        )
        self.sim = Simulator(
            workload.jobs,
            workload.make_cluster(),
            workload.model,
            self._handover,
            make_placement(workload.placement),
            config,
            workload_name=workload.name,
        )
        self._wall0 = time.perf_counter()
        self._started = False
        self.point_s: float | None = None
        self.points = 0

    def next_point(self) -> float | None:
        """Simulate up to the next scheduling point with active jobs; its time (s), or None."""
        sim = self.sim
        if not self._started:
            self._started = True
            if sim.config.interval_s is not None and sim.specs:
                sim.queue.push(sim._next_tick_after(sim.specs[0].submit_time_s), EventKind.TICK)
        horizon = sim.config.horizon_s if sim.config.horizon_s is not None else math.inf
        while True:
            t = min(sim.queue.peek_time(), sim._next_arrival_time())
            if t == math.inf or t > horizon:
                if horizon < math.inf:
                    sim._advance(horizon)
                self.point_s = None
                return None
            sim._advance(t)
            point = sim._handle_events_at(t)
            if point and (sim.pending or sim.running):
                self.point_s = t
                return t

    def view(self) -> ClusterView:
        """What a scheduler sees at the current point (call after `next_point`)."""
        if self.point_s is None:
            raise ValueError("no current scheduling point: call next_point() first")
        sim = self.sim
        return ClusterView(
            now_s=self.point_s,
            cluster=sim.cluster,
            pending=sim.pending,
            running=list(sim.running.values()),
            interval_s=sim.config.interval_s,
            last_status=sim.last_status,
        )

    def apply(self, decision: Decision) -> None:
        """Hand ``decision`` to the simulator at the current point (it applies it as usual)."""
        if self.point_s is None:
            raise ValueError("no current scheduling point: call next_point() first")
        self._handover.decision = decision
        self.sim._schedule_point(self.point_s)
        self.points += 1
        self.point_s = None

    def result(self) -> Result:
        """Metrics of the run so far (call once `next_point` returned None)."""
        self.sim._advance(self.sim.now_s)
        result = Result.build(self.sim, wall_s=time.perf_counter() - self._wall0)
        result.params = dict(self.workload.params)
        return result
