"""`LiveJob`: the Python API to run, resize and stop one real elastic training job.

Example::

    from dlsched.live import JobConfig, LiveJob

    with LiveJob(JobConfig(model="mlp", total_steps=500), num_ps=1, num_workers=2) as job:
        job.wait(steps=50)
        report = job.scale_to(num_ps=2, num_workers=3)  # hot scaling, DL2 §5
        print(report.suspension_s, job.measured_speed())
        job.wait()  # until total_steps
        params = job.parameters()

Every process of the job is stopped by `stop` (also on leaving the ``with`` block, on an
exception and at interpreter exit).
"""

from __future__ import annotations

import atexit
import logging
import secrets
import shutil
import statistics
import tempfile
import time
import uuid
import weakref
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import TracebackType
from typing import Any

import torch

from dlsched.live import launcher
from dlsched.live.assignment import block_bounds, choose_removals
from dlsched.live.config import JobConfig, Roster
from dlsched.live.control import ControlChannel, LiveJobError
from dlsched.live.coordinator import ENDPOINT_FILE, CoordArgs, coordinator_main
from dlsched.live.job_faults import FaultHandling, Proc, record_suspension
from dlsched.live.models import num_params
from dlsched.live.node import NodeArgs
from dlsched.live.ps import ps_main
from dlsched.live.scaling_report import ScalingReport, fill_hot_report
from dlsched.live.worker import worker_main

log = logging.getLogger(__name__)

__all__ = ["LiveJob", "LiveJobError", "ScalingReport"]

_JOBS: weakref.WeakSet[LiveJob] = weakref.WeakSet()


