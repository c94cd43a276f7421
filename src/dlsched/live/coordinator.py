"""The coordinator process of one job: a thin ZeroMQ server around `CoordinatorCore`.

It receives on one ROUTER, authenticates each message (`protocol.Codec`: MAC, sequence number),
lets the core handle it with the current monotonic time, sends what the core put in its outbox
and writes the state file (``<workdir>/coordinator.json``, `coord_store`) whenever the core's
state changed, so a restarted coordinator carries on. Every 50 ms it lets time pass in the core
(failure detection, round timeouts) and exits with the job's owner. The protocol itself (rounds,
failures) is described in `dlsched.live.coord_core`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zmq

from dlsched.live.config import JobConfig
from dlsched.live.coord_core import CoordinatorCore
from dlsched.live.coord_store import ENDPOINT_FILE, STATE_FILE, load_state, save_state, write_atomic
from dlsched.live.membership import STALL_S
from dlsched.live.node import pid_alive
from dlsched.live.protocol import Codec, ProtocolError, recv, router, send

log = logging.getLogger(__name__)

__all__ = ["ENDPOINT_FILE", "STATE_FILE", "CoordArgs", "Coordinator", "coordinator_main"]

TICK_S = 0.05
"""Period of failure detection and round timeouts, seconds."""


@dataclass(frozen=True, slots=True)
class CoordArgs:
    """Launch arguments of a coordinator process.

    Attributes:
        config_json: the job's `JobConfig` as JSON.
        job: job id.
        secret: the job's shared secret (only these arguments carry it, never a message).
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


class Coordinator:
    """The coordinator's sockets and loop (see the module docstring)."""

    def __init__(self, args: CoordArgs) -> None:
        self.args = args
        cfg = JobConfig.from_json(args.config_json)
        self.workdir = Path(args.workdir)
        self.codec = Codec(args.job, args.secret, "coord")
        self.ctx: zmq.Context[Any] = zmq.Context()
        self.core = CoordinatorCore(cfg, self.workdir, time.monotonic())
        self.core.members.stall_s = STALL_S
        endpoint = f"tcp://{cfg.host}:*"
        saved: dict[str, Any] | None = None
        if args.recover:
            saved = load_state(self.workdir)
            endpoint = str(saved["endpoint"])
        self.sock, self.endpoint = router(self.ctx, endpoint)
        if saved is not None:
            self.core.restore(saved, time.monotonic())
        write_atomic(self.workdir / ENDPOINT_FILE, self.endpoint)
        self._flush(force_save=True)

    def run(self) -> None:
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        next_tick = 0.0
        while not self.core.stopping:
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
            if now >= next_tick:
                next_tick = now + TICK_S
                self.core.tick(now)
                if not pid_alive(self.args.owner_pid):
                    log.warning("coordinator: owner gone, shutting the job down")
                    self.core.shutdown_all()
                    self.core.stopping = True
                self._flush()
        self.ctx.destroy(linger=300)

    def _dispatch(self, ident: bytes, frames: list[Any]) -> None:
        try:
            msg = self.codec.decode(frames, self.core.allowed_types(ident))
        except ProtocolError as exc:
            log.warning("coordinator: rejected message from %r: %s", ident, exc)
            return
        self.core.handle(ident, msg, time.monotonic())
        self._flush()

    def _flush(self, force_save: bool = False) -> None:
        """Write the state file if it changed, then send the core's outbox."""
        if self.core.dirty or force_save:
            self.core.dirty = False
            save_state(self.workdir, self.core.state(self.endpoint))
        for out in self.core.take_outbox():
            send(self.sock, self.codec.encode(out.type, out.body), to=out.to)


def coordinator_main(args: CoordArgs) -> None:
    """Entry point of a coordinator process."""
    Coordinator(args).run()
