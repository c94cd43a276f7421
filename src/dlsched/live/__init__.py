"""Live elastic training: parameter servers and workers as real processes over ZeroMQ, resized
while they train with DL2's hot scaling (seed 000 §5) or by checkpoint-restart.

Modules: `config` (settings, roster), `protocol` (wire format), `assignment` (best-fit blocks,
batch slices, removals), `models` (models, synthetic digits data, data order), `checkpoint`
(block files), `node`/`ps`/`worker`/`coordinator` (the processes), `launcher` (process start and
cleanup), `job` (`LiveJob`, the API), `reference` (single-process PyTorch baseline), `stream`
(job streams for the live loop), `cluster` (`LiveCluster`, the executor that lets any scheduler
drive real jobs), `online` (the hook for online learning).
"""

from dlsched.live.cluster import LiveCluster, LiveSnapshot, ScalingEvent
from dlsched.live.config import JobConfig, Roster
from dlsched.live.job import LiveJob, LiveJobError, ScalingReport
from dlsched.live.reference import reference_train
from dlsched.live.stream import LiveJobRequest, make_stream

__all__ = [
    "JobConfig",
    "LiveCluster",
    "LiveJob",
    "LiveJobError",
    "LiveJobRequest",
    "LiveSnapshot",
    "Roster",
    "ScalingEvent",
    "ScalingReport",
    "make_stream",
    "reference_train",
]