class LiveJob(FaultHandling):
    """One real training job: a coordinator, PS and workers as OS processes on this machine.

    Args:
        config: the job's settings (model, total batch, steps, host, ...).
        num_ps: parameter servers to start with.
        num_workers: workers to start with.
        job_id: name used in messages and process names (random if None).
        workdir: directory for the state file, snapshots and checkpoints (a temporary one,
            removed at `stop`, if None).
        start_method: ``"forkserver"`` (default, fast) or ``"spawn"``.
        timeout_s: limit for starting and for each control request, seconds.
    """

    def __init__(
        self,
        config: JobConfig | None = None,
        num_ps: int = 1,
        num_workers: int = 1,
        *,
        job_id: str | None = None,
        workdir: str | Path | None = None,
        start_method: str = "forkserver",
        timeout_s: float = 60.0,
    ) -> None:
        if num_ps < 1 or num_workers < 1:
            raise ValueError("a job needs at least one PS and one worker")
        self.config = config or JobConfig()
        if num_workers > self.config.total_batch:
            raise ValueError(f"{num_workers} workers exceed total batch {self.config.total_batch}")
        self.job_id = job_id or uuid.uuid4().hex[:8]
        self._secret = secrets.token_hex(16)
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=f"dlsched-live-{self.job_id}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.start_method = start_method
        self.timeout_s = timeout_s
        self._initial = (num_ps, num_workers)
        self._control = ControlChannel(self.job_id, self._secret)
        self._coord: BaseProcess | None = None
        self._procs: dict[str, Proc] = {}
        self._restarts = 0
        self._suspended: tuple[int, list[str] | None] | None = None
        self._started = False
        self._stopped = False
        bounds = block_bounds(num_params(self.config.model), self.config.block_size)
        self._bounds = bounds
        _JOBS.add(self)

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> LiveJob:
        if not self._started:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> LiveJob:
        """Launch the coordinator, PS and workers and wait until all train.

        Raises:
            LiveJobError: if the job does not start within ``timeout_s``.
        """
        if self._started:
            raise LiveJobError("job already started")
        self._started = True
        try:
            self._launch_all(*self._initial, version=0, files=None)
        except BaseException:
            self.stop()
            raise
        return self

    def _launch_all(
        self, num_ps: int, num_workers: int, version: int, files: list[str] | None
    ) -> dict[str, Any]:
        self._launch_coordinator(recover=False)
        ps = [self._launch_member("ps") for _ in range(num_ps)]
        workers = [self._launch_member("worker") for _ in range(num_workers)]
        body = {"ps": ps, "workers": workers, "version": version, "files": files}
        reply = self._request("CTL_START", body, self.timeout_s + self.config.round_timeout_s)
        if not reply.get("ok"):
            raise LiveJobError(f"start failed: {reply.get('error')}")
        report: dict[str, Any] = reply["report"]
        return report

    def _launch_coordinator(self, recover: bool) -> None:
        if self._control.cancelled.is_set():
            raise LiveJobError("cancelled")
        endpoint_file = self.workdir / ENDPOINT_FILE
        if not recover:
            endpoint_file.unlink(missing_ok=True)
            (self.workdir / "coordinator.json").unlink(missing_ok=True)
        old = endpoint_file.read_text() if recover and endpoint_file.exists() else ""
        if recover:
            endpoint_file.unlink(missing_ok=True)
        args = CoordArgs(
            self.config.to_json(), self.job_id, self._secret, str(self.workdir), _pid(), recover
        )
        self._coord = launcher.launch(
            coordinator_main, args, f"coord-{self.job_id}", self.start_method
        )
        deadline = time.monotonic() + self.timeout_s
        while not endpoint_file.exists():
            if time.monotonic() > deadline or not self._coord.is_alive():
                raise LiveJobError("coordinator did not start")
            time.sleep(0.01)
        endpoint = endpoint_file.read_text().strip()
        self._control.connect(endpoint)
        if recover and old and old != endpoint:
            log.warning("coordinator came back on %s instead of %s", endpoint, old)

    def _launch_member(self, role: str, server: int = 0) -> str:
        if self._control.cancelled.is_set():
            raise LiveJobError("cancelled")
        nonce = secrets.token_hex(16)
        args = NodeArgs(
            role,
            self.config.to_json(),
            self.job_id,
            self._secret,
            self._endpoint,
            nonce,
            _pid(),
            server,
            str(self.workdir),
        )
        target = ps_main if role == "ps" else worker_main
        proc = launcher.launch(target, args, f"{role}-{self.job_id}-{nonce[:6]}", self.start_method)
        self._procs[nonce] = Proc(role, server, proc)
        return nonce

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop every process of the job (idempotent) and remove a temporary workdir."""
        if self._stopped:
            return
        self._stopped = True
        self._stop_processes(timeout_s)
        self._control.close()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _stop_processes(self, timeout_s: float) -> None:
        if self._control.cancelled.is_set():  # leaving: no time for an orderly shutdown
            timeout_s = 0.1
        if self._coord is not None and self._coord.is_alive() and self._control.connected:
            try:
                self._request("CTL_SHUTDOWN", {}, min(timeout_s, 5.0))
            except LiveJobError:
                log.warning("coordinator did not acknowledge the shutdown")
        procs = [p.proc for p in self._procs.values()]
        if self._coord is not None:
            procs.append(self._coord)
        deadline = time.monotonic() + timeout_s
        for proc in procs:
            launcher.stop(proc, max(0.1, deadline - time.monotonic()))
        self._procs.clear()
        self._coord = None

    def pids(self) -> list[int]:
        """Process ids of the job's processes still running."""
        procs = [p.proc for p in self._procs.values()] + ([self._coord] if self._coord else [])
        return [p.pid for p in procs if p.is_alive() and p.pid is not None]

    # ------------------------------------------------------------------ control channel

    @property
    def _endpoint(self) -> str:
        """The coordinator's endpoint."""
        return self._control.endpoint

    def _request(self, type_: str, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        return self._control.request(type_, body, timeout_s)

    def status(self, timeout_s: float = 10.0) -> dict[str, Any]:
        """The coordinator's view: roster, members, progress, speed, round, events."""
        reply = self._request("CTL_STATUS", {}, timeout_s)
        return reply

    def roster(self) -> Roster:
        """Current membership (PS endpoints, workers in rank order, block owners)."""
        data = self.status()["roster"]
        if data is None:
            raise LiveJobError("job has no roster yet")
        return Roster.from_dict(data)

    def progress(self) -> int:
        """Synchronous steps done (PS version counter; reported every heartbeat)."""
        return int(self.status()["progress"])

    def measured_speed(self) -> float:
        """Steps per second measured over the last seconds at the current size (0 if unknown)."""
        return float(self.status()["speed"])

    @property
    def num_ps(self) -> int:
        return len(self.roster().ps)

    @property
    def num_workers(self) -> int:
        return len(self.roster().workers)

    def finished(self) -> bool:
        """True once every worker reached ``total_steps``."""
        return bool(self.status()["finished"])

    def wait(self, steps: int | None = None, timeout_s: float = 120.0) -> None:
        """Block until ``steps`` steps are done (None: until the job finished).

        Raises:
            LiveJobError: on timeout or if the job failed.
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            st = self.status()
            if st["failed"]:
                raise LiveJobError(f"job failed: {st['failed']}")
            if st["finished"] or (steps is not None and st["progress"] >= steps):
                return
            time.sleep(0.02)
        raise LiveJobError(f"job did not reach {steps or 'the end'} in {timeout_s} s")

    def parameters(self, timeout_s: float = 30.0) -> torch.Tensor:
        """The current global parameters as one flat float32 vector, fetched from the PS."""
        return self._control.fetch_parameters(self.roster(), self._bounds, timeout_s)

    # ------------------------------------------------------------------ scaling

    def scale_to(
        self,
        num_ps: int,
        num_workers: int,
        mode: str = "hot",
        servers: dict[str, int] | None = None,
    ) -> ScalingReport:
        """Resize the running job to ``num_ps`` PS and ``num_workers`` workers.

        Args:
            num_ps: PS after the change (>= 1).
            num_workers: workers after the change (>= 1, <= total batch).
            mode: ``"hot"`` (DL2's scaling without stopping) or ``"restart"`` (checkpoint,
                stop everything, relaunch with the new counts, restore).
            servers: machine id for new ``"ps"`` / ``"worker"`` processes (default 0); removals
                keep each role balanced over machines (`assignment.choose_removals`).

        Raises:
            LiveJobError: if the coordinator refuses or the round fails.
        """
        if num_ps < 1 or num_workers < 1 or num_workers > self.config.total_batch:
            raise ValueError(f"cannot run with {num_ps} PS and {num_workers} workers")
        if mode == "hot":
            return self._scale_hot(num_ps, num_workers, servers or {})
        if mode == "restart":
            return self._scale_restart(num_ps, num_workers)
        raise ValueError(f"mode must be 'hot' or 'restart', got {mode!r}")

    def _scale_hot(self, num_ps: int, num_workers: int, servers: dict[str, int]) -> ScalingReport:
        t0 = time.perf_counter()
        st = self.status()
        roster = Roster.from_dict(st["roster"])
        members = {(m["role"], m["id"]): m for m in st["members"]}
        before = (len(roster.ps), len(roster.workers))
        ps_servers = {p: members.get(("ps", p), {}).get("server", 0) for p in roster.ps}
        w_servers = {w: members.get(("worker", w), {}).get("server", 0) for w in roster.workers}
        remove_ps = choose_removals(ps_servers, max(0, len(roster.ps) - num_ps))
        remove_w = choose_removals(w_servers, max(0, len(roster.workers) - num_workers))
        add_ps = max(0, num_ps - len(roster.ps))
        add_w = max(0, num_workers - len(roster.workers))
        report = ScalingReport("hot", before, (num_ps, num_workers))
        if not (remove_ps or remove_w or add_ps or add_w):
            return report
        join = [self._launch_member("ps", servers.get("ps", 0)) for _ in range(add_ps)]
        join += [self._launch_member("worker", servers.get("worker", 0)) for _ in range(add_w)]
        body = {
            "join": join,
            "add_ps": add_ps,
            "add_workers": add_w,
            "remove_ps": remove_ps,
            "remove_workers": remove_w,
        }
        reply = self._request("CTL_SCALE", body, self.timeout_s + self.config.round_timeout_s)
        if not reply.get("ok"):
            for nonce in join:
                proc = self._procs.pop(nonce)
                launcher.stop(proc.proc, 2.0)
            raise LiveJobError(f"scaling refused or failed: {reply.get('error')}")
        rep = reply["report"]
        removed = {
            m["nonce"]
            for k, m in members.items()
            if k in {("ps", p) for p in remove_ps} | {("worker", w) for w in remove_w}
        }
        for nonce in removed:
            gone = self._procs.pop(nonce, None)
            if gone is not None:
                launcher.stop(gone.proc, 5.0)
        new = Roster.from_dict(self.status()["roster"])
        fill_hot_report(report, rep, roster, new, remove_ps, remove_w)
        report.wall_s = time.perf_counter() - t0
        return report

    def _checkpoint(self) -> dict[str, Any]:
        """Suspend the workers at a scaling clock and write every block to a new directory."""
        self._restarts += 1
        ckpt_dir = self.workdir / "checkpoints" / f"c{self._restarts:04d}"
        reply = self._request(
            "CTL_CHECKPOINT", {"dir": str(ckpt_dir)}, self.timeout_s + self.config.round_timeout_s
        )
        if not reply.get("ok"):
            raise LiveJobError(f"checkpoint failed: {reply.get('error')}")
        report: dict[str, Any] = reply["report"]
        return report

    @property
    def suspended(self) -> bool:
        """True between `suspend` and `resume`: no process of the job runs."""
        return self._suspended is not None

    def suspend(self) -> int:
        """Checkpoint the job and stop all its processes, keeping the workdir (preemption).

        Returns:
            The version (steps done) the job will resume from.

        Raises:
            LiveJobError: if the job is not running or the checkpoint fails.
        """
        if self._suspended is not None or not self._started or self._stopped:
            raise LiveJobError("only a running job can be suspended")
        ck = self._checkpoint()
        self._stop_processes(10.0)
        self._suspended = (int(ck["version"]), [str(f) for f in ck["files"]])
        record_suspension(self.workdir, *self._suspended)
        return self._suspended[0]

    def resume(self, num_ps: int, num_workers: int) -> None:
        """Relaunch a suspended job with ``num_ps`` PS and ``num_workers`` workers from its
        checkpoint (same steps, same data order: nothing lost, nothing repeated).

        Raises:
            LiveJobError: if the job is not suspended or does not start again.
        """
        if self._suspended is None:
            raise LiveJobError("job is not suspended")
        if num_ps < 1 or num_workers < 1 or num_workers > self.config.total_batch:
            raise ValueError(f"cannot run with {num_ps} PS and {num_workers} workers")
        version, files = self._suspended
        try:
            self._launch_all(num_ps, num_workers, version, files)
        except BaseException:
            self._stop_processes(5.0)
            raise
        self._suspended = None

    def _scale_restart(self, num_ps: int, num_workers: int) -> ScalingReport:
        t0 = time.perf_counter()
        roster = self.roster()
        before = (len(roster.ps), len(roster.workers))
        ck = self._checkpoint()
        t_saved = time.time()
        self._stop_processes(10.0)
        t_stopped = time.time()
        rep = self._launch_all(num_ps, num_workers, int(ck["version"]), list(ck["files"]))
        t_suspend = statistics.fmean(ck["t_suspend"]) if ck["t_suspend"] else t_saved
        t_resume = statistics.fmean(rep["t_resume"]) if rep["t_resume"] else time.time()
        new = self.roster()
        report = ScalingReport("restart", before, (num_ps, num_workers), clock=int(ck["version"]))
        report.removed_ps, report.removed_workers = sorted(roster.ps), list(roster.workers)
        report.added_ps, report.added_workers = sorted(new.ps), list(new.workers)
        report.worker_update_s = t_resume - t_suspend
        report.details = {
            "checkpoint_write_s": float(ck["write_s"]),
            "checkpoint_s": t_saved - t_suspend,
            "stop_s": t_stopped - t_saved,
            "relaunch_s": t_resume - t_stopped,
        }
        report.wall_s = time.perf_counter() - t0
        return report


def _pid() -> int:
    import os

    return os.getpid()


def _stop_all_jobs() -> None:
    for job in list(_JOBS):
        try:
            job.stop(timeout_s=3.0)
        except Exception:  # pragma: no cover - best effort at exit
            log.exception("failed to stop live job %s at exit", job.job_id)


atexit.register(_stop_all_jobs)
