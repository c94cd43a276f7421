"""Live elastic training: parameter servers and workers as real processes over ZeroMQ, resized
while they train with DL2's hot scaling (seed 000 §5) or by checkpoint-restart.

Modules:

- settings and data: `config` (`JobConfig`, `Roster`), `assignment` (best-fit blocks, batch
  slices, removals), `models` (models, synthetic digits data, data order), `checkpoint` (block
  files; paths confined to the job directory);
- wire: `protocol` (frames, per-message HMAC-SHA256 with sequence numbers against forgery and
  replay, random connection identities; the job secret never travels);
- coordinator: `rounds` (round kinds and phases as enums, pure decisions taking ``now``),
  `membership` (registration, heartbeats, failure detection, speed and scaling clock),
  `coord_rounds` (state and round transitions), `coord_core` (message dispatch, owner requests;
  a failing handler aborts the round), `coord_store` (state file, snapshot directories),
  `coordinator` (the thin ZeroMQ server and process entry point); everything but the server runs
  under a fake clock without processes;
- members: `node` (registration, heartbeats), `ps`, `worker`;
- owner side: `launcher` (process start and cleanup), `workdirs` (temporary folders, swept
  when their owner was killed), `control` (control channel, parameter fetch, `LiveJobError`),
  `scaling_report` (`ScalingReport`), `job` (`LiveJob`, the API), `job_faults` (fault
  injection, coordinator restart, reset to the last snapshot);
- around it: `reference` (single-process PyTorch baseline), `stream` (job streams for the live
  loop), `cluster` (`LiveCluster`, the executor that lets any scheduler drive real jobs) with
  `cluster_ops` (actions in threads of their own, what a fault needs), `cluster_repair` (the
  repairs) and `cluster_report` (measurements, rows, result), `run_log` (``--out`` written as
  things happen, ``--resume``), `chaos` (fault injection for tests and benchmarks), `online`
  (the hook for online learning).
"""

from dlsched.live.cluster import LiveCluster
from dlsched.live.config import JobConfig, Roster
from dlsched.live.job import LiveJob, LiveJobError, ScalingReport
from dlsched.live.reference import reference_train
from dlsched.live.snapshot import LiveSnapshot, ScalingEvent
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
