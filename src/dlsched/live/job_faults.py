"""What a `LiveJob` does about faults: fault injection (kill a member or the coordinator) and
recovery (restart the coordinator from its state file, or drop every process and carry on from
the last complete snapshot).

`FaultHandling` is a mixin of `dlsched.live.job.LiveJob`; it only uses the job's processes,
its control channel and its work directory.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from dlsched.live import launcher
from dlsched.live.control import ControlChannel, LiveJobError
from dlsched.live.coord_store import load_state, write_atomic

log = logging.getLogger(__name__)

SUSPENDED_FILE = "suspended.json"
"""Where `LiveJob.suspend` records the checkpoint a suspended job resumes from."""


@dataclass(slots=True)
class Proc:
    """One process of a job: its role, the machine id it stands for, the process."""

    role: str
    server: int
    proc: BaseProcess


def last_snapshot(workdir: Path) -> tuple[int, list[str] | None]:
    """The newest complete state a job in ``workdir`` can restart from: ``(version, files)``
    of the coordinator's last snapshot or the checkpoint of a suspension, whichever is newer
    and whose files all exist; ``(0, None)`` (from the start) if there is none."""
    found: list[tuple[int, list[str]]] = []
    try:
        snap = load_state(workdir).get("snapshot")
        if isinstance(snap, dict):
            found.append((int(snap["version"]), [str(f) for f in snap["files"]]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        data = json.loads((workdir / SUSPENDED_FILE).read_text())
        found.append((int(data["version"]), [str(f) for f in data["files"]]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    usable = [(v, f) for v, f in found if f and all(Path(p).is_file() for p in f)]
    if not usable:
        return 0, None
    return max(usable, key=lambda vf: vf[0])


def record_suspension(workdir: Path, version: int, files: list[str]) -> None:
    """Write the checkpoint a suspended job resumes from (read by `last_snapshot`)."""
    write_atomic(workdir / SUSPENDED_FILE, json.dumps({"version": version, "files": files}))


class FaultHandling:
    """Fault injection and recovery of a `LiveJob` (see the module docstring)."""

    job_id: str
    workdir: Path
    _procs: dict[str, Proc]
    _coord: BaseProcess | None
    _started: bool
    _suspended: tuple[int, list[str] | None] | None
    _control: ControlChannel

    def status(self, timeout_s: float = 10.0) -> dict[str, Any]:
        raise NotImplementedError

    def _launch_coordinator(self, recover: bool) -> None:
        raise NotImplementedError

    def _nonce_of(self, role: str, member_id: int) -> str:
        for m in self.status()["members"]:
            if m["role"] == role and m["id"] == member_id:
                return str(m["nonce"])
        raise LiveJobError(f"no {role} {member_id} in the job")

    def kill(self, role: str, member_id: int) -> float:
        """SIGKILL one PS (``role="ps"``) or worker; returns the time of the kill (time.time)."""
        nonce = self._nonce_of(role, member_id)
        proc = self._procs.pop(nonce)
        proc.proc.kill()
        t = time.time()
        proc.proc.join(5.0)
        return t

    def kill_coordinator(self) -> None:
        """SIGKILL the coordinator (training goes on without it until it is restarted)."""
        if self._coord is not None:
            self._coord.kill()
            self._coord.join(5.0)

    def coordinator_alive(self) -> bool:
        """True while the job's coordinator process runs."""
        return self._coord is not None and self._coord.is_alive()

    def restart_coordinator(self) -> None:
        """Start a new coordinator that recovers the job from its state file."""
        if self._coord is not None and self._coord.is_alive():
            self.kill_coordinator()
        self._launch_coordinator(recover=True)

    def member_pids(self) -> dict[str, list[int]]:
        """Pids of the running processes by role (``coordinator``, ``ps``, ``worker``)."""
        out: dict[str, list[int]] = {"coordinator": [], "ps": [], "worker": []}
        coord = self._coord
        if coord is not None and coord.is_alive() and coord.pid is not None:
            out["coordinator"].append(coord.pid)
        for p in list(self._procs.values()):
            if p.proc.is_alive() and p.proc.pid is not None:
                out[p.role].append(p.proc.pid)
        return out

    def ask_status(self) -> int:
        """Send a status request without waiting; collect it with `status_reply`."""
        return self._control.send_request("CTL_STATUS", {})

    def status_reply(self, req: int) -> dict[str, Any] | None:
        """The answer to `ask_status` request ``req`` if it came, else None (never waits)."""
        return self._control.take_reply(req)

    def cancel(self) -> None:
        """Kill every process now and make a request in flight (in another thread) give up:
        for leaving while an action on the job runs. `stop` still has to be called."""
        self._control.cancelled.set()
        for proc in [p.proc for p in list(self._procs.values())] + [self._coord]:
            if proc is not None and proc.is_alive():
                proc.kill()

    def prune_dead(self, members: list[dict[str, Any]]) -> int:
        """Kill the processes the coordinator no longer counts as members (declared dead,
        e.g. stopped and continued): they are replaced, not re-admitted. Returns how many."""
        known = {str(m.get("nonce")) for m in members}
        gone = [n for n in list(self._procs) if n not in known]
        for nonce in gone:
            proc = self._procs.pop(nonce).proc
            if proc.is_alive():
                proc.kill()
            proc.join(2.0)
        return len(gone)

    def reset_to_snapshot(self) -> int:
        """Kill every process of the job now and leave it suspended at its last complete
        snapshot (`last_snapshot`): `resume` relaunches it from there, with the same data order
        (the steps since the snapshot are redone). Returns the version it will resume from.

        For a job whose last PS or last worker died, or whose state is unknown.
        """
        procs = [p.proc for p in self._procs.values()]
        if self._coord is not None:
            procs.append(self._coord)
        for proc in procs:
            if proc.is_alive():
                proc.kill()
        for proc in procs:
            launcher.stop(proc, 2.0)
        self._procs.clear()
        self._coord = None
        self._started = True
        version, files = last_snapshot(self.workdir)
        self._suspended = (version, files)
        log.warning("job %s reset to its snapshot at step %d", self.job_id, version)
        return version
