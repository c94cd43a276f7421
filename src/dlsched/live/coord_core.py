"""The coordinator's logic without sockets or clocks: membership, DL2's rounds, failures.

`CoordinatorCore` takes decoded messages (`handle`) and the passing of time (`tick`), each with
``now`` (monotonic seconds), and puts what it sends in `outbox` as `Outgoing` items; the ZeroMQ
server (`dlsched.live.coordinator`) delivers them. Wall-clock times (reported to the owner) come
from an injected function. So the whole protocol runs under a fake clock in tests.

Scaling round (DL2 §5, Fig. 7), driven by a CTL_SCALE request of the job's owner:

1. *Registration*: new PS/workers (launched by the owner) send REGISTER and get their id and the
   current roster (peers).
2. *Parameter assignment*: once all newcomers registered, best-fit assigns blocks to the new PS
   set (`assignment.best_fit`); a *scaling clock* is computed from the members' version counters,
   the measured step rate and round-trip times, and sent with the new roster (PREPARE). Every
   member acknowledges that it has not passed the clock (else the clock is moved later), then
   the PS get COMMIT.
3. *Migration*: each PS reaching the clock moves the blocks it loses to their new owners and
   reports MIGRATED.
4. *Worker update*: workers stop at the clock; once every PS migrated, RESUME gives them the new
   roster and they continue (newcomers pull the parameters first).

Removals follow the same steps. Failures are found by heartbeats: a dead worker is dropped at
once (RECONFIG: the step in progress is recomputed by the others with the new batch split); a
dead PS makes every PS reload the last snapshot covering all blocks (ROLLBACK) and the workers
redo the steps since. A round that times out, loses a member or whose handler fails is aborted:
the owner gets the error, and the members keep (or are rolled back to) the last good roster.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlsched.live.checkpoint import confine
from dlsched.live.config import JobConfig, Roster
from dlsched.live.coord_rounds import Outgoing, RoundDriver
from dlsched.live.membership import Member, Role
from dlsched.live.protocol import Message, ProtocolError, get_float, get_int, get_int_list, get_str
from dlsched.live.rounds import Phase, RoundKind, rollback_needed_on_abort, timed_out

log = logging.getLogger(__name__)

MEMBER_TYPES = frozenset(
    {"ACK", "SUSPENDED", "MIGRATED", "RESUMED", "READY", "SNAPSHOT_DONE", "ROLLED_BACK", "DONE"}
)
"""Messages of a registered member on its message connection."""
CTL_TYPES = frozenset({"CTL_START", "CTL_SCALE", "CTL_CHECKPOINT", "CTL_STATUS", "CTL_SHUTDOWN"})
"""Requests of the job's owner."""


