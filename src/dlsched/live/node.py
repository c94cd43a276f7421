"""What PS and workers share: launch arguments, registration, heartbeats, orphan detection."""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import zmq

from dlsched.live.config import JobConfig
from dlsched.live.protocol import Codec, Message, ProtocolError, dealer, recv, send

log = logging.getLogger(__name__)

ORPHAN_TIMEOUT_S = 60.0
"""A member that hears nothing from its coordinator for this long, seconds, exits."""


@dataclass(frozen=True, slots=True)
class NodeArgs:
    """Everything a PS or worker process needs to start (picklable, no secrets on disk).

    Attributes:
        role: ``"ps"`` or ``"worker"``.
        config_json: the job's `JobConfig` as JSON.
        job: job id.
        secret: the job's shared secret (travels only in these arguments, over the pipe that
            starts the process; messages carry a MAC, never the secret).
        coordinator: endpoint of the coordinator's ROUTER.
        nonce: launch token naming this process until the coordinator gives it an id; random
            (`protocol.random_identity`), it also names the process's two coordinator
            connections (``n-<nonce>``, ``h-<nonce>``), so it cannot be guessed.
        owner_pid: pid of the process that owns the job; members exit when it is gone.
        server: machine id the process stands for (for load-balanced removal).
        workdir: job directory (snapshots, checkpoints).
    """

    role: str
    config_json: str
    job: str
    secret: str
    coordinator: str
    nonce: str
    owner_pid: int
    server: int
    workdir: str


def pid_alive(pid: int) -> bool:
    """True if a process ``pid`` exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def setup_child(level: str) -> None:
    """Per-process setup of a child: one torch thread, logging to stderr."""
    import torch

    torch.set_num_threads(1)
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.WARNING),
        format="%(asctime)s %(processName)s %(name)s %(levelname)s: %(message)s",
    )


class Node:
    """Base of a PS or worker: coordinator socket, registration and a heartbeat thread.

    Subclasses set ``version`` and ``phase`` (read by the heartbeat thread) and run their loop
    until ``stop`` is set.
    """

    role = "node"

    def __init__(self, args: NodeArgs) -> None:
        self.args = args
        self.cfg = JobConfig.from_json(args.config_json)
        self.ctx: zmq.Context[Any] = zmq.Context()
        self.codec = Codec(args.job, args.secret, f"{self.role}-{args.nonce}")
        self.coord = dealer(self.ctx, f"n-{args.nonce}", args.coordinator)
        self.stop = threading.Event()
        self.id = -1
        self.version = 0
        self.phase = "init"
        self.registration_s = 0.0
        self._heartbeat: Heartbeat | None = None

    @property
    def key(self) -> str:
        return f"{'ps' if self.role == 'ps' else 'w'}{self.id}"

    def register(self, extra: dict[str, Any], timeout_s: float = 30.0) -> Message:
        """DL2 step 1: announce this process and receive its id (retried every second).

        Raises:
            TimeoutError: if the coordinator does not answer within ``timeout_s``.
        """
        body = {"role": self.role, "nonce": self.args.nonce, "server": self.args.server, **extra}
        t0 = time.perf_counter()
        deadline = t0 + timeout_s
        poller = zmq.Poller()
        poller.register(self.coord, zmq.POLLIN)
        next_send = 0.0
        while time.perf_counter() < deadline and not self.stop.is_set():
            now = time.perf_counter()
            if now >= next_send:
                send(self.coord, self.codec.encode("REGISTER", body))
                next_send = now + 1.0
            if not poller.poll(100):
                if not pid_alive(self.args.owner_pid):
                    self.stop.set()
                continue
            _, frames = recv(self.coord, routed=False)
            try:
                msg = self.codec.decode(frames, {"REGISTERED", "SHUTDOWN"})
            except ProtocolError as exc:
                log.warning("%s: rejected message while registering: %s", self.codec.name, exc)
                continue
            if msg.type == "SHUTDOWN":
                self.stop.set()
                break
            self.registration_s = time.perf_counter() - t0
            self.id = int(msg.body.get("id", -1))
            if self.id < 0:
                raise ProtocolError("REGISTERED without id")
            self.codec.name = self.key
            self._heartbeat = Heartbeat(self)
            self._heartbeat.start()
            return msg
        raise TimeoutError(f"{self.codec.name}: coordinator did not answer the registration")

    def heartbeat_body(self) -> dict[str, Any]:
        """Status carried by each heartbeat."""
        return {"version": self.version, "phase": self.phase}

    def to_coord(self, type_: str, body: dict[str, Any]) -> None:
        send(self.coord, self.codec.encode(type_, body))

    def close(self) -> None:
        self.stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=2.0)
        self.ctx.destroy(linger=200)


class Heartbeat(threading.Thread):
    """Sends the node's heartbeat every interval on its own socket and measures the RTT.

    Also stops the node when its owner process is gone or when the coordinator has been silent
    for `ORPHAN_TIMEOUT_S`, or says SHUTDOWN (e.g. to a member it already declared dead).
    """

    def __init__(self, node: Node) -> None:
        super().__init__(name=f"heartbeat-{node.key}", daemon=True)
        self.node = node
        self.rtt_s = 0.0

    def run(self) -> None:
        node = self.node
        sock = dealer(node.ctx, f"h-{node.args.nonce}", node.args.coordinator)
        codec = node.codec.fork(f"{node.key}-hb")  # its own sequence numbers and replay record
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        interval = node.cfg.heartbeat_interval_s
        last_heard = time.monotonic()
        next_send = 0.0
        try:
            while not node.stop.is_set():
                now = time.monotonic()
                if now >= next_send:
                    body = node.heartbeat_body()
                    body.update(nonce=node.args.nonce, t=now, rtt=self.rtt_s)
                    send(sock, codec.encode("HEARTBEAT", body))
                    next_send = now + interval
                    if not pid_alive(node.args.owner_pid):
                        log.warning("%s: owner process gone, exiting", node.key)
                        node.stop.set()
                    elif now - last_heard > ORPHAN_TIMEOUT_S:
                        log.warning("%s: coordinator silent, exiting", node.key)
                        node.stop.set()
                if not poller.poll(max(1, int(1000 * (next_send - time.monotonic())))):
                    continue
                _, frames = recv(sock, routed=False)
                try:
                    msg = codec.decode(frames, {"HB_ACK", "SHUTDOWN"})
                except ProtocolError as exc:
                    log.warning("%s: rejected heartbeat reply: %s", node.key, exc)
                    continue
                last_heard = time.monotonic()
                if msg.type == "SHUTDOWN":
                    log.info("%s: coordinator no longer knows this member, exiting", node.key)
                    node.stop.set()
                    continue
                t = msg.body.get("t")
                if isinstance(t, float):
                    self.rtt_s = (
                        0.7 * self.rtt_s + 0.3 * (last_heard - t)
                        if self.rtt_s
                        else (last_heard - t)
                    )
        finally:
            sock.close(linger=0)
