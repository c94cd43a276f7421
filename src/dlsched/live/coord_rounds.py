"""The coordinator's state and its rounds: start, DL2 scaling, checkpoint, rollback, reconfig.

`RoundDriver` holds what the coordinator knows (roster, members, round in flight, last
snapshot) and moves rounds from phase to phase (`dlsched.live.rounds`) as members answer. It
sends nothing itself: messages go to ``outbox`` for the server, and every method that needs the
time takes ``now`` (monotonic seconds). `dlsched.live.coord_core.CoordinatorCore` adds the
message dispatch, the membership and the owner's requests on top.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.live.assignment import best_fit, block_bounds, initial_owners, moved_params
from dlsched.live.config import JobConfig, Roster
from dlsched.live.coord_store import delete_snapshots
from dlsched.live.membership import Member, Membership, Role, roster_keys
from dlsched.live.models import num_params
from dlsched.live.protocol import Message, get_float, get_int
from dlsched.live.rounds import (
    FailureAction,
    Phase,
    Round,
    RoundKind,
    acknowledge,
    is_finished,
    new_round,
    on_failures,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A message for the server to send: routing identity, type, body."""

    to: bytes
    type: str
    body: dict[str, Any]


class RoundDriver:
    """The coordinator's state and round logic (see the module docstring).

    Args:
        cfg: the job's settings.
        workdir: the job directory (state file, snapshots, checkpoints).
        now: monotonic time at creation, seconds.
        wall: wall-clock source for the times reported to the owner.
        perf: high-resolution timer for measured durations.
    """

    def __init__(
        self,
        cfg: JobConfig,
        workdir: Path,
        now: float,
        wall: Callable[[], float],
        perf: Callable[[], float],
    ) -> None:
        self.cfg = cfg
        self.workdir = workdir
        self.wall = wall
        self.perf = perf
        self.sizes = [e - s for s, e in block_bounds(num_params(cfg.model), cfg.block_size)]
        self.members = Membership(cfg.heartbeat_timeout_s)
        self.members.reset_speed(now)
        self.roster: Roster | None = None
        self.round: Round | None = None
        self.max_epoch = -1
        self.rollback_epoch = -1
        self.snapshot: tuple[int, list[str]] | None = None
        self.snap_cov: dict[int, dict[str, list[int]]] = {}
        self.events: list[dict[str, Any]] = []
        self.pending_reconfig = False
        self.recover_rollback_at: float | None = None
        self.failed = ""
        self.stopping = False
        self.dirty = False
        self.outbox: list[Outgoing] = []

    # ------------------------------------------------------------------ primitives

    def send(self, member: Member, type_: str, body: dict[str, Any]) -> None:
        self.outbox.append(Outgoing(member.ident, type_, body))

    def reply(self, ident: bytes, req: int, ok: bool, **body: Any) -> None:
        self.outbox.append(Outgoing(ident, "CTL_REPLY", {"req": req, "ok": ok, **body}))

    def broadcast(self, type_: str, body: dict[str, Any]) -> None:
        for key in sorted(roster_keys(self.roster)):
            member = self.members.get(key)
            if member is not None:
                self.send(member, type_, body)

    def save(self) -> None:
        """Mark the state as changed: the server writes the state file."""
        self.dirty = True

    def progress(self) -> int:
        return self.members.progress(self.roster)

    def delete_snapshots(self, which: Callable[[int], bool]) -> None:
        delete_snapshots(self.workdir, which, self.snapshot[1] if self.snapshot else [])

    def new_round(self, kind: RoundKind, client: bytes | None, req: int, now: float) -> Round:
        return new_round(kind, client, req, now, self.cfg.round_timeout_s)

    # ------------------------------------------------------------------ failures

    def on_failures_in_round(self, dead_keys: set[str], dead_ps: bool, now: float) -> None:
        r = self.round
        assert r is not None
        action = on_failures(r, dead_keys, dead_ps, roster_keys(self.roster))
        if action == FailureAction.DROP_WAITING:
            r.waiting -= dead_keys
            self.pending_reconfig = True
            self.maybe_finish(now)
        elif r.phase == Phase.JOIN and action == FailureAction.ABORT and r.kind == RoundKind.SCALE:
            self.abort(f"newcomers {sorted(dead_keys)} died before joining")
        elif r.kind in (RoundKind.START, RoundKind.ROLLBACK):
            self.abort(f"{sorted(dead_keys)} died during the {r.kind.value}")
            if action == FailureAction.ABORT_AND_ROLLBACK:
                self.rollback("failure during a rollback", now)
        else:
            self.abort(f"{sorted(dead_keys)} died during the {r.kind.value} round")
            self.rollback("failure during a scaling round", now)

    def reconfig(self, now: float) -> None:
        """Drop dead workers at once; the step in progress is redone by the others."""
        assert self.roster is not None
        alive = [w for w in self.roster.workers if f"w{w}" in self.members]
        self.max_epoch += 1
        self.roster = Roster(self.max_epoch, dict(self.roster.ps), alive, list(self.roster.owners))
        self.save()
        self.broadcast("RECONFIG", {"roster": self.roster.to_dict()})
        self.events.append({"kind": "reconfig", "t": self.wall(), "workers": alive})
        self.members.reset_speed(now)

    def rollback(self, reason: str, now: float) -> None:
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
        members = list(self.members.members.values())
        before = max([self.progress()] + [m.version for m in members])
        self.max_epoch += 1
        self.rollback_epoch = self.max_epoch
        self.roster = Roster(
            self.max_epoch, {p: self.roster.ps[p] for p in alive_ps}, alive_w, owners
        )
        for m in members:
            m.done = False
            if m.role == Role.PS:
                m.version = version
        self.snap_cov = {v: c for v, c in self.snap_cov.items() if v <= version}
        self.delete_snapshots(lambda v: v > version)
        rolled = max(0, before - version)
        log.warning("coordinator: %s; rolling back %d steps to version %d", reason, rolled, version)
        self.events.append(
            {
                "kind": "rollback",
                "t": self.wall(),
                "reason": reason,
                "version": version,
                "steps_rolled_back": rolled,
            }
        )
        r = self.new_round(RoundKind.ROLLBACK, None, 0, now)
        r.phase, r.roster, r.version, r.files = Phase.ROLLBACK, self.roster, version, files
        r.waiting = {f"ps{p}" for p in alive_ps}
        self.round = r
        self.save()
        body = {"roster": self.roster.to_dict(), "version": version, "files": files}
        self.broadcast("ROLLBACK", body)
        self.members.reset_speed(now)

    def abort(self, reason: str) -> None:
        """End the round in flight: tell the owner why, send newcomers away."""
        r = self.round
        if r is None:
            return
        self.round = None
        log.warning("coordinator: %s round aborted: %s", r.kind, reason)
        self.events.append(
            {"kind": "abort", "round": r.kind.value, "t": self.wall(), "reason": reason}
        )
        if r.client is not None:
            self.reply(r.client, r.req, False, error=f"round aborted: {reason}")
        in_roster = roster_keys(self.roster)
        for nonce in r.join:
            m = self.members.of_nonce(nonce)
            if m is not None and m.key not in in_roster:
                self.members.remove(m.key)
                self.send(m, "SHUTDOWN", {})
        self.save()

    # ------------------------------------------------------------------ rounds

    def advance(self, now: float) -> None:
        """Leave the join phase once every newcomer registered."""
        r = self.round
        if r is None or r.phase != Phase.JOIN:
            return
        if not all(self.members.of_nonce(n) is not None for n in r.join):
            return
        if r.kind == RoundKind.START:
            self.start_members(now)
        elif r.kind == RoundKind.SCALE:
            self.prepare(now)

    def _joined(self, r: Round) -> list[Member]:
        out = []
        for nonce in sorted(r.join):
            m = self.members.of_nonce(nonce)
            assert m is not None
            out.append(m)
        return out

    def start_members(self, now: float) -> None:
        r = self.round
        assert r is not None
        joined = self._joined(r)
        ps = sorted((m for m in joined if m.role == Role.PS), key=lambda m: m.id)
        workers = sorted(m.id for m in joined if m.role == Role.WORKER)
        self.max_epoch += 1
        self.roster = Roster(
            self.max_epoch,
            {m.id: m.endpoint for m in ps},
            workers,
            initial_owners(self.sizes, [m.id for m in ps]),
        )
        if r.files:  # the files it starts from are its first snapshot: a rollback goes there
            self.snapshot = (r.version, list(r.files))
        body = {"roster": self.roster.to_dict(), "version": r.version, "files": r.files}
        for m in joined:
            m.version = r.version
            self.send(m, "START", body)
        r.phase = Phase.START
        r.waiting = {m.key for m in joined}
        self.save()
        self.members.reset_speed(now)

    def prepare(self, now: float) -> None:
        """Step 2: new assignment (best fit) and scaling clock, sent to every member."""
        r = self.round
        assert r is not None and self.roster is not None
        r.t_assign0 = self.perf()
        old = self.roster
        joined = self._joined(r)
        ps = {p: e for p, e in old.ps.items() if p not in r.remove_ps}
        ps.update({m.id: m.endpoint for m in joined if m.role == Role.PS})
        ps = dict(sorted(ps.items()))
        workers = [w for w in old.workers if w not in r.remove_workers]
        workers += sorted(m.id for m in joined if m.role == Role.WORKER)
        scale = r.kind == RoundKind.SCALE
        owners = best_fit(old.owners, self.sizes, list(ps)) if scale else old.owners
        self.max_epoch += 1
        r.roster = Roster(self.max_epoch, ps, workers, list(owners))
        r.moved = moved_params(old.owners, owners, self.sizes)
        r.participants = roster_keys(self.roster) | {m.key for m in joined}
        r.clock = self.members.scaling_clock(self.roster, self.cfg.total_steps, now)
        self.send_prepare(r)
        self.save()

    def send_prepare(self, r: Round) -> None:
        assert r.roster is not None
        r.phase = Phase.PREPARE
        r.waiting = {k for k in r.participants if k in self.members}
        r.nacks = []
        body = {
            "clock": r.clock,
            "epoch": r.roster.epoch,
            "kind": r.kind.value,
            "roster": r.roster.to_dict(),
        }
        for key in sorted(r.waiting):
            self.send(self.members[key], "PREPARE", body)

    def _on_ack(self, member: Member, msg: Message, now: float) -> None:
        r = self.round
        clock = get_int(msg.body, "clock")
        if r is None:
            return
        epoch = get_int(msg.body, "epoch")
        version = get_int(msg.body, "version")
        if not acknowledge(r, member.key, clock, epoch, bool(msg.body.get("ok", False)), version):
            return
        member.version = max(member.version, version)
        if r.waiting:
            return
        if r.nacks:  # someone passed the clock already: choose a later one
            r.retries += 1
            later = self.members.scaling_clock(
                self.roster, self.cfg.total_steps, now, 2.0**r.retries
            )
            r.clock = min(self.cfg.total_steps, max([*r.nacks, later]) + r.retries)
            log.info("coordinator: clock missed, retrying with clock %d", r.clock)
            self.send_prepare(r)
            return
        assert r.roster is not None
        body = {
            "clock": r.clock,
            "kind": r.kind.value,
            "roster": r.roster.to_dict(),
            "dir": r.ckpt_dir,
        }
        ps_keys = {k for k in r.participants if k.startswith("ps") and k in self.members}
        r.t_commit_wall = self.wall()
        r.assign_s = self.perf() - r.t_assign0
        for key in sorted(ps_keys):
            self.send(self.members[key], "COMMIT", body)
        r.phase = Phase.MIGRATE
        r.waiting = ps_keys

    def _on_migrated(self, member: Member, msg: Message, now: float) -> None:
        r = self.round
        if r is None or r.phase != Phase.MIGRATE or member.key not in r.waiting:
            return
        r.waiting.discard(member.key)
        r.migrated[member.key] = dict(msg.body)
        member.version = get_int(msg.body, "version")
        if r.waiting:
            return
        assert r.roster is not None
        if r.kind == RoundKind.CHECKPOINT:
            r.phase = Phase.SUSPEND
            r.waiting = {f"w{w}" for w in r.roster.workers if f"w{w}" in self.members}
            r.waiting -= set(r.suspended)
            self.maybe_finish(now)
            return
        removed = [f"ps{p}" for p in r.remove_ps] + [f"w{w}" for w in r.remove_workers]
        self.roster = r.roster
        for key in removed:
            m = self.members.remove(key)
            if m is not None:
                self.send(m, "SHUTDOWN", {})
        self.save()
        self.resume_workers(r, {"roster": r.roster.to_dict(), "version": r.clock, "pull": False})
        self.members.reset_speed(now)
        self.maybe_finish(now)

    def resume_workers(self, r: Round, body: dict[str, Any]) -> None:
        assert r.roster is not None
        r.phase = Phase.RESUME
        for w in r.roster.workers:
            m = self.members.get(f"w{w}")
            if m is not None:
                self.send(m, "RESUME", body)
                r.waiting.add(m.key)

    def _on_suspended(self, member: Member, msg: Message, now: float) -> None:
        r = self.round
        if r is None or get_int(msg.body, "clock") != r.clock:
            return
        r.suspended[member.key] = get_float(msg.body, "t")
        if r.phase == Phase.SUSPEND:
            r.waiting.discard(member.key)
            self.maybe_finish(now)

    def _on_ready(self, member: Member, msg: Message, now: float) -> None:
        r = self.round
        member.version = get_int(msg.body, "version")
        if r is not None and r.phase == Phase.START:
            r.waiting.discard(member.key)
            self.maybe_finish(now)

    def _on_resumed(self, member: Member, msg: Message, now: float) -> None:
        r = self.round
        member.done = False
        if r is not None and r.phase in (Phase.START, Phase.RESUME) and member.key in r.waiting:
            r.waiting.discard(member.key)
            r.resumed[member.key] = dict(msg.body)
            self.maybe_finish(now)

    def _on_rolled_back(self, member: Member, msg: Message, now: float) -> None:
        r = self.round
        if r is None or r.kind != RoundKind.ROLLBACK or r.phase != Phase.ROLLBACK:
            return
        if r.roster is None or get_int(msg.body, "epoch") != r.roster.epoch:
            return
        r.waiting.discard(member.key)
        if r.waiting:
            return
        self.resume_workers(r, {"roster": r.roster.to_dict(), "version": r.version, "pull": True})
        self.maybe_finish(now)

    def _on_done(self, member: Member, msg: Message, now: float) -> None:
        member.version = get_int(msg.body, "version")
        member.done = member.version >= self.cfg.total_steps

    def maybe_finish(self, now: float) -> None:
        """Close the round once it is in a final phase and nobody is awaited."""
        r = self.round
        if r is None or not is_finished(r):
            return
        self.round = None
        report = self.report(r)
        if r.kind == RoundKind.ROLLBACK and self.events:
            self.events[-1]["resumed_t"] = self.wall()
        if r.client is not None:
            self.reply(r.client, r.req, True, report=report)
        self.save()
        if self.pending_reconfig:
            self.pending_reconfig = False
            self.reconfig(now)

    def report(self, r: Round) -> dict[str, Any]:
        """What the owner learns of a finished round (timings of DL2's steps, moved data)."""
        if r.kind == RoundKind.START:
            return {"version": r.version, "t_resume": [b["t"] for b in r.resumed.values()]}
        if r.kind == RoundKind.CHECKPOINT:
            return {
                "version": r.clock,
                "files": sorted(str(b.get("file")) for b in r.migrated.values()),
                "t_suspend": sorted(r.suspended.values()),
                "assignment_s": r.assign_s,
                "write_s": max(
                    (b["t_done"] - b["t_reach"] for b in r.migrated.values()), default=0.0
                ),
            }
        if r.kind != RoundKind.SCALE:
            return {}
        migrated = list(r.migrated.values())
        joiners = {m.key for n in r.join if (m := self.members.of_nonce(n)) is not None}
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
