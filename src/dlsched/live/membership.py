"""The coordinator's view of a job's members: registration, heartbeats, failure detection, speed.

Pure bookkeeping: every method that needs the time takes ``now`` (seconds on a monotonic
clock), so the logic runs under a fake clock in tests, without processes or sockets.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from dlsched.live.config import Roster


class Role(str, Enum):
    """What a member does."""

    PS = "ps"
    WORKER = "worker"

    def __str__(self) -> str:
        return self.value


@dataclass(slots=True)
class Member:
    """A registered PS or worker as the coordinator sees it.

    Attributes:
        role: PS or worker.
        id: PS or worker id (unique per role within the job).
        nonce: the launch token; the member's connections are ``n-<nonce>`` (its messages) and
            ``h-<nonce>`` (its heartbeats).
        endpoint: a PS's ROUTER endpoint (empty for a worker).
        server: machine id the process stands for.
        last_seen: when the member was last heard from, monotonic seconds.
        rtt: round-trip time the member measured on its heartbeats, seconds.
        version: the member's version counter (steps reflected in its parameters).
        t_version: when ``version`` last changed, monotonic seconds.
        phase: what the member said it is doing (informative).
        done: a worker that reached the job's last step.
        last_heartbeat: when its last heartbeat came, monotonic seconds (None before the first).
    """

    role: Role
    id: int
    nonce: str
    endpoint: str
    server: int
    last_seen: float = 0.0
    rtt: float = 0.0
    version: int = 0
    t_version: float = 0.0
    phase: str = ""
    done: bool = False
    last_heartbeat: float | None = None

    @property
    def key(self) -> str:
        return member_key(self.role, self.id)

    @property
    def ident(self) -> bytes:
        """Routing identity of the member's message connection."""
        return f"n-{self.nonce}".encode()


def member_key(role: Role | str, member_id: int) -> str:
    """``ps<id>`` or ``w<id>``: how rounds and reports name a member."""
    return f"{'ps' if role == Role.PS else 'w'}{member_id}"


def roster_keys(roster: Roster | None) -> set[str]:
    """Keys of every PS and worker of ``roster``."""
    if roster is None:
        return set()
    return {f"ps{p}" for p in roster.ps} | {f"w{w}" for w in roster.workers}


GAP_QUANTILE = 0.9
"""Quantile of the recent heartbeat gaps the failure timeout follows."""
GAP_FACTOR = 5.0
"""A member is declared dead after this many times that quantile of silence (if longer than
the configured timeout): on a loaded machine heartbeats come late for everyone."""
MIN_GAPS = 8
"""Heartbeat gaps needed before they count."""
STALL_S = 0.5
"""A pause of the coordinator's own loop longer than this, seconds, is not counted as the
members' silence (they may have sent heartbeats it could not read); the server sets
`Membership.stall_s` to it (under a fake clock time jumps on purpose)."""


