"""The engine: the event queue, the simulator with its public stepping API, the shared
executor that applies decisions, and the run's metrics.

It knows no scheduler or workload by name; `dlsched.runner.simulate` (also `dlsched.simulate`)
resolves names and runs one simulation in one call.
"""

from __future__ import annotations

from dlsched.sim.config import RescaleCost, SimConfig
from dlsched.sim.executor import Actuator, Executor
from dlsched.sim.result import JobRecord, Result, RunTotals
from dlsched.sim.simulator import SimulationStalled, Simulator

__all__ = [
    "Actuator",
    "Executor",
    "JobRecord",
    "RescaleCost",
    "Result",
    "RunTotals",
    "SimConfig",
    "SimulationStalled",
    "Simulator",
]
