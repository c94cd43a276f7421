"""PROTOTYPE: build `las_core.replay`'s arrays from a `Simulator` and its records back."""

from __future__ import annotations

import numpy as np

from dlsched.core import Allocation
from dlsched.sim.las_core import DONE, compiled_replay, replay
from dlsched.sim.result import JobRecord
from dlsched.sim.simulator import Simulator


def arrays(sim: Simulator) -> tuple[np.ndarray, ...]:
    """The job table of ``sim`` (arrival order) and its cluster's capacities."""
    specs = sim.specs
    n, S = len(specs), sim.cluster.num_servers
    submit = np.array([s.submit_time_s for s in specs], dtype=np.float64)
    jid = np.array([s.job_id for s in specs], dtype=np.int64)
    nw = np.array([s.num_workers for s in specs], dtype=np.int64)
    dem = np.array([s.worker_demand.as_tuple() for s in specs], dtype=np.float64).reshape(n, 3)
    total = np.array([s.total_work for s in specs], dtype=np.float64)
    resume = np.array([sim.config.rescale.resume_s(s.model) for s in specs], dtype=np.float64)
    speed = np.zeros((n, S + 1))
    for i, spec in enumerate(specs):
        w = spec.num_workers
        for k in range(1, min(w, S) + 1):
            workers = tuple((s, 1) for s in range(k - 1)) + ((k - 1, w - (k - 1)),)
            speed[i, k] = sim.model.speed(spec, Allocation(workers, ()))
    cap = np.array(sim.cluster.capacity_array, dtype=np.float64)
    keys = np.column_stack([dem, nw.astype(np.float64)]) if n else np.zeros((0, 4))
    shape = np.unique(keys, axis=0, return_inverse=True)[1].reshape(n).astype(np.int64)
    return submit, jid, nw, dem, total, resume, speed, cap, shape


def records(sim: Simulator, compiled: bool = True) -> list[JobRecord] | None:
    """The per-job records of ``sim`` replayed by the kernel (by job id), or None (stalled)."""
    status, first, finish, _held, order, _d, _end, _bg, _bc = (compiled_replay() if compiled else replay)(*arrays(sim))  # type: ignore[operator]
    if status != DONE:
        return None
    out = []
    for i in sorted(range(len(sim.specs)), key=lambda i: sim.specs[i].job_id):
        spec = sim.specs[i]
        ideal = spec.total_work / max(sim.model.ideal_speed(spec), 1e-12)
        jct = finish[i] - spec.submit_time_s
        out.append(
            JobRecord(
                spec.job_id, spec.model, spec.submit_time_s, float(first[i]), float(finish[i]),
                float(jct), float(first[i] - spec.submit_time_s), ideal,
                jct / ideal if ideal > 0 else float("nan"), ideal / jct if jct > 0 else 1.0,
                spec.num_workers, spec.num_ps, spec.num_gpus, 0,
            )
        )  # fmt: skip
    return out