class Membership:
    """Registered members, their ids, liveness and the job's measured speed.

    Args:
        heartbeat_timeout_s: a member silent this long, seconds, is declared dead (at least: the
            timeout grows with the heartbeat gaps observed, see `timeout`).
    """

    def __init__(self, heartbeat_timeout_s: float) -> None:
        self.timeout_s = heartbeat_timeout_s
        self.gaps: deque[float] = deque(maxlen=256)
        self.last_tick: float | None = None
        self.stall_s: float | None = None
        self.members: dict[str, Member] = {}
        self.by_nonce: dict[str, str] = {}
        self.next_ps_id = 0
        self.next_worker_id = 0
        self.samples: deque[tuple[float, int]] = deque(maxlen=200)
        self.speed_since = 0.0

    def get(self, key: str) -> Member | None:
        return self.members.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self.members

    def __getitem__(self, key: str) -> Member:
        return self.members[key]

    def by_ident(self, ident: bytes) -> Member | None:
        """The member whose message connection is ``ident`` (``n-<nonce>``), if any."""
        if not ident.startswith(b"n-"):
            return None
        key = self.by_nonce.get(ident[2:].decode(errors="replace"))
        return None if key is None else self.members.get(key)

    def of_nonce(self, nonce: str) -> Member | None:
        key = self.by_nonce.get(nonce)
        return None if key is None else self.members.get(key)

    def register(self, role: Role, nonce: str, endpoint: str, server: int, now: float) -> Member:
        """The member launched with ``nonce`` (a new id the first time), marked alive at ``now``."""
        member = self.of_nonce(nonce)
        if member is None:
            if role == Role.PS:
                mid, self.next_ps_id = self.next_ps_id, self.next_ps_id + 1
            else:
                mid, self.next_worker_id = self.next_worker_id, self.next_worker_id + 1
            member = Member(role, mid, nonce, endpoint, server, last_seen=now, t_version=now)
            self.add(member)
        member.last_seen = now
        return member

    def add(self, member: Member) -> None:
        self.members[member.key] = member
        self.by_nonce[member.nonce] = member.key

    def remove(self, key: str) -> Member | None:
        member = self.members.pop(key, None)
        if member is not None:
            self.by_nonce.pop(member.nonce, None)
        return member

    def heartbeat(
        self,
        member: Member,
        version: int,
        rtt: float,
        phase: str,
        now: float,
        roster: Roster | None,
    ) -> None:
        """Record a heartbeat at ``now``; a PS's adds a sample (``now``, the job's progress in
        ``roster``) for the speed estimate."""
        if member.last_heartbeat is not None:
            self.gaps.append(now - member.last_heartbeat)
        member.last_heartbeat = now
        member.last_seen = now
        member.rtt = rtt
        if version != member.version:
            member.version, member.t_version = version, now
        member.phase = phase
        if member.role == Role.PS:
            self.samples.append((now, self.progress(roster)))

    def timeout(self) -> float:
        """Seconds of silence after which a member is dead: the configured timeout, or
        `GAP_FACTOR` times the `GAP_QUANTILE` of the recent heartbeat gaps if longer."""
        if len(self.gaps) < MIN_GAPS:
            return self.timeout_s
        ordered = sorted(self.gaps)
        gap = ordered[min(len(ordered) - 1, int(GAP_QUANTILE * len(ordered)))]
        return max(self.timeout_s, GAP_FACTOR * gap)

    def tick(self, now: float) -> None:
        """The coordinator's loop ran at ``now``: a pause of its own since the last tick longer
        than ``stall_s`` (a loaded machine) is not counted as any member's silence."""
        last = self.last_tick
        if last is not None and self.stall_s is not None and now - last > self.stall_s:
            for m in self.members.values():
                m.last_seen = now - max(0.0, last - m.last_seen)
        self.last_tick = now

    def dead(self, now: float) -> list[Member]:
        """Members silent for more than the heartbeat timeout at ``now``."""
        limit = self.timeout()
        return [m for m in self.members.values() if now - m.last_seen > limit]

    def alive_in(self, keys: Iterable[str]) -> list[Member]:
        return [self.members[k] for k in keys if k in self.members]

    def progress(self, roster: Roster | None) -> int:
        """Steps done: the highest version of the roster's live PS (0 without a roster)."""
        if roster is None:
            return 0
        versions = [self.members[f"ps{p}"].version for p in roster.ps if f"ps{p}" in self.members]
        return max(versions, default=0)

    def speed(self, now: float) -> float:
        """Steps per second over the last 5 s since the last membership change."""
        window = [(t, v) for t, v in self.samples if t >= max(now - 5.0, self.speed_since)]
        if len(window) < 2 or window[-1][0] - window[0][0] < 0.2:
            return 0.0
        return max(0.0, (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0]))

    def reset_speed(self, now: float) -> None:
        self.speed_since = now

    def scaling_clock(
        self, roster: Roster | None, total_steps: int, now: float, factor: float = 1.0
    ) -> int:
        """Scaling clock: the version all members will reach only after hearing of it.

        Estimated from the version counters reported with heartbeats, extrapolated with the
        measured step rate, plus the steps that run during two round trips (and a margin).
        """
        speed = self.speed(now)
        members = self.alive_in(sorted(roster_keys(roster)))
        current = max(
            [m.version + speed * (now - m.t_version) for m in members] + [self.progress(roster)]
        )
        rtt = max([m.rtt for m in members] + [0.002])
        ahead = math.ceil(speed * (2 * rtt + 0.01) * factor) + 1
        return min(total_steps, math.ceil(current) + ahead)
