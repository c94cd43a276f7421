"""Drive a `Simulator` one scheduling point at a time (for Gymnasium environments).

`Simulator.run` calls its scheduler synchronously at every scheduling point. An environment
needs the inverse: stop at a scheduling point, let the agent take several actions, then hand the
decision over and run to the next point. `SimDriver` builds the simulator of a `Workload` and
exposes its public stepping API (`Simulator.next_point`, `view`, `apply`, `result`); nothing of
the simulation is re-implemented, so an environment episode and `dlsched.simulate` with the same
decisions give the same trajectory.

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

from typing import ClassVar

from dlsched.core import ClusterView, Decision
from dlsched.placement import make_placement
from dlsched.schedulers.base import BaseScheduler
from dlsched.sim import RescaleCost, Result, SimConfig, Simulator
from dlsched.workloads.base import Workload


class _Agent(BaseScheduler):
    """Stands for the agent in the simulator: its name and preemption; decisions come by
    `SimDriver.apply`, never by ``decide``."""

    name = "env"

    def __init__(self, preemptive: bool) -> None:
        self.preemptive = preemptive  # type: ignore[misc]

    def decide(self, view: ClusterView) -> Decision:
        raise RuntimeError("a driven simulation takes its decisions through SimDriver.apply")


class SimDriver:
    """One simulation of ``workload``, advanced scheduling point by scheduling point.

    Args:
        workload: jobs, cluster, model and settings.
        seed: seed of the simulator's noise.
        preemptive: whether decisions are the whole desired state (elastic; DL2) or only start
            pending jobs.
        horizon_s: stop at this time (s); None runs until every job finished.
        rescale: rescale/restart cost model (default the workload's, else `RescaleCost()`).
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
        config = SimConfig(
            interval_s=workload.interval_s,
            on_events=workload.on_events,
            horizon_s=horizon_s,
            noise=workload.noise,
            rescale=rescale or workload.rescale or RescaleCost(),
            seed=seed,
        )
        self.sim = Simulator(
            workload.jobs,
            workload.make_cluster(),
            workload.model,
            _Agent(preemptive),
            make_placement(workload.placement),
            config,
            workload_name=workload.name,
        )
        self.point_s: float | None = None
        self.points = 0

    def next_point(self) -> float | None:
        """Simulate up to the next scheduling point with active jobs; its time (s), or None."""
        self.point_s = self.sim.next_point()
        return self.point_s

    def view(self) -> ClusterView:
        """What a scheduler sees at the current point (call after `next_point`)."""
        if self.point_s is None:
            raise ValueError("no current scheduling point: call next_point() first")
        return self.sim.view()

    def apply(self, decision: Decision) -> None:
        """Hand ``decision`` to the simulator at the current point (it applies it as usual)."""
        if self.point_s is None:
            raise ValueError("no current scheduling point: call next_point() first")
        self.sim.apply(decision)
        self.points += 1
        self.point_s = None

    def result(self) -> Result:
        """Metrics of the run so far (call once `next_point` returned None)."""
        result = self.sim.result()
        result.params = dict(self.workload.params)
        return result
