"""The coordinator's logic under a fake clock: no processes, no sockets.

Messages are fed to `CoordinatorCore.handle` with an explicit ``now``; what the coordinator would
send is read from its outbox.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlsched.live.coord_core import CoordinatorCore
from dlsched.live.coord_rounds import Outgoing
from dlsched.live.membership import Member, Membership, Role
from dlsched.live.protocol import Message
from dlsched.live.rounds import (
    FailureAction,
    Phase,
    Round,
    RoundKind,
    is_finished,
    new_round,
    on_failures,
    rollback_needed_on_abort,
    timed_out,
)
from tests.live.live_helpers import config

CTL = b"ctl-owner"
HB_TIMEOUT = 1.0
ROUND_TIMEOUT = 15.0


class FakeWall:
    """A wall clock that only moves when told."""

    def __init__(self) -> None:
        self.t = 1_000.0

    def __call__(self) -> float:
        return self.t


def _msg(type_: str, **body: Any) -> Message:
    return Message(type_, "test", dict(body))


def _core(tmp_path: Path) -> CoordinatorCore:
    cfg = config(heartbeat_timeout_s=HB_TIMEOUT, round_timeout_s=ROUND_TIMEOUT, total_steps=10_000)
    wall = FakeWall()
    return CoordinatorCore(cfg, tmp_path, now=0.0, wall=wall, perf=wall)


def _sent(core: CoordinatorCore, type_: str) -> list[Outgoing]:
    return [o for o in core.take_outbox() if o.type == type_]


def _register(core: CoordinatorCore, role: str, nonce: str, now: float) -> None:
    body: dict[str, Any] = {"role": role, "nonce": nonce, "server": 0}
    if role == "ps":
        body["endpoint"] = f"tcp://127.0.0.1:{5000 + len(core.members.members)}"
    core.handle(f"n-{nonce}".encode(), _msg("REGISTER", **body), now)


def _beat(core: CoordinatorCore, nonce: str, now: float, version: int = 0) -> None:
    body = {"nonce": nonce, "t": now, "rtt": 0.001, "version": version, "phase": "x"}
    core.handle(f"h-{nonce}".encode(), _msg("HEARTBEAT", **body), now)


def _from(core: CoordinatorCore, nonce: str, type_: str, now: float, **body: Any) -> None:
    core.handle(f"n-{nonce}".encode(), _msg(type_, **body), now)


def _reply(core: CoordinatorCore) -> dict[str, Any]:
    replies = [o.body for o in core.take_outbox() if o.type == "CTL_REPLY" and o.to == CTL]
    assert len(replies) == 1, replies
    return replies[0]


NONCES = {"ps0": "p0", "w0": "a0", "w1": "a1"}


def _started(tmp_path: Path) -> CoordinatorCore:
    """A job with ps0, w0, w1 training at epoch 0, at time 1.0."""
    core = _core(tmp_path)
    body = {"req": 1, "ps": ["p0"], "workers": ["a0", "a1"], "version": 0, "files": None}
    core.handle(CTL, _msg("CTL_START", **body), 0.1)
    assert core.round is not None and core.round.phase == Phase.JOIN
    for role, nonce in [("ps", "p0"), ("worker", "a0"), ("worker", "a1")]:
        _register(core, role, nonce, 0.2)
    assert core.round.phase == Phase.START
    assert len(_sent(core, "START")) == 3
    _from(core, "p0", "READY", 0.3, epoch=0, version=0)
    _from(core, "a0", "RESUMED", 0.3, t=1.0)
    assert core.round is not None  # still waiting for w1
    _from(core, "a1", "RESUMED", 0.3, t=1.0)
    assert core.round is None
    assert core.roster is not None and core.roster.workers == [0, 1]
    assert _reply(core)["ok"]
    _beat_all(core, 1.0)
    return core


def _beat_all(core: CoordinatorCore, now: float, skip: tuple[str, ...] = ()) -> None:
    for m in list(core.members.members.values()):
        if m.nonce not in skip:
            _beat(core, m.nonce, now)
    core.take_outbox()


# ---------------------------------------------------------------- pure round decisions


def test_round_decisions_are_pure_functions_of_now() -> None:
    r = new_round(RoundKind.SCALE, None, 1, now=10.0, timeout_s=5.0)
    assert r.phase == Phase.JOIN and r.deadline == 15.0
    assert not timed_out(r, 14.999) and timed_out(r, 15.0) and not timed_out(None, 99.0)
    assert not rollback_needed_on_abort(r)  # nobody has the new roster yet
    r.phase = Phase.PREPARE
    assert rollback_needed_on_abort(r)
    start = Round(RoundKind.START, None, 1, 0.0, Phase.START)
    assert not rollback_needed_on_abort(start)
    r.phase = Phase.RESUME
    assert is_finished(r)
    r.waiting = {"w0"}
    assert not is_finished(r)


@pytest.mark.parametrize(
    ("kind", "phase", "dead", "dead_ps", "expected"),
    [
        (RoundKind.ROLLBACK, Phase.ROLLBACK, {"ps0"}, True, FailureAction.ABORT_AND_ROLLBACK),
        (RoundKind.START, Phase.START, {"w0"}, False, FailureAction.ABORT),
        (RoundKind.SCALE, Phase.RESUME, {"w1"}, False, FailureAction.DROP_WAITING),
        (RoundKind.SCALE, Phase.RESUME, {"ps0"}, True, FailureAction.ABORT_AND_ROLLBACK),
        (RoundKind.SCALE, Phase.JOIN, {"w9"}, False, FailureAction.ABORT),
        (RoundKind.SCALE, Phase.JOIN, {"w0"}, False, FailureAction.ABORT_AND_ROLLBACK),
        (RoundKind.CHECKPOINT, Phase.MIGRATE, {"w0"}, False, FailureAction.ABORT_AND_ROLLBACK),
    ],
)
def test_failure_decisions(
    kind: RoundKind, phase: Phase, dead: set[str], dead_ps: bool, expected: FailureAction
) -> None:
    r = Round(kind, None, 0, 0.0, phase)
    assert on_failures(r, dead, dead_ps, {"ps0", "w0", "w1"}) == expected


def test_membership_detects_silence_after_the_timeout() -> None:
    members = Membership(heartbeat_timeout_s=1.0)
    a = members.register(Role.WORKER, "a", "", 0, now=0.0)
    b = members.register(Role.PS, "b", "tcp://x:1", 0, now=0.0)
    assert (a.key, b.key) == ("w0", "ps0")
    assert members.register(Role.WORKER, "a", "", 0, now=0.5) is a  # same nonce, same id
    members.heartbeat(b, version=3, rtt=0.01, phase="serving", now=0.9, roster=None)
    assert members.dead(1.5) == []
    assert members.dead(1.51) == [a]
    assert members.dead(2.0) == [a, b]
    members.remove(a.key)
    assert members.of_nonce("a") is None and members.by_ident(b"n-b") is b


def test_the_failure_timeout_follows_late_heartbeats_and_forgives_coordinator_stalls() -> None:
    """Issue 30: at load ~10 a fixed 1 s timeout declared live members dead."""
    members = Membership(heartbeat_timeout_s=1.0)
    ps = members.register(Role.PS, "p", "tcp://x:1", 0, now=0.0)
    t = 0.0
    for _ in range(20):  # a loaded box: heartbeats every 0.6 s instead of 0.2 s
        t += 0.6
        members.heartbeat(ps, version=0, rtt=0.01, phase="serving", now=t, roster=None)
    assert members.timeout() == pytest.approx(3.0)  # 5 x the 90th percentile gap
    assert members.dead(t + 2.9) == [] and members.dead(t + 3.1) == [ps]
    members.stall_s = 0.5
    members.tick(t)
    members.tick(t + 10.0)  # the coordinator itself did not run for 10 s
    assert members.dead(t + 10.0) == []
    assert members.dead(t + 13.1) == [ps]  # its silence since counts again


# ---------------------------------------------------------------- rounds under a fake clock


def test_scale_round_walks_through_all_phases(tmp_path: Path) -> None:
    core = _started(tmp_path)
    body = {"req": 2, "join": ["a2"], "add_workers": 1, "remove_ps": [], "remove_workers": []}
    core.handle(CTL, _msg("CTL_SCALE", **body), 1.1)
    r = core.round
    assert r is not None and r.kind == RoundKind.SCALE and r.phase == Phase.JOIN
    _register(core, "worker", "a2", 1.2)
    assert r.phase == Phase.PREPARE
    prepares = _sent(core, "PREPARE")
    assert {o.to for o in prepares} == {b"n-p0", b"n-a0", b"n-a1", b"n-a2"}
    clock = prepares[0].body["clock"]
    epoch = prepares[0].body["epoch"]
    for nonce in ["p0", "a0", "a1", "a2"]:
        _from(core, nonce, "ACK", 1.3, clock=clock, epoch=epoch, version=0, ok=True)
    assert r.phase == Phase.MIGRATE
    assert [o.to for o in _sent(core, "COMMIT")] == [b"n-p0"]
    migrated = {"version": clock, "t_reach": 1.0, "t_done": 1.0, "bytes_out": 0}
    _from(core, "p0", "MIGRATED", 1.4, **migrated)
    assert r.phase == Phase.RESUME
    assert core.roster is not None and core.roster.workers == [0, 1, 2]
    assert len(_sent(core, "RESUME")) == 3
    for nonce in ["a0", "a1", "a2"]:
        _from(core, nonce, "RESUMED", 1.5, t=1.0, suspension_s=0.01)
    assert core.round is None
    reply = _reply(core)
    assert reply["ok"] and reply["report"]["clock"] == clock


def test_a_missed_clock_is_retried_later(tmp_path: Path) -> None:
    core = _started(tmp_path)
    core.handle(CTL, _msg("CTL_CHECKPOINT", req=2, dir="checkpoints/c1"), 1.1)
    r = core.round
    assert r is not None and r.phase == Phase.PREPARE
    clock = _sent(core, "PREPARE")[0].body["clock"]
    _from(core, "p0", "ACK", 1.2, clock=clock, epoch=r.roster.epoch if r.roster else -1,
          version=clock + 5, ok=False)  # fmt: skip
    for nonce in ["a0", "a1"]:
        _from(core, nonce, "ACK", 1.2, clock=clock, epoch=1, version=0, ok=True)
    assert r.phase == Phase.PREPARE and r.retries == 1 and r.clock > clock + 5
    assert len(_sent(core, "PREPARE")) == 3


def test_round_timeout_in_join_keeps_the_configuration(tmp_path: Path) -> None:
    core = _started(tmp_path)
    before = core.roster
    body = {"req": 2, "join": ["never"], "add_workers": 1, "remove_ps": [], "remove_workers": []}
    core.handle(CTL, _msg("CTL_SCALE", **body), 2.0)
    deadline = 2.0 + ROUND_TIMEOUT
    t = 2.0
    while t < deadline - 0.5:  # members stay alive while the newcomer never shows up
        t += 0.5
        _beat_all(core, t)
        core.tick(t)
    assert core.round is not None and core.round.phase == Phase.JOIN
    _beat_all(core, deadline)
    core.tick(deadline)
    assert core.round is None
    out = core.take_outbox()
    replies = [o.body for o in out if o.type == "CTL_REPLY"]
    assert len(replies) == 1 and not replies[0]["ok"] and "timed out" in replies[0]["error"]
    assert not [o for o in out if o.type in ("ROLLBACK", "RECONFIG")]
    assert core.roster is before and core.roster is not None and core.roster.epoch == 0


def test_round_timeout_after_prepare_rolls_back_to_the_last_good_roster(tmp_path: Path) -> None:
    core = _started(tmp_path)
    body = {"req": 2, "join": [], "add_ps": 0, "remove_ps": [], "remove_workers": [1]}
    core.handle(CTL, _msg("CTL_SCALE", **body), 2.0)
    assert core.round is not None and core.round.phase == Phase.PREPARE
    core.take_outbox()
    _beat_all(core, 2.0 + ROUND_TIMEOUT - 0.5)
    core.tick(2.0 + ROUND_TIMEOUT - 0.01)
    assert core.round is not None and core.round.phase == Phase.PREPARE
    _beat_all(core, 2.0 + ROUND_TIMEOUT)
    core.tick(2.0 + ROUND_TIMEOUT)
    out = core.take_outbox()
    assert not next(o for o in out if o.type == "CTL_REPLY").body["ok"]
    rollbacks = [o for o in out if o.type == "ROLLBACK"]
    assert {o.to for o in rollbacks} == {b"n-p0", b"n-a0", b"n-a1"}
    assert rollbacks[0].body["roster"]["workers"] == [0, 1]  # w1 was not removed
    assert core.round is not None and core.round.kind == RoundKind.ROLLBACK


def test_a_silent_worker_is_dropped_and_a_silent_ps_rolls_back(tmp_path: Path) -> None:
    core = _started(tmp_path)
    _beat_all(core, 1.5, skip=("a1",))
    core.tick(2.0)  # w1 last heard at 1.0: exactly the timeout, still alive
    assert core.take_outbox() == [] and "w1" in core.members
    core.tick(2.01)
    reconfig = _sent(core, "RECONFIG")
    assert reconfig and reconfig[0].body["roster"]["workers"] == [0]
    assert core.events[-2]["kind"] == "worker_failure"
    _beat(core, "a0", 2.4)
    core.tick(2.6)  # ps0 last heard at 1.5: the only PS is gone, nothing to roll back on
    assert core.failed == "no PS left (PS [0] failed)" and "ps0" not in core.members
    core.handle(CTL, _msg("CTL_CHECKPOINT", req=2, dir="checkpoints/c1"), 2.7)
    assert _reply(core)["error"] == core.failed


def test_heartbeat_of_an_unknown_member_is_told_to_shut_down(tmp_path: Path) -> None:
    core = _started(tmp_path)
    _beat(core, "stranger", 1.1)
    assert [o.to for o in _sent(core, "SHUTDOWN")] == [b"h-stranger"]
    _from(core, "stranger", "DONE", 1.1, version=10**6)  # unknown member: ignored
    assert core.take_outbox() == []


def test_a_failing_handler_aborts_the_round_in_join(tmp_path: Path) -> None:
    core = _started(tmp_path)
    before = core.roster

    def boom(now: float) -> None:
        raise RuntimeError("boom")

    core.prepare = boom  # type: ignore[method-assign]
    body = {"req": 2, "join": ["a2"], "add_workers": 1, "remove_ps": [], "remove_workers": []}
    core.handle(CTL, _msg("CTL_SCALE", **body), 1.1)
    _register(core, "worker", "a2", 1.2)  # all joined: prepare() raises
    assert core.round is None
    out = core.take_outbox()
    reply = next(o.body for o in out if o.type == "CTL_REPLY")
    assert not reply["ok"] and "boom" in reply["error"]
    assert [o.to for o in out if o.type == "SHUTDOWN"] == [b"n-a2"]  # the newcomer is sent away
    assert not [o for o in out if o.type in ("ROLLBACK", "PREPARE")]
    assert core.roster is before and "w2" not in core.members
    assert any(e["kind"] == "handler_error" and "boom" in e["error"] for e in core.events)
    assert core.dirty  # the state file is rewritten


def test_a_failing_handler_mid_round_rolls_back_to_the_last_good_roster(tmp_path: Path) -> None:
    core = _started(tmp_path)
    body = {"req": 2, "join": [], "remove_ps": [], "remove_workers": [1]}
    core.handle(CTL, _msg("CTL_SCALE", **body), 1.1)
    r = core.round
    assert r is not None and r.phase == Phase.PREPARE and r.roster is not None
    clock, epoch = r.clock, r.roster.epoch
    core.take_outbox()

    def failing_ack(member: Member, msg: Message, now: float) -> None:
        raise KeyError("lost")

    core.member_handlers["ACK"] = failing_ack
    _from(core, "p0", "ACK", 1.2, clock=clock, epoch=epoch, version=0, ok=True)
    out = core.take_outbox()
    reply = next(o.body for o in out if o.type == "CTL_REPLY")
    assert not reply["ok"] and "KeyError" in reply["error"]
    rollback = [o for o in out if o.type == "ROLLBACK"]
    assert rollback and rollback[0].body["roster"]["workers"] == [0, 1]
    assert not [o for o in out if o.type == "COMMIT"]
    # the job goes on: the rollback round completes and a new request is accepted
    assert core.round is not None and core.round.kind == RoundKind.ROLLBACK
    new_epoch = rollback[0].body["roster"]["epoch"]
    _from(core, "p0", "ROLLED_BACK", 1.3, epoch=new_epoch, version=0)
    for nonce in ["a0", "a1"]:
        _from(core, nonce, "RESUMED", 1.4, t=1.0)
    assert core.round is None and not core.failed
    core.take_outbox()
    core.handle(CTL, _msg("CTL_STATUS", req=3), 1.5)
    assert _reply(core)["roster"]["workers"] == [0, 1]


def test_a_malformed_message_is_rejected_without_aborting(tmp_path: Path) -> None:
    core = _started(tmp_path)
    core.handle(CTL, _msg("CTL_CHECKPOINT", req=2, dir="checkpoints/c1"), 1.1)
    assert core.round is not None
    core.take_outbox()
    _from(core, "p0", "ACK", 1.2, clock="x")  # ProtocolError: dropped, round goes on
    assert core.round is not None and core.round.phase == Phase.PREPARE
    assert core.take_outbox() == []


@pytest.mark.parametrize("bad", ["../elsewhere", "/etc", "checkpoints/../../x"])
def test_checkpoint_outside_the_job_directory_is_refused(tmp_path: Path, bad: str) -> None:
    core = _started(tmp_path / "job")
    core.handle(CTL, _msg("CTL_CHECKPOINT", req=2, dir=bad), 1.1)
    reply = _reply(core)
    assert not reply["ok"] and "outside the job directory" in reply["error"]
    assert core.round is None


def test_start_with_files_outside_the_job_directory_is_refused(tmp_path: Path) -> None:
    core = _core(tmp_path / "job")
    body = {"req": 1, "ps": ["p0"], "workers": ["a0"], "version": 5, "files": ["/etc/passwd"]}
    core.handle(CTL, _msg("CTL_START", **body), 0.1)
    reply = _reply(core)
    assert not reply["ok"] and "outside" in reply["error"] and core.round is None


def test_state_round_trips_through_restore(tmp_path: Path) -> None:
    core = _started(tmp_path)
    state = core.state("tcp://127.0.0.1:1")
    again = _core(tmp_path)
    again.restore(state, now=50.0)
    assert again.roster == core.roster
    assert set(again.members.members) == {"ps0", "w0", "w1"}
    assert again.members.next_worker_id == 2
    assert again.members.dead(50.0 + HB_TIMEOUT) == []  # heard from at restore time
    assert again.events[-1]["kind"] == "coordinator_recovered"
