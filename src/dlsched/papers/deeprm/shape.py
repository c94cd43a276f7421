"""The sizes of DeepRM's state (`DeepRMShape`) and one jobset in steps and slots (`Jobset`).

Split from `dlsched.papers.deeprm.state` (which re-exports both) to keep files small; the
module docstring there says what the state is and where each rule comes from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dlsched.workloads.base import Workload
from dlsched.workloads.deeprm import SLOTS_PER_R, STEP_S

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class DeepRMShape:
    """Sizes of DeepRM's state (defaults: §4.1 and the code's ``parameters.py``).

    Attributes:
        horizon: ``T``, time steps the images look ahead (20).
        slots: ``M``, job slots shown as images (10).
        backlog: most jobs counted in the backlog (60); later arrivals are dropped.
        res_slots: ``R``, slots of capacity per resource (20 = the ``deeprm`` workload's unit).
        num_res: ``d``, resources (2).
        ranked: False (the paper's): slots hold jobs in arrival order, the backlog is a FIFO
            of at most ``backlog`` jobs and later arrivals are dropped. True (dlsched's, for
            long queues): the slots always show the ``M`` shortest waiting jobs (duration, then
            arrival), slot 1 the shortest; every other waiting job is in the backlog, which has
            no cap (nothing is dropped, as in the Simulator) and whose image shows at most
            ``backlog`` of them. The image and the network are the same size either way.
    """

    horizon: int = 20
    slots: int = 10
    backlog: int = 60
    res_slots: int = SLOTS_PER_R
    num_res: int = 2
    ranked: bool = False

    def __post_init__(self) -> None:
        for name in ("horizon", "slots", "res_slots", "num_res"):
            if getattr(self, name) < 1:
                raise ValueError(f"DeepRMShape: {name} must be >= 1, got {getattr(self, name)}")
        if self.backlog < 0:
            raise ValueError(f"DeepRMShape: backlog must be >= 0, got {self.backlog}")

    @property
    def backlog_width(self) -> int:
        """Columns of the backlog block."""
        return math.ceil(self.backlog / self.horizon)

    @property
    def image_width(self) -> int:
        """Columns of the whole image."""
        return self.num_res * (1 + self.slots) * self.res_slots + self.backlog_width

    @property
    def obs_dim(self) -> int:
        """Pixels of the image (``T × image_width``)."""
        return self.horizon * self.image_width

    @property
    def num_actions(self) -> int:
        """``M + 1`` (∅ and one per slot)."""
        return self.slots + 1

    @property
    def num_index(self) -> int:
        """Entries `compact_index` gives per state."""
        return self.horizon * self.num_res + self.slots * self.num_res + 1

    def shapes(self) -> dict[str, int]:
        """The checkpoint card's shape fields (``ranked`` only when set: older cards lack it)."""
        fields = {
            "T": self.horizon,
            "M": self.slots,
            "backlog": self.backlog,
            "R": self.res_slots,
            "d": self.num_res,
            "obs_dim": self.obs_dim,
            "num_actions": self.num_actions,
        }
        if self.ranked:
            fields["ranked"] = 1
        return fields

    @staticmethod
    def from_shapes(shapes: dict[str, int]) -> DeepRMShape:
        """The shape a checkpoint card's ``shapes`` describe (paper defaults for missing keys)."""
        return DeepRMShape(
            horizon=shapes.get("T", 20),
            slots=shapes.get("M", 10),
            backlog=shapes.get("backlog", 60),
            res_slots=shapes.get("R", SLOTS_PER_R),
            num_res=shapes.get("d", 2),
            ranked=bool(shapes.get("ranked", 0)),
        )


@dataclass(frozen=True)
class Jobset:
    """One sequence of DeepRM jobs, in time steps and slots, sorted by arrival.

    Attributes:
        arrival: arrival step of each job.
        length: duration ``T_j`` in steps (>= 1).
        demand: ``(J, d)`` slots of each resource.
        job_ids: the dlsched job id of each job (to match Simulator records).
    """

    arrival: IntArray
    length: IntArray
    demand: IntArray
    job_ids: IntArray

    def __len__(self) -> int:
        return int(self.arrival.shape[0])

    @staticmethod
    def from_workload(workload: Workload, shape: DeepRMShape | None = None) -> Jobset:
        """Convert a ``deeprm`` workload (durations in `STEP_S`, demands in slots of cpu, mem).

        Raises:
            ValueError: a job's duration or demand is not a whole number of steps/slots, is
                longer than the horizon, or larger than a resource.
        """
        shape = shape or DeepRMShape()
        n = len(workload.jobs)
        arrival = np.zeros(n, np.int64)
        length = np.zeros(n, np.int64)
        demand = np.zeros((n, 2), np.int64)
        ids = np.zeros(n, np.int64)
        for i, spec in enumerate(sorted(workload.jobs, key=lambda j: (j.submit_time_s, j.job_id))):
            values = (
                spec.submit_time_s / STEP_S,
                spec.total_work / STEP_S,
                spec.worker_demand.cpu,
                spec.worker_demand.mem,
            )
            rounded = [round(v) for v in values]
            if any(abs(v - r) > 1e-6 for v, r in zip(values, rounded, strict=True)):
                raise ValueError(f"deeprm jobset: job {spec.job_id} is not on whole steps/slots")
            arrival[i], length[i], demand[i, 0], demand[i, 1] = rounded
            ids[i] = spec.job_id
        if n and (length.min() < 1 or length.max() > shape.horizon):
            raise ValueError(f"deeprm jobset: durations must be 1..{shape.horizon} steps")
        if n and (demand.min() < 0 or demand.max() > shape.res_slots):
            raise ValueError(f"deeprm jobset: demands must be 0..{shape.res_slots} slots")
        return Jobset(arrival, length, demand, ids)
