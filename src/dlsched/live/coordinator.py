"""The per-job coordinator: membership, DL2's scaling rounds, failure handling, state file.

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
redo the steps since. The coordinator's state (roster, members, last snapshot) is written to
``<workdir>/coordinator.json`` after every change, so a restarted coordinator carries on.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq

from dlsched.live.assignment import best_fit, block_bounds, initial_owners, moved_params
from dlsched.live.config import JobConfig, Roster
from dlsched.live.models import num_params
from dlsched.live.node import pid_alive
from dlsched.live.protocol import (
    Codec,
    Message,
    ProtocolError,
    get_float,
    get_int,
    get_int_list,
    get_str,
    recv,
    router,
    send,
)

log = logging.getLogger(__name__)

STATE_FILE = "coordinator.json"
ENDPOINT_FILE = "coordinator.endpoint"

_MEMBER_TYPES = frozenset(
    {
        "REGISTER",
        "ACK",
        "SUSPENDED",
        "MIGRATED",
        "RESUMED",
        "READY",
        "SNAPSHOT_DONE",
        "ROLLED_BACK",
        "DONE",
    }
)
_HEARTBEAT_TYPES = frozenset({"HEARTBEAT"})
_CTL_TYPES = frozenset({"CTL_START", "CTL_SCALE", "CTL_CHECKPOINT", "CTL_STATUS", "CTL_SHUTDOWN"})


@dataclass(frozen=True, slots=True)
class CoordArgs:
    """Launch arguments of a coordinator process.

    Attributes:
        config_json: the job's `JobConfig` as JSON.
        job: job id.
        secret: the job's shared secret.
        workdir: job directory (state file, snapshots).
        owner_pid: pid of the job's owner; the coordinator exits when it is gone.
        recover: resume from the state file (and its endpoint) instead of starting afresh.
    """

    config_json: str
    job: str
    secret: str
    workdir: str
    owner_pid: int
    recover: bool = False


@dataclass(slots=True)
class Member:
    """A registered PS or worker as the coordinator sees it."""

    role: str
    id: int
    nonce: str
    endpoint: str
    server: int
    last_seen: float = field(default_factory=time.monotonic)
    rtt: float = 0.0
    version: int = 0
    t_version: float = field(default_factory=time.monotonic)
    phase: str = ""
    done: bool = False

    @property
    def key(self) -> str:
        return f"{'ps' if self.role == 'ps' else 'w'}{self.id}"

    @property
    def ident(self) -> bytes:
        return f"n-{self.nonce}".encode()


@dataclass(slots=True)
class Round:
    """One multi-message operation in flight (at most one at a time)."""

    kind: str  # start | scale | checkpoint | rollback
    client: bytes | None
    req: int
    deadline: float
    phase: str = "join"
    join: set[str] = field(default_factory=set)
    remove_ps: set[int] = field(default_factory=set)
    remove_workers: set[int] = field(default_factory=set)
    roster: Roster | None = None
    clock: int = 0
    version: int = 0
    files: list[str] | None = None
    ckpt_dir: str = ""
    participants: set[str] = field(default_factory=set)
    waiting: set[str] = field(default_factory=set)
    nacks: list[int] = field(default_factory=list)
    retries: int = 0
    t_assign0: float = 0.0
    t_commit_wall: float = 0.0
    assign_s: float = 0.0
    moved: int = 0
    migrated: dict[str, dict[str, Any]] = field(default_factory=dict)
    resumed: dict[str, dict[str, Any]] = field(default_factory=dict)
    suspended: dict[str, float] = field(default_factory=dict)


class Coordinator:
    """The coordinator process of one job (see the module docstring)."""

    def __init__(self, args: CoordArgs) -> None:
        self.args = args
        self.cfg = JobConfig.from_json(args.config_json)
        self.workdir = Path(args.workdir)
        self.codec = Codec(args.job, args.secret, "coord")
        self.ctx: zmq.Context[Any] = zmq.Context()
        self.sizes = [
            e - s for s, e in block_bounds(num_params(self.cfg.model), self.cfg.block_size)
        ]
        self.members: dict[str, Member] = {}
        self.by_nonce: dict[str, str] = {}
        self.roster: Roster | None = None
        self.round: Round | None = None
        self.next_ps_id = 0
        self.next_worker_id = 0
        self.max_epoch = -1
        self.rollback_epoch = -1
        self.snapshot: tuple[int, list[str]] | None = None
        self.snap_cov: dict[int, dict[str, list[int]]] = {}
        self.events: list[dict[str, Any]] = []
        self.samples: deque[tuple[float, int]] = deque(maxlen=200)
        self.speed_since = time.monotonic()
        self.pending_reconfig = False
        self.recover_rollback_at: float | None = None
        self.failed = ""
        self.stopping = False
        endpoint = f"tcp://{self.cfg.host}:*"
        saved: dict[str, Any] | None = None
        if args.recover:
            saved = json.loads((self.workdir / STATE_FILE).read_text())
            endpoint = str(saved["endpoint"])
        self.sock, self.endpoint = router(self.ctx, endpoint)
        if saved is not None:
            self._restore(saved)
        tmp = self.workdir / (ENDPOINT_FILE + ".tmp")
        tmp.write_text(self.endpoint)
        os.replace(tmp, self.workdir / ENDPOINT_FILE)
        self._save()

    # ------------------------------------------------------------------ loop

    def run(self) -> None:
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        next_check = 0.0
        while not self.stopping:
            if poller.poll(20):
                for _ in range(256):
                    try:
                        ident, frames = recv(self.sock, routed=True)
                    except zmq.Again:
                        break
                    if ident is not None:
                        self._dispatch(ident, frames)
                    if not int(self.sock.getsockopt(zmq.EVENTS)) & zmq.POLLIN:
                        break
            now = time.monotonic()
            if now >= next_check:
                next_check = now + 0.05
                self._check_failures(now)
                self._check_round(now)
                if not pid_alive(self.args.owner_pid):
                    log.warning("coordinator: owner gone, shutting the job down")
                    self._shutdown_all()
                    self.stopping = True
        self.ctx.destroy(linger=300)

    def _dispatch(self, ident: bytes, frames: list[Any]) -> None:
        prefix = ident[:2]
        allowed = {b"n-": _MEMBER_TYPES, b"h-": _HEARTBEAT_TYPES}.get(prefix, _CTL_TYPES)
        try:
            msg = self.codec.decode(frames, allowed)
            if msg.type in _CTL_TYPES or msg.type in ("REGISTER", "HEARTBEAT"):
                getattr(self, f"_on_{msg.type.lower()}")(ident, msg)
            else:
                key = self.by_nonce.get(ident[2:].decode(errors="replace"))
                if key is None:
                    log.info("coordinator: %s from unknown member %r ignored", msg.type, ident)
                    return
                member = self.members[key]
                member.last_seen = time.monotonic()
                getattr(self, f"_on_{msg.type.lower()}")(member, msg)
        except ProtocolError as exc:
            log.warning("coordinator: rejected message from %r: %s", ident, exc)
        except Exception:
            log.exception("coordinator: error handling a message from %r (dropped)", ident)

    def _send(self, member: Member, type_: str, body: dict[str, Any]) -> None:
        send(self.sock, self.codec.encode(type_, body), to=member.ident)

    def _reply(self, ident: bytes, req: int, ok: bool, **body: Any) -> None:
        send(self.sock, self.codec.encode("CTL_REPLY", {"req": req, "ok": ok, **body}), to=ident)

    # ------------------------------------------------------------------ membership

    def _on_register(self, ident: bytes, msg: Message) -> None:
        role = get_str(msg.body, "role")
        nonce = get_str(msg.body, "nonce", 64)
        server = get_int(msg.body, "server")
        if role not in ("ps", "worker") or ident != f"n-{nonce}".encode():
            raise ProtocolError("REGISTER with a bad role or nonce")
        key = self.by_nonce.get(nonce)
        if key is None:
            endpoint = ""
            if role == "ps":
                endpoint = get_str(msg.body, "endpoint", 256)
                if not endpoint.startswith("tcp://"):
                    raise ProtocolError("PS endpoint must be tcp://")
                mid, self.next_ps_id = self.next_ps_id, self.next_ps_id + 1
            else:
                mid, self.next_worker_id = self.next_worker_id, self.next_worker_id + 1
            member = Member(role, mid, nonce, endpoint, server)
            self.members[member.key] = member
            self.by_nonce[nonce] = member.key
            log.info("coordinator: registered %s (nonce %s)", member.key, nonce)
        else:
            member = self.members[key]
        member.last_seen = time.monotonic()
        self._send(
            member,
            "REGISTERED",
            {"id": member.id, "roster": self.roster.to_dict() if self.roster else None},
        )
        self._advance()

    def _on_heartbeat(self, ident: bytes, msg: Message) -> None:
        nonce = get_str(msg.body, "nonce", 64)
        t = get_float(msg.body, "t")
        key = self.by_nonce.get(nonce)
        if key is None or ident != f"h-{nonce}".encode():
            send(self.sock, self.codec.encode("SHUTDOWN"), to=ident)
            return
        member = self.members[key]
        now = time.monotonic()
        member.last_seen = now
        member.rtt = get_float(msg.body, "rtt")
        version = get_int(msg.body, "version")
        if version != member.version:
            member.version, member.t_version = version, now
        member.phase = str(msg.body.get("phase", ""))
        if member.role == "ps":
            self.samples.append((now, self._progress()))
        send(self.sock, self.codec.encode("HB_ACK", {"t": t}), to=ident)

    def _check_failures(self, now: float) -> None:
        timeout = self.cfg.heartbeat_timeout_s
        if self.recover_rollback_at is not None:
            if now < self.recover_rollback_at:
                return
            self.recover_rollback_at = None
            self._rollback("coordinator restarted during a round")
            return
        dead = [m for m in self.members.values() if now - m.last_seen > timeout]
        if not dead:
            return
        for m in dead:
            silent = now - m.last_seen
            log.warning("coordinator: %s silent for %.2f s, declared dead", m.key, silent)
            self.events.append(
                {"kind": f"{m.role}_failure", "id": m.id, "t": time.time(), "silent_s": silent}
            )
            del self.members[m.key]
            del self.by_nonce[m.nonce]
        dead_ps = {m.id for m in dead if m.role == "ps"}
        r = self.round
        if r is not None:
            dead_keys = {m.key for m in dead}
            if r.kind == "rollback" or r.kind == "start":
                self._abort(f"{sorted(dead_keys)} died during the {r.kind}")
                if r.kind == "rollback":
                    self._rollback("failure during a rollback")
                return
            if r.phase == "resume" and not dead_ps:
                r.waiting -= dead_keys
                self.pending_reconfig = True
                self._maybe_finish()
                return
            if r.phase == "join" and not (dead_keys & self._roster_keys()):
                self._abort(f"newcomers {sorted(dead_keys)} died before joining")
                return
            self._abort(f"{sorted(dead_keys)} died during the {r.kind} round")
            self._rollback("failure during a scaling round")
            return
        if self.roster is None:
            return
        if dead_ps & set(self.roster.ps):
            self._rollback(f"PS {sorted(dead_ps)} failed")
        elif any(f"w{w}" not in self.members for w in self.roster.workers):
            self._reconfig()

    def _roster_keys(self) -> set[str]:
        if self.roster is None:
            return set()
        return {f"ps{p}" for p in self.roster.ps} | {f"w{w}" for w in self.roster.workers}

    def _reconfig(self) -> None:
        """Drop dead workers at once; the step in progress is redone by the others."""
        assert self.roster is not None
        alive = [w for w in self.roster.workers if f"w{w}" in self.members]
        self.max_epoch += 1
        self.roster = Roster(self.max_epoch, dict(self.roster.ps), alive, list(self.roster.owners))
        self._save()
        self._broadcast("RECONFIG", {"roster": self.roster.to_dict()})
        self.events.append({"kind": "reconfig", "t": time.time(), "workers": alive})
        self._reset_speed()

    def _rollback(self, reason: str) -> None:
        """Reload every shard from the last complete snapshot after a PS failure."""
        if self.roster is None:
            return
        alive_ps = [p for p in self.roster.ps if f"ps{p}" in self.members]
        alive_w = [w for w in self.roster.workers if f"w{w}" in self.members]
        if not alive_ps:
            self.failed = f"no PS left ({reason})"
            log.error("coordinator: %s", self.failed)
            return
        version, files = self.snapshot if self.snapshot else (0, None)
        owners = best_fit(
            [o if o in alive_ps else None for o in self.roster.owners], self.sizes, alive_ps
        )
        before = max([self._progress()] + [m.version for m in self.members.values()])
        self.max_epoch += 1
        self.rollback_epoch = self.max_epoch
        self.roster = Roster(
            self.max_epoch, {p: self.roster.ps[p] for p in alive_ps}, alive_w, owners
        )
        for m in self.members.values():
            m.done = False
            if m.role == "ps":
                m.version = version
        self.snap_cov = {v: c for v, c in self.snap_cov.items() if v <= version}
        self._delete_snapshots(lambda v: v > version)
        rolled = max(0, before - version)
        log.warning("coordinator: %s; rolling back %d steps to version %d", reason, rolled, version)
        self.events.append(
            {
                "kind": "rollback",
                "t": time.time(),
                "reason": reason,
                "version": version,
                "steps_rolled_back": rolled,
            }
        )
        self.round = Round(
            "rollback",
            None,
            0,
            time.monotonic() + self.cfg.round_timeout_s,
            "rollback",
            roster=self.roster,
            version=version,
            files=files,
        )
        self.round.waiting = {f"ps{p}" for p in alive_ps}
        self._save()
        body = {"roster": self.roster.to_dict(), "version": version, "files": files}
        self._broadcast("ROLLBACK", body)
        self._reset_speed()

    def _broadcast(self, type_: str, body: dict[str, Any]) -> None:
        for key in sorted(self._roster_keys()):
            member = self.members.get(key)
            if member is not None:
                self._send(member, type_, body)

    # ------------------------------------------------------------------ control requests

    def _on_ctl_status(self, ident: bytes, msg: Message) -> None:
        self._reply(ident, get_int(msg.body, "req"), True, **self.status())

    def status(self) -> dict[str, Any]:
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
                    "role": m.role,
                    "id": m.id,
                    "nonce": m.nonce,
                    "server": m.server,
                    "version": m.version,
                    "rtt": m.rtt,
                    "phase": m.phase,
                }
                for m in self.members.values()
            ],
            "progress": self._progress(),
            "speed": self._speed(),
            "round": None if r is None else {"kind": r.kind, "phase": r.phase},
            "snapshot": self.snapshot[0] if self.snapshot else None,
            "events": self.events[-100:],
            "finished": finished and r is None,
            "failed": self.failed,
        }

    def _on_ctl_shutdown(self, ident: bytes, msg: Message) -> None:
        self._shutdown_all()
        self._reply(ident, get_int(msg.body, "req"), True)
        self.stopping = True

    def _shutdown_all(self) -> None:
        for m in self.members.values():
            self._send(m, "SHUTDOWN", {})

    def _on_ctl_start(self, ident: bytes, msg: Message) -> None:
        req = get_int(msg.body, "req")
        if self.round is not None or self.roster is not None:
            self._reply(ident, req, False, error="job already started")
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
            self._reply(ident, req, False, error="need >= 1 PS and <= total_batch workers")
            return
        r = Round("start", ident, req, time.monotonic() + self.cfg.round_timeout_s)
        r.join = set(ps) | set(workers)
        r.version = get_int(msg.body, "version")
        r.files = files
        self.round = r
        self._advance()

    def _on_ctl_scale(self, ident: bytes, msg: Message) -> None:
        req = get_int(msg.body, "req")
        join = msg.body.get("join")
        if not isinstance(join, list):
            raise ProtocolError("CTL_SCALE join must be a list")
        remove_ps = set(get_int_list(msg.body, "remove_ps"))
        remove_w = set(get_int_list(msg.body, "remove_workers"))
        if not _str_list(join):
            raise ProtocolError("CTL_SCALE join must be a list of nonces")
        error = self._check_scale(len(join), remove_ps, remove_w, msg.body)
        if error:
            self._reply(ident, req, False, error=error)
            return
        r = Round("scale", ident, req, time.monotonic() + self.cfg.round_timeout_s)
        r.join, r.remove_ps, r.remove_workers = set(join), remove_ps, remove_w
        self.round = r
        self._advance()

    def _check_scale(
        self, n_join: int, remove_ps: set[int], remove_w: set[int], body: dict[str, Any]
    ) -> str:
        if self.round is not None:
            return f"busy with a {self.round.kind} round"
        if self.roster is None:
            return "job not started"
        if self.failed:
            return self.failed
        if not remove_ps <= set(self.roster.ps) or not remove_w <= set(self.roster.workers):
            return "asked to remove tasks that are not in the job"
        n_ps = len(self.roster.ps) - len(remove_ps) + int(body.get("add_ps", 0))
        n_w = len(self.roster.workers) - len(remove_w) + int(body.get("add_workers", 0))
        if n_ps < 1:
            return "a job needs at least one PS"
        if n_w > self.cfg.total_batch:
            return f"{n_w} workers exceed the total batch {self.cfg.total_batch}"
        return ""

    def _on_ctl_checkpoint(self, ident: bytes, msg: Message) -> None:
        req = get_int(msg.body, "req")
        error = self._check_scale(0, set(), set(), {})
        if error:
            self._reply(ident, req, False, error=error)
            return
        r = Round("checkpoint", ident, req, time.monotonic() + self.cfg.round_timeout_s)
        r.ckpt_dir = get_str(msg.body, "dir")
        self.round = r
        self._prepare()

    # ------------------------------------------------------------------ rounds

    def _advance(self) -> None:
        r = self.round
        if r is None or r.phase != "join" or not all(n in self.by_nonce for n in r.join):
            return
        if r.kind == "start":
            self._start_members()
        elif r.kind == "scale":
            self._prepare()

    def _start_members(self) -> None:
        r = self.round
        assert r is not None
        joined = [self.members[self.by_nonce[n]] for n in r.join]
        ps = sorted((m for m in joined if m.role == "ps"), key=lambda m: m.id)
        workers = sorted(m.id for m in joined if m.role == "worker")
        self.max_epoch += 1
        self.roster = Roster(
            self.max_epoch,
            {m.id: m.endpoint for m in ps},
            workers,
            initial_owners(self.sizes, [m.id for m in ps]),
        )
        body = {"roster": self.roster.to_dict(), "version": r.version, "files": r.files}
        for m in joined:
            m.version = r.version
            self._send(m, "START", body)
        r.phase = "start"
        r.waiting = {m.key for m in joined}
        self._save()
        self._reset_speed()

    def _prepare(self) -> None:
        """Step 2: new assignment (best fit) and scaling clock, sent to every member."""
        r = self.round
        assert r is not None and self.roster is not None
        r.t_assign0 = time.perf_counter()
        old = self.roster
        joined = [self.members[self.by_nonce[n]] for n in sorted(r.join)]
        ps = {p: e for p, e in old.ps.items() if p not in r.remove_ps}
        ps.update({m.id: m.endpoint for m in joined if m.role == "ps"})
        ps = dict(sorted(ps.items()))
        workers = [w for w in old.workers if w not in r.remove_workers]
        workers += sorted(m.id for m in joined if m.role == "worker")
        owners = best_fit(old.owners, self.sizes, list(ps)) if r.kind == "scale" else old.owners
        self.max_epoch += 1
        r.roster = Roster(self.max_epoch, ps, workers, list(owners))
        r.moved = moved_params(old.owners, owners, self.sizes)
        r.participants = self._roster_keys() | {m.key for m in joined}
        r.clock = self._clock()
        self._send_prepare(r)
        self._save()

    def _send_prepare(self, r: Round) -> None:
        assert r.roster is not None
        r.phase = "prepare"
        r.waiting = {k for k in r.participants if k in self.members}
        r.nacks = []
        body = {
            "clock": r.clock,
            "epoch": r.roster.epoch,
            "kind": r.kind,
            "roster": r.roster.to_dict(),
        }
        for key in sorted(r.waiting):
            self._send(self.members[key], "PREPARE", body)

    def _clock(self, factor: float = 1.0) -> int:
        """Scaling clock: the version all members will reach only after hearing of it.

        Estimated from the version counters reported with heartbeats, extrapolated with the
        measured step rate, plus the steps that run during two round trips (and a margin).
        """
        assert self.roster is not None
        now = time.monotonic()
        speed = self._speed()
        keys = self._roster_keys()
        members = [m for k, m in self.members.items() if k in keys]
        current = max(
            [m.version + speed * (now - m.t_version) for m in members] + [self._progress()]
        )
        rtt = max([m.rtt for m in members] + [0.002])
        ahead = math.ceil(speed * (2 * rtt + 0.01) * factor) + 1
        return min(self.cfg.total_steps, math.ceil(current) + ahead)

    def _on_ack(self, member: Member, msg: Message) -> None:
        r = self.round
        clock = get_int(msg.body, "clock")
        if r is None or r.phase != "prepare" or r.roster is None or clock != r.clock:
            return
        if get_int(msg.body, "epoch") != r.roster.epoch or member.key not in r.waiting:
            return
        r.waiting.discard(member.key)
        version = get_int(msg.body, "version")
        member.version = max(member.version, version)
        if not msg.body.get("ok", False):
            r.nacks.append(version)
        if r.waiting:
            return
        if r.nacks:  # someone passed the clock already: choose a later one
            r.retries += 1
            r.clock = min(
                self.cfg.total_steps, max([*r.nacks, self._clock(2.0**r.retries)]) + r.retries
            )
            log.info("coordinator: clock missed, retrying with clock %d", r.clock)
            self._send_prepare(r)
            return
        body = {"clock": r.clock, "kind": r.kind, "roster": r.roster.to_dict(), "dir": r.ckpt_dir}
        ps_keys = {k for k in r.participants if k.startswith("ps") and k in self.members}
        r.t_commit_wall = time.time()
        r.assign_s = time.perf_counter() - r.t_assign0
        for key in sorted(ps_keys):
            self._send(self.members[key], "COMMIT", body)
        r.phase = "migrate"
        r.waiting = ps_keys

    def _on_migrated(self, member: Member, msg: Message) -> None:
        r = self.round
        if r is None or r.phase != "migrate" or member.key not in r.waiting:
            return
        r.waiting.discard(member.key)
        r.migrated[member.key] = dict(msg.body)
        member.version = get_int(msg.body, "version")
        if r.waiting:
            return
        assert r.roster is not None
        if r.kind == "checkpoint":
            r.phase = "suspend"
            r.waiting = {f"w{w}" for w in r.roster.workers if f"w{w}" in self.members}
            r.waiting -= set(r.suspended)
            self._maybe_finish()
            return
        removed = [f"ps{p}" for p in r.remove_ps] + [f"w{w}" for w in r.remove_workers]
        self.roster = r.roster
        for key in removed:
            m = self.members.pop(key, None)
            if m is not None:
                del self.by_nonce[m.nonce]
                self._send(m, "SHUTDOWN", {})
        self._save()
        body = {"roster": r.roster.to_dict(), "version": r.clock, "pull": False}
        r.phase = "resume"
        r.waiting = set()
        for w in r.roster.workers:
            m = self.members.get(f"w{w}")
            if m is not None:
                self._send(m, "RESUME", body)
                r.waiting.add(m.key)
        self._reset_speed()
        self._maybe_finish()

    def _on_suspended(self, member: Member, msg: Message) -> None:
        r = self.round
        if r is None or get_int(msg.body, "clock") != r.clock:
            return
        r.suspended[member.key] = get_float(msg.body, "t")
        if r.phase == "suspend":
            r.waiting.discard(member.key)
            self._maybe_finish()

    def _on_ready(self, member: Member, msg: Message) -> None:
        r = self.round
        member.version = get_int(msg.body, "version")
        if r is not None and r.phase == "start":
            r.waiting.discard(member.key)
            self._maybe_finish()

    def _on_resumed(self, member: Member, msg: Message) -> None:
        r = self.round
        member.done = False
        if r is not None and r.phase in ("start", "resume") and member.key in r.waiting:
            r.waiting.discard(member.key)
            r.resumed[member.key] = dict(msg.body)
            self._maybe_finish()

    def _on_rolled_back(self, member: Member, msg: Message) -> None:
        r = self.round
        if r is None or r.kind != "rollback" or r.phase != "rollback" or r.roster is None:
            return
        if get_int(msg.body, "epoch") != r.roster.epoch:
            return
        r.waiting.discard(member.key)
        if r.waiting:
            return
        body = {"roster": r.roster.to_dict(), "version": r.version, "pull": True}
        r.phase = "resume"
        for w in r.roster.workers:
            m = self.members.get(f"w{w}")
            if m is not None:
                self._send(m, "RESUME", body)
                r.waiting.add(m.key)
        self._maybe_finish()

    def _on_done(self, member: Member, msg: Message) -> None:
        member.version = get_int(msg.body, "version")
        member.done = member.version >= self.cfg.total_steps

    def _on_snapshot_done(self, member: Member, msg: Message) -> None:
        version = get_int(msg.body, "version")
        epoch = get_int(msg.body, "epoch", None)
        blocks = get_int_list(msg.body, "blocks")
        path = get_str(msg.body, "file")
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
        self._delete_snapshots(lambda v: v < version)
        self._save()

    def _maybe_finish(self) -> None:
        r = self.round
        if r is None or r.waiting or r.phase not in ("start", "resume", "suspend"):
            return
        self.round = None
        report = self._report(r)
        if r.kind == "rollback" and self.events:
            self.events[-1]["resumed_t"] = time.time()
        if r.client is not None:
            self._reply(r.client, r.req, True, report=report)
        self._save()
        if self.pending_reconfig:
            self.pending_reconfig = False
            self._reconfig()

    def _report(self, r: Round) -> dict[str, Any]:
        if r.kind == "start":
            return {"version": r.version, "t_resume": [b["t"] for b in r.resumed.values()]}
        if r.kind == "checkpoint":
            return {
                "version": r.clock,
                "files": sorted(str(b.get("file")) for b in r.migrated.values()),
                "t_suspend": sorted(r.suspended.values()),
                "assignment_s": r.assign_s,
                "write_s": max(
                    (b["t_done"] - b["t_reach"] for b in r.migrated.values()), default=0.0
                ),
            }
        if r.kind != "scale":
            return {}
        migrated = list(r.migrated.values())
        joiners = {self.by_nonce.get(n) for n in r.join}
        registrations = [
            b.get("registration_s", 0.0) for k, b in r.migrated.items() if k in joiners
        ]
        registrations += [
            b.get("registration_s", 0.0) for k, b in r.resumed.items() if k in joiners
        ]
        reach = [b["t_reach"] for k, b in r.migrated.items() if k not in joiners]
        suspension = {
            k: float(b.get("suspension_s", 0.0)) for k, b in r.resumed.items() if k not in joiners
        }
        return {
            "clock": r.clock,
            "epoch": r.roster.epoch if r.roster else -1,
            "registration_s": max(registrations, default=0.0),
            "assignment_s": r.assign_s,
            "migration_s": (max(b["t_done"] for b in migrated) - min(reach)) if reach else 0.0,
            "clock_wait_s": (min(reach) - r.t_commit_wall) if reach else 0.0,
            "suspension_s": suspension,
            "stall_s": {
                k: float(b.get("step_gap_s", 0.0)) - float(b.get("step_interval_s", 0.0))
                for k, b in r.resumed.items()
                if k not in joiners and b.get("step_interval_s")
            },
            "moved_params": r.moved,
            "moved_bytes": sum(int(b.get("bytes_out", 0)) for b in migrated),
            "clock_retries": r.retries,
        }

    def _abort(self, reason: str) -> None:
        r = self.round
        if r is None:
            return
        self.round = None
        log.warning("coordinator: %s round aborted: %s", r.kind, reason)
        self.events.append({"kind": "abort", "round": r.kind, "t": time.time(), "reason": reason})
        if r.client is not None:
            self._reply(r.client, r.req, False, error=f"round aborted: {reason}")
        for nonce in r.join:
            key = self.by_nonce.get(nonce)
            if key is not None and key not in self._roster_keys():
                m = self.members.pop(key)
                del self.by_nonce[nonce]
                self._send(m, "SHUTDOWN", {})

    def _check_round(self, now: float) -> None:
        r = self.round
        if r is None or now < r.deadline:
            return
        needs_rollback = r.phase not in ("join",) and r.kind in ("scale", "checkpoint", "rollback")
        self._abort(f"{r.kind} round timed out in phase {r.phase}")
        if needs_rollback:
            self._rollback(f"{r.kind} round timed out")

    # ------------------------------------------------------------------ progress

    def _progress(self) -> int:
        if self.roster is None:
            return 0
        versions = [
            self.members[f"ps{p}"].version for p in self.roster.ps if f"ps{p}" in self.members
        ]
        return max(versions, default=0)

    def _speed(self) -> float:
        """Steps per second over the last 5 s since the last membership change."""
        now = time.monotonic()
        window = [(t, v) for t, v in self.samples if t >= max(now - 5.0, self.speed_since)]
        if len(window) < 2 or window[-1][0] - window[0][0] < 0.2:
            return 0.0
        return max(0.0, (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0]))

    def _reset_speed(self) -> None:
        self.speed_since = time.monotonic()

    # ------------------------------------------------------------------ persistence

    def _delete_snapshots(self, which: Any) -> None:
        root = self.workdir / "snapshots"
        if not root.is_dir():
            return
        keep = {Path(f).parent for f in (self.snapshot[1] if self.snapshot else [])}
        for d in root.iterdir():
            numbered = d.name.startswith("v") and d.name[1:].isdigit()
            if numbered and which(int(d.name[1:])) and d not in keep:
                shutil.rmtree(d, ignore_errors=True)

    def _save(self) -> None:
        r = self.round
        state = {
            "endpoint": self.endpoint,
            "roster": self.roster.to_dict() if self.roster else None,
            "members": [
                {
                    "role": m.role,
                    "id": m.id,
                    "nonce": m.nonce,
                    "endpoint": m.endpoint,
                    "server": m.server,
                }
                for m in self.members.values()
            ],
            "next_ps_id": self.next_ps_id,
            "next_worker_id": self.next_worker_id,
            "max_epoch": self.max_epoch,
            "rollback_epoch": self.rollback_epoch,
            "snapshot": {"version": self.snapshot[0], "files": self.snapshot[1]}
            if self.snapshot
            else None,
            "round": None if r is None else {"kind": r.kind, "phase": r.phase},
            "events": self.events[-100:],
            "failed": self.failed,
        }
        tmp = self.workdir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(state, indent=1))
        os.replace(tmp, self.workdir / STATE_FILE)

    def _restore(self, state: dict[str, Any]) -> None:
        self.roster = Roster.from_dict(state["roster"]) if state.get("roster") else None
        for d in state.get("members", []):
            m = Member(d["role"], int(d["id"]), d["nonce"], d["endpoint"], int(d["server"]))
            self.members[m.key] = m
            self.by_nonce[m.nonce] = m.key
        self.next_ps_id = int(state["next_ps_id"])
        self.next_worker_id = int(state["next_worker_id"])
        self.max_epoch = int(state["max_epoch"])
        self.rollback_epoch = int(state["rollback_epoch"])
        snap = state.get("snapshot")
        self.snapshot = (int(snap["version"]), list(snap["files"])) if snap else None
        self.events = list(state.get("events", []))
        self.failed = str(state.get("failed", ""))
        rnd = state.get("round")
        self.events.append({"kind": "coordinator_recovered", "t": time.time(), "round": rnd})
        if rnd and rnd.get("phase") != "join" and rnd.get("kind") != "start":
            # members may be half way through a round whose bookkeeping was lost: resynchronise
            self.recover_rollback_at = time.monotonic() + 1.5 * self.cfg.heartbeat_timeout_s
        log.warning("coordinator: recovered %d members from the state file", len(self.members))


def _str_list(value: Any, max_len: int = 64) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and len(v) <= max_len for v in value)


def coordinator_main(args: CoordArgs) -> None:
    """Entry point of a coordinator process."""
    Coordinator(args).run()