class CoordinatorCore(RoundDriver):
    """The state and the message handlers of one job's coordinator (see the module docstring).

    Args:
        cfg: the job's settings.
        workdir: the job directory (state file, snapshots, checkpoints).
        now: monotonic time at creation, seconds.
        wall: wall-clock source for the times reported to the owner (`time.time`).
        perf: high-resolution timer for measured durations (`time.perf_counter`).
    """

    def __init__(
        self,
        cfg: JobConfig,
        workdir: Path,
        now: float,
        wall: Callable[[], float] = time.time,
        perf: Callable[[], float] = time.perf_counter,
    ) -> None:
        super().__init__(cfg, workdir, now, wall, perf)
        self.handlers: dict[str, Callable[[bytes, Message, float], None]] = {
            "REGISTER": self._on_register,
            "HEARTBEAT": self._on_heartbeat,
            "CTL_START": self._on_ctl_start,
            "CTL_SCALE": self._on_ctl_scale,
            "CTL_CHECKPOINT": self._on_ctl_checkpoint,
            "CTL_STATUS": self._on_ctl_status,
            "CTL_SHUTDOWN": self._on_ctl_shutdown,
        }
        self.member_handlers: dict[str, Callable[[Member, Message, float], None]] = {
            "ACK": self._on_ack,
            "SUSPENDED": self._on_suspended,
            "MIGRATED": self._on_migrated,
            "RESUMED": self._on_resumed,
            "READY": self._on_ready,
            "SNAPSHOT_DONE": self._on_snapshot_done,
            "ROLLED_BACK": self._on_rolled_back,
            "DONE": self._on_done,
        }

    # ------------------------------------------------------------------ entry points

    @staticmethod
    def allowed_types(ident: bytes) -> frozenset[str]:
        """Message types accepted from the connection ``ident``."""
        if ident.startswith(b"n-"):
            return MEMBER_TYPES | {"REGISTER"}
        if ident.startswith(b"h-"):
            return frozenset({"HEARTBEAT"})
        return CTL_TYPES

    def handle(self, ident: bytes, msg: Message, now: float) -> None:
        """Dispatch an authenticated message from connection ``ident`` at ``now``.

        A `ProtocolError` (a malformed or out-of-place message) is logged and the message is
        dropped. Any other exception of a handler aborts the round in flight as a failed round
        would (the members keep, or are rolled back to, the last good roster); the error is
        reported to the owner and recorded in the events.
        """
        try:
            handler = self.handlers.get(msg.type)
            if handler is not None:
                handler(ident, msg, now)
                return
            member_handler = self.member_handlers.get(msg.type)
            if member_handler is None:
                raise ProtocolError(f"no handler for {msg.type!r}")
            member = self.members.by_ident(ident)
            if member is None:
                log.info("coordinator: %s from unknown member %r ignored", msg.type, ident)
                return
            member.last_seen = now
            member_handler(member, msg, now)
        except ProtocolError as exc:
            log.warning("coordinator: rejected %s from %r: %s", msg.type, ident, exc)
        except Exception as exc:
            log.exception("coordinator: handler of %s from %r failed", msg.type, ident)
            reason = f"handler of {msg.type} failed: {type(exc).__name__}: {exc}"
            self.events.append({"kind": "handler_error", "t": self.wall(), "error": reason})
            self.fail_round(reason, now)
            self.dirty = True

    def tick(self, now: float) -> None:
        """Let time pass: detect dead members, time rounds out."""
        self.members.tick(now)
        self.check_failures(now)
        r = self.round
        if r is not None and timed_out(r, now):
            self.fail_round(f"{r.kind.value} round timed out in phase {r.phase.value}", now)

    def fail_round(self, reason: str, now: float) -> None:
        """Abort the round in flight; roll back if members may be half-way through it."""
        r = self.round
        if r is None:
            return
        self.abort(reason)
        if rollback_needed_on_abort(r):
            self.rollback(f"{r.kind.value} round failed", now)

    def take_outbox(self) -> list[Outgoing]:
        out, self.outbox = self.outbox, []
        return out

    # ------------------------------------------------------------------ membership

    def _on_register(self, ident: bytes, msg: Message, now: float) -> None:
        role = get_str(msg.body, "role")
        nonce = get_str(msg.body, "nonce", 64)
        server = get_int(msg.body, "server")
        if role not in ("ps", "worker") or ident != f"n-{nonce}".encode():
            raise ProtocolError("REGISTER with a bad role or nonce")
        endpoint = ""
        if role == "ps" and self.members.of_nonce(nonce) is None:
            endpoint = get_str(msg.body, "endpoint", 256)
            if not endpoint.startswith("tcp://"):
                raise ProtocolError("PS endpoint must be tcp://")
        known = self.members.of_nonce(nonce) is not None
        member = self.members.register(Role(role), nonce, endpoint, server, now)
        if not known:
            log.info("coordinator: registered %s (nonce %s)", member.key, nonce)
        roster = self.roster.to_dict() if self.roster else None
        self.send(member, "REGISTERED", {"id": member.id, "roster": roster})
        self.advance(now)

    def _on_heartbeat(self, ident: bytes, msg: Message, now: float) -> None:
        nonce = get_str(msg.body, "nonce", 64)
        t = get_float(msg.body, "t")
        member = self.members.of_nonce(nonce)
        if member is None or ident != f"h-{nonce}".encode():
            self.outbox.append(Outgoing(ident, "SHUTDOWN", {}))
            return
        rtt = get_float(msg.body, "rtt")
        version = get_int(msg.body, "version")
        phase = str(msg.body.get("phase", ""))
        self.members.heartbeat(member, version, rtt, phase, now, self.roster)
        self.outbox.append(Outgoing(ident, "HB_ACK", {"t": t}))

    def check_failures(self, now: float) -> None:
        """Declare members silent for longer than the heartbeat timeout dead, and react."""
        if self.recover_rollback_at is not None:
            if now < self.recover_rollback_at:
                return
            self.recover_rollback_at = None
            self.rollback("coordinator restarted during a round", now)
            return
        dead = self.members.dead(now)
        if not dead:
            return
        for m in dead:
            silent = now - m.last_seen
            log.warning("coordinator: %s silent for %.2f s, declared dead", m.key, silent)
            self.events.append(
                {
                    "kind": f"{m.role.value}_failure",
                    "id": m.id,
                    "t": self.wall(),
                    "silent_s": silent,
                }
            )
            self.members.remove(m.key)
        dead_ps = {m.id for m in dead if m.role == Role.PS}
        if self.round is not None:
            self.on_failures_in_round({m.key for m in dead}, bool(dead_ps), now)
            return
        if self.roster is None:
            return
        if dead_ps & set(self.roster.ps):
            self.rollback(f"PS {sorted(dead_ps)} failed", now)
        elif any(f"w{w}" not in self.members for w in self.roster.workers):
            self.reconfig(now)

    def progress(self) -> int:
        return self.members.progress(self.roster)

    # ------------------------------------------------------------------ control requests

    def _on_ctl_status(self, ident: bytes, msg: Message, now: float) -> None:
        self.reply(ident, get_int(msg.body, "req"), True, **self.status(now))

    def status(self, now: float) -> dict[str, Any]:
        """What the owner can observe: roster, members, progress, speed, events."""
        r = self.round
        workers = self.roster.workers if self.roster else []
        finished = bool(workers) and all(
            f"w{w}" in self.members and self.members[f"w{w}"].done for w in workers
        )
        return {
            "roster": self.roster.to_dict() if self.roster else None,
            "members": [
                {
                    "key": m.key,
                    "role": m.role.value,
                    "id": m.id,
                    "nonce": m.nonce,
                    "server": m.server,
                    "version": m.version,
                    "rtt": m.rtt,
                    "phase": m.phase,
                }
                for m in self.members.members.values()
            ],
            "progress": self.progress(),
            "speed": self.members.speed(now),
            "round": None if r is None else r.summary(),
            "snapshot": self.snapshot[0] if self.snapshot else None,
            "events": self.events[-100:],
            "finished": finished and r is None,
            "failed": self.failed,
        }

    def _on_ctl_shutdown(self, ident: bytes, msg: Message, now: float) -> None:
        self.shutdown_all()
        self.reply(ident, get_int(msg.body, "req"), True)
        self.stopping = True

    def shutdown_all(self) -> None:
        for m in self.members.members.values():
            self.send(m, "SHUTDOWN", {})

    def _on_ctl_start(self, ident: bytes, msg: Message, now: float) -> None:
        req = get_int(msg.body, "req")
        if self.round is not None or self.roster is not None:
            self.reply(ident, req, False, error="job already started")
            return
        ps = msg.body.get("ps")
        workers = msg.body.get("workers")
        files = msg.body.get("files")
        if not (_str_list(ps) and _str_list(workers)):
            raise ProtocolError("CTL_START needs lists of nonces")
        if files is not None and not _str_list(files, 4096):
            raise ProtocolError("CTL_START files must be a list of paths")
        assert isinstance(ps, list) and isinstance(workers, list)
        if not ps or len(workers) > self.cfg.total_batch:
            self.reply(ident, req, False, error="need >= 1 PS and <= total_batch workers")
            return
        if files is not None:
            try:
                for f in files:
                    confine(f, self.workdir)
            except ValueError as exc:
                self.reply(ident, req, False, error=str(exc))
                return
        r = self.new_round(RoundKind.START, ident, req, now)
        r.join = set(ps) | set(workers)
        r.version = get_int(msg.body, "version")
        r.files = files
        self.round = r
        self.advance(now)

    def _on_ctl_scale(self, ident: bytes, msg: Message, now: float) -> None:
        req = get_int(msg.body, "req")
        join = msg.body.get("join")
        if not isinstance(join, list):
            raise ProtocolError("CTL_SCALE join must be a list")
        remove_ps = set(get_int_list(msg.body, "remove_ps"))
        remove_w = set(get_int_list(msg.body, "remove_workers"))
        if not _str_list(join):
            raise ProtocolError("CTL_SCALE join must be a list of nonces")
        add_ps = get_int(msg.body, "add_ps") if "add_ps" in msg.body else 0
        add_w = get_int(msg.body, "add_workers") if "add_workers" in msg.body else 0
        error = self.check_scale(remove_ps, remove_w, add_ps, add_w)
        if error:
            self.reply(ident, req, False, error=error)
            return
        r = self.new_round(RoundKind.SCALE, ident, req, now)
        r.join, r.remove_ps, r.remove_workers = set(join), remove_ps, remove_w
        self.round = r
        self.advance(now)

    def check_scale(self, remove_ps: set[int], remove_w: set[int], add_ps: int, add_w: int) -> str:
        """Why a scaling (or checkpoint) request cannot run now; empty if it can."""
        if self.round is not None:
            return f"busy with a {self.round.kind.value} round"
        if self.roster is None:
            return "job not started"
        if self.failed:
            return self.failed
        if not remove_ps <= set(self.roster.ps) or not remove_w <= set(self.roster.workers):
            return "asked to remove tasks that are not in the job"
        n_ps = len(self.roster.ps) - len(remove_ps) + add_ps
        n_w = len(self.roster.workers) - len(remove_w) + add_w
        if n_ps < 1:
            return "a job needs at least one PS"
        if n_w > self.cfg.total_batch:
            return f"{n_w} workers exceed the total batch {self.cfg.total_batch}"
        return ""

    def _on_ctl_checkpoint(self, ident: bytes, msg: Message, now: float) -> None:
        req = get_int(msg.body, "req")
        error = self.check_scale(set(), set(), 0, 0)
        try:
            ckpt_dir = str(confine(get_str(msg.body, "dir"), self.workdir))
        except ValueError as exc:
            error = error or str(exc)
        if error:
            self.reply(ident, req, False, error=error)
            return
        r = self.new_round(RoundKind.CHECKPOINT, ident, req, now)
        r.ckpt_dir = ckpt_dir
        self.round = r
        self.prepare(now)

    # ------------------------------------------------------------------ snapshots

    def _on_snapshot_done(self, member: Member, msg: Message, now: float) -> None:
        version = get_int(msg.body, "version")
        epoch = get_int(msg.body, "epoch", None)
        blocks = get_int_list(msg.body, "blocks")
        path = get_str(msg.body, "file")
        try:
            confine(path, self.workdir / "snapshots")
        except ValueError as exc:
            raise ProtocolError(str(exc)) from None
        if epoch < self.rollback_epoch or (self.snapshot and version <= self.snapshot[0]):
            return
        cover = self.snap_cov.setdefault(version, {})
        cover[path] = blocks
        covered: set[int] = set()
        for bl in cover.values():
            covered.update(bl)
        if len(covered) < len(self.sizes):
            return
        self.snapshot = (version, sorted(cover))
        self.snap_cov = {v: c for v, c in self.snap_cov.items() if v > version}
        self.delete_snapshots(lambda v: v < version)
        self.save()

    # ------------------------------------------------------------------ persistence

    def state(self, endpoint: str) -> dict[str, Any]:
        """What the state file holds (`coord_store.save_state`)."""
        r = self.round
        return {
            "endpoint": endpoint,
            "roster": self.roster.to_dict() if self.roster else None,
            "members": [
                {
                    "role": m.role.value,
                    "id": m.id,
                    "nonce": m.nonce,
                    "endpoint": m.endpoint,
                    "server": m.server,
                }
                for m in self.members.members.values()
            ],
            "next_ps_id": self.members.next_ps_id,
            "next_worker_id": self.members.next_worker_id,
            "max_epoch": self.max_epoch,
            "rollback_epoch": self.rollback_epoch,
            "snapshot": {"version": self.snapshot[0], "files": self.snapshot[1]}
            if self.snapshot
            else None,
            "round": None if r is None else r.summary(),
            "events": self.events[-100:],
            "failed": self.failed,
        }

    def restore(self, state: dict[str, Any], now: float) -> None:
        """Carry on from a saved state; members count as heard from at ``now``.

        A round that was past its join phase is lost half-way: every member is resynchronised
        by a rollback once the members had time to show they are alive.
        """
        self.roster = Roster.from_dict(state["roster"]) if state.get("roster") else None
        for d in state.get("members", []):
            role = Role(d["role"])
            member = Member(
                role, int(d["id"]), str(d["nonce"]), str(d["endpoint"]), int(d["server"])
            )
            member.last_seen = member.t_version = now
            self.members.add(member)
        self.members.next_ps_id = int(state["next_ps_id"])
        self.members.next_worker_id = int(state["next_worker_id"])
        self.max_epoch = int(state["max_epoch"])
        self.rollback_epoch = int(state["rollback_epoch"])
        snap = state.get("snapshot")
        self.snapshot = (int(snap["version"]), list(snap["files"])) if snap else None
        self.events = list(state.get("events", []))
        self.failed = str(state.get("failed", ""))
        rnd = state.get("round")
        self.events.append({"kind": "coordinator_recovered", "t": self.wall(), "round": rnd})
        if rnd and rnd.get("phase") != Phase.JOIN.value and rnd.get("kind") != "start":
            self.recover_rollback_at = now + 1.5 * self.cfg.heartbeat_timeout_s
        log.warning(
            "coordinator: recovered %d members from the state file", len(self.members.members)
        )


def _str_list(value: Any, max_len: int = 64) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and len(v) <= max_len for v in value)
