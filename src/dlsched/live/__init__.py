"""Live elastic training: parameter servers and workers as real processes over ZeroMQ, resized
while they train with DL2's hot scaling (seed 000 §5) or by checkpoint-restart.

Modules: `config` (settings, roster), `protocol` (wire format), `assignment` (best-fit blocks,
batch slices, removals), `models` (models, synthetic digits data, data order), `checkpoint`
(block files), `node`/`ps`/`worker`/`coordinator` (the processes), `launcher` (process start and
cleanup), `job` (`LiveJob`, the API), `reference` (single-process PyTorch baseline).
"""

from dlsched.live.config import JobConfig, Roster
from dlsched.live.job import LiveJob, LiveJobError, ScalingReport
from dlsched.live.reference import reference_train

__all__ = ["JobConfig", "LiveJob", "LiveJobError", "Roster", "ScalingReport", "reference_train"]
