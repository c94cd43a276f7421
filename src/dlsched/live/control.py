"""The owner's side of a live job's control channel: requests to the coordinator, and fetching
the parameters from the PS.

Every message is authenticated (`protocol.Codec`); connections use random identities.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import torch
import zmq

from dlsched.live.config import Roster
from dlsched.live.protocol import (
    Codec,
    ProtocolError,
    dealer,
    random_identity,
    recv,
    send,
    tensor_frame_bytes,
)

log = logging.getLogger(__name__)


class LiveJobError(RuntimeError):
    """A live job could not do what was asked (timeout, refused request, failed round)."""


class ControlChannel:
    """Request/reply with one job's coordinator (``CTL_*``) and parameter fetches from its PS.

    Args:
        job: job id.
        secret: the job's shared secret (the MAC key is derived from it).
    """

    def __init__(self, job: str, secret: str) -> None:
        self.ctx: zmq.Context[Any] = zmq.Context()
        self.codec = Codec(job, secret, "ctl")
        self.sock: zmq.Socket[Any] | None = None
        self.endpoint = ""
        self._req = 0
        self.cancelled = threading.Event()

    def connect(self, endpoint: str) -> None:
        """Talk to the coordinator at ``endpoint`` (a new connection only if it moved)."""
        if endpoint != self.endpoint or self.sock is None:
            if self.sock is not None:
                self.sock.close(linger=0)
            self.sock = dealer(self.ctx, random_identity("ctl-"), endpoint)
            self.endpoint = endpoint

    @property
    def connected(self) -> bool:
        return self.sock is not None

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close(linger=0)
            self.sock = None
        self.ctx.term()

    def send_request(self, type_: str, body: dict[str, Any]) -> int:
        """Send a control request without waiting; its request number (for `take_reply`).

        Raises:
            LiveJobError: if not connected.
        """
        if self.sock is None:
            raise LiveJobError("job is not running")
        self._req += 1
        send(self.sock, self.codec.encode(type_, {**body, "req": self._req}))
        return self._req

    def take_reply(self, req: int, wait_s: float = 0.0) -> dict[str, Any] | None:
        """The reply to request ``req`` if it came within ``wait_s`` seconds (replies to other
        requests are dropped), else None.

        Raises:
            LiveJobError: if not connected, or `cancelled` is set.
        """
        deadline = time.monotonic() + wait_s
        while True:
            if self.cancelled.is_set():
                raise LiveJobError("cancelled")
            if self.sock is None:
                raise LiveJobError("job is not running")
            left = deadline - time.monotonic()
            if not self.sock.poll(int(min(max(left, 0.0), 0.2) * 1000)):
                if left <= 0:
                    return None
                continue
            _, frames = recv(self.sock, routed=False)
            try:
                msg = self.codec.decode(frames, {"CTL_REPLY"})
            except ProtocolError as exc:
                log.warning("rejected reply: %s", exc)
                continue
            if msg.body.get("req") == req:
                return msg.body

    def request(self, type_: str, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send a control request and wait for its reply's body.

        Raises:
            LiveJobError: if not connected, no reply within ``timeout_s`` seconds, or
                `cancelled` is set while waiting.
        """
        req = self.send_request(type_, body)
        reply = self.take_reply(req, timeout_s)
        if reply is None:
            raise LiveJobError(f"{type_}: no answer from the coordinator in {timeout_s:.1f} s")
        return reply

    def fetch_parameters(
        self, roster: Roster, bounds: list[tuple[int, int]], timeout_s: float
    ) -> torch.Tensor:
        """The global parameters as one flat float32 vector, one FETCH per PS of ``roster``.

        Raises:
            LiveJobError: if a PS does not answer or some block is missing.
        """
        flat = torch.full((bounds[-1][1],), float("nan")) if bounds else torch.zeros(0)
        cap = tensor_frame_bytes(bounds)
        codec = self.codec.fork("ctl-fetch").limit(bounds)
        socks = {p: dealer(self.ctx, random_identity("c-"), ep, cap) for p, ep in roster.ps.items()}
        try:
            for sock in socks.values():
                send(sock, codec.encode("FETCH", {}))
            for ps_id, sock in socks.items():
                if not sock.poll(int(timeout_s * 1000)):
                    raise LiveJobError(f"ps{ps_id} did not answer FETCH")
                _, frames = recv(sock, routed=False)
                msg = codec.decode(frames, {"PARAMS"})
                for name, t in msg.tensors.items():
                    b = int(name[1:])
                    flat[slice(*bounds[b])] = t
        finally:
            for sock in socks.values():
                sock.close(linger=0)
        if torch.isnan(flat).any():
            raise LiveJobError("some blocks were not returned by any PS")
        return flat
