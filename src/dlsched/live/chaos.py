"""Fault injection into live runs, for the chaos tests and ``benchmarks/chaos.py``: small
seeded streams (`stream`), a `FaultPlan` that signals the run's own processes once a job
reached a step, and what every chaos run is checked with (`max_param_diff` against an
uninterrupted run, `alive`, `descendants`).

Signals go only to processes of the run itself (the pids its jobs report).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path

import torch

from dlsched.live import reference_train
from dlsched.live.cluster import LiveCluster
from dlsched.live.snapshot import LiveSnapshot
from dlsched.live.stream import LiveJobRequest, make_stream
from dlsched.sim.result import Result

ATOL = 1e-5
"""Parameters may differ only by the order of float summation of the workers' gradients."""


def stream(
    shapes: list[tuple[int, int]],
    arrivals: list[float] | None = None,
    steps: int = 80,
    snapshot_every: int = 10,
    heartbeat_timeout_s: float = 1.0,
    seed: int = 1,
) -> list[LiveJobRequest]:
    """Jobs of the ``smooth`` model asking (PS, workers) ``shapes``, ``steps`` steps each,
    throttled to at most 50 steps/s, snapshotting every ``snapshot_every`` steps."""
    base = make_stream(
        len(shapes),
        seed=seed,
        cores=2,
        steps=steps,
        step_sleep_s=0.02,
        snapshot_every=snapshot_every,
        heartbeat_timeout_s=heartbeat_timeout_s,
    )
    arrivals = arrivals or [0.5 * i for i in range(len(shapes))]
    out = []
    for req, (ps, workers), t in zip(base, shapes, arrivals, strict=True):
        cfg = dataclasses.replace(req.config, model="smooth", total_steps=steps)
        spec = dataclasses.replace(
            req.spec, submit_time_s=t, model="smooth", num_ps=ps, num_workers=workers
        )
        out.append(LiveJobRequest(spec, cfg))
    return out


@dataclass
class Fault:
    """Signal ``role`` processes (``coordinator``, ``ps``, ``worker``) of job ``job_id`` once it
    did ``at_step`` steps: SIGKILL (``kind="kill"``) or SIGSTOP then SIGCONT after
    ``stop_s`` seconds (``kind="stop"``); ``count`` processes of that role at most."""

    job_id: int
    role: str
    at_step: int
    kind: str = "kill"
    count: int = 1
    stop_s: float = 3.0
    done_at: float | None = None
    """Seconds into the run it was injected at (None: not yet)."""
    pids: list[int] = field(default_factory=list)


class FaultPlan:
    """Injects ``faults`` from the loop's ``on_slot`` callback (signals to the run's own
    processes only)."""

    def __init__(self, faults: list[Fault]) -> None:
        self.faults = faults
        self.cluster: LiveCluster | None = None
        self._timers: list[threading.Timer] = []

    def __call__(self, snap: LiveSnapshot) -> None:
        assert self.cluster is not None
        steps = {row.job_id: (row.steps, row.state) for row in snap.jobs}
        for fault in self.faults:
            done, state = steps.get(fault.job_id, (0, ""))
            if fault.done_at is not None or state != "running" or done < fault.at_step:
                continue
            live = self.cluster.jobs[fault.job_id]
            if live.job is None or live.busy:
                continue
            pids = live.job.member_pids()[fault.role][: fault.count]
            if not pids:
                continue
            fault.pids, fault.done_at = pids, snap.now_s
            for pid in pids:
                os.kill(pid, signal.SIGKILL if fault.kind == "kill" else signal.SIGSTOP)
            if fault.kind == "stop":
                timer = threading.Timer(fault.stop_s, _cont, args=(pids,))
                timer.start()
                self._timers.append(timer)

    def finish(self) -> None:
        """Continue every stopped process now (also if the run ended early)."""
        for timer in self._timers:
            timer.cancel()
        for fault in self.faults:
            if fault.kind == "stop":
                _cont(fault.pids)


def _cont(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def run_with_faults(
    requests: list[LiveJobRequest],
    faults: list[Fault],
    params_dir: Path,
    scheduler: str = "fifo",
    horizon_s: float = 90.0,
) -> tuple[LiveCluster, Result]:
    """Run ``requests`` under ``scheduler`` with ``faults`` injected: the cluster and result."""
    from dlsched.schedulers.registry import make_scheduler

    plan = FaultPlan(faults)
    cluster = LiveCluster(
        requests,
        make_scheduler(scheduler),
        slot_s=0.3,
        cores=2,
        horizon_s=horizon_s,
        on_slot=plan,
        params_dir=params_dir,
    )
    plan.cluster = cluster
    try:
        result = cluster.run()
    finally:
        plan.finish()
    missed = [f for f in faults if f.done_at is None]
    if missed:
        raise RuntimeError(f"faults never injected (the jobs ended first?): {missed}")
    return cluster, result


def max_param_diff(requests: list[LiveJobRequest], params_dir: Path) -> dict[int, float]:
    """Per job: max |live parameters - uninterrupted single-process run| (inf if missing)."""
    out = {}
    for req in requests:
        path = params_dir / f"job{req.spec.job_id}.pt"
        if not path.exists():
            out[req.spec.job_id] = float("inf")
            continue
        params = torch.load(path, weights_only=True)
        ref, _ = reference_train(req.config, req.config.total_steps)
        out[req.spec.job_id] = float((params - ref).abs().max())
    return out


def alive(pids: set[int] | list[int]) -> list[int]:
    """Those of ``pids`` still running (zombies count as gone)."""
    left = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            left.append(pid)
    return left


def descendants(pid: int) -> set[int]:
    """Every process whose parent chain leads to ``pid`` (from /proc)."""
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    out: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {c for c, p in parent.items() if p in frontier} - out
        out |= frontier
    return out
