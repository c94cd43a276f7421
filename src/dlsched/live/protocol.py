"""Wire format of the live runtime: a JSON header frame followed by raw tensor frames.

A message is one ZeroMQ multipart message ``[header, payload_0, ..., payload_k]``:

- ``header`` is UTF-8 JSON ``{"v": 1, "job": ..., "secret": ..., "type": ..., "src": ...,
  "body": {...}, "tensors": [[name, dtype, shape], ...]}`` of at most `MAX_HEADER_BYTES`;
- ``payload_i`` holds the raw little-endian bytes of tensor ``i`` (C order).

Nothing is unpickled. A message whose secret or job id is wrong, whose type is not expected by
the receiver, or whose tensor descriptions do not match the frames raises `ProtocolError`; every
process logs and drops such messages and keeps running.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import zmq

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
MAX_HEADER_BYTES = 1 << 20
"""Largest accepted header frame, bytes."""
MAX_TENSORS = 8192
"""Most tensors one message may carry."""
MAX_FRAME_BYTES = 1 << 31
"""ZeroMQ refuses larger frames (ZMQ_MAXMSGSIZE), bytes."""

_DTYPES: dict[str, tuple[torch.dtype, np.dtype[Any]]] = {
    "float32": (torch.float32, np.dtype("<f4")),
    "float64": (torch.float64, np.dtype("<f8")),
    "int64": (torch.int64, np.dtype("<i8")),
}
_DTYPE_NAMES = {torch_dtype: name for name, (torch_dtype, _) in _DTYPES.items()}


class ProtocolError(ValueError):
    """A malformed, unauthenticated or unexpected message."""


@dataclass(slots=True)
class Message:
    """A decoded message.

    Attributes:
        type: message type (e.g. ``"PUSH"``).
        src: sender's name (``"ps3"``, ``"w1"``, ``"ctl"``), informative only.
        body: JSON fields.
        tensors: name → tensor; decoded tensors share (read-only) memory with the frames.
    """

    type: str
    src: str
    body: dict[str, Any] = field(default_factory=dict)
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)


class Codec:
    """Encodes and checks messages of one job (its id and shared secret).

    Args:
        job: job id, carried in every header.
        secret: per-job shared secret; messages without it are rejected.
        name: this process's name, put in ``src``.
    """

    def __init__(self, job: str, secret: str, name: str) -> None:
        self.job = job
        self._secret = secret
        self.name = name

    def encode(
        self,
        type_: str,
        body: Mapping[str, Any] | None = None,
        tensors: Mapping[str, torch.Tensor] | None = None,
    ) -> list[Any]:
        """Frames of a message; tensor frames are zero-copy views of contiguous CPU tensors.

        The caller must not modify a sent tensor in place until the peer has received it.
        """
        descs: list[list[Any]] = []
        frames: list[Any] = []
        for name, tensor in (tensors or {}).items():
            t = tensor.detach()
            if t.device.type != "cpu":
                t = t.cpu()
            if not t.is_contiguous():
                t = t.contiguous()
            dtype = _DTYPE_NAMES.get(t.dtype)
            if dtype is None:
                raise ProtocolError(f"unsupported dtype {t.dtype} for tensor {name!r}")
            descs.append([name, dtype, list(t.shape)])
            frames.append(t.numpy().reshape(-1).view(np.uint8) if t.numel() else b"")
        header = {
            "v": PROTOCOL_VERSION,
            "job": self.job,
            "secret": self._secret,
            "type": type_,
            "src": self.name,
            "body": dict(body or {}),
            "tensors": descs,
        }
        return [json.dumps(header, separators=(",", ":")).encode(), *frames]

    def decode(self, frames: Sequence[Any], allowed: Collection[str]) -> Message:
        """Check and decode ``frames`` (bytes or `zmq.Frame`).

        Args:
            frames: the multipart message without any routing identity.
            allowed: message types the receiver accepts now.

        Raises:
            ProtocolError: wrong secret or job, unexpected type, or inconsistent frames.
        """
        if not frames:
            raise ProtocolError("empty message")
        raw = _buffer(frames[0])
        if len(raw) > MAX_HEADER_BYTES:
            raise ProtocolError(f"header of {len(raw)} bytes exceeds {MAX_HEADER_BYTES}")
        try:
            header = json.loads(bytes(raw))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ProtocolError(f"header is not JSON: {exc}") from None
        if not isinstance(header, dict):
            raise ProtocolError("header is not a JSON object")
        secret = header.get("secret")
        if not isinstance(secret, str) or not hmac.compare_digest(
            secret.encode(), self._secret.encode()
        ):
            raise ProtocolError("bad secret")
        if header.get("job") != self.job:
            raise ProtocolError(f"message for job {header.get('job')!r}, not {self.job!r}")
        if header.get("v") != PROTOCOL_VERSION:
            raise ProtocolError(f"protocol version {header.get('v')!r} not supported")
        type_ = header.get("type")
        if not isinstance(type_, str) or type_ not in allowed:
            raise ProtocolError(f"unexpected message type {type_!r}")
        src = header.get("src")
        body = header.get("body")
        descs = header.get("tensors")
        if not isinstance(src, str) or not isinstance(body, dict) or not isinstance(descs, list):
            raise ProtocolError("header fields src/body/tensors have wrong types")
        if len(descs) != len(frames) - 1 or len(descs) > MAX_TENSORS:
            raise ProtocolError(f"{len(descs)} tensor descriptions for {len(frames) - 1} frames")
        tensors: dict[str, torch.Tensor] = {}
        with warnings.catch_warnings():
            # frames are read-only; tensors built on them are never written in place
            warnings.simplefilter("ignore", UserWarning)
            for desc, frame in zip(descs, frames[1:], strict=True):
                name, tensor = _decode_tensor(desc, frame)
                if name in tensors:
                    raise ProtocolError(f"duplicate tensor {name!r}")
                tensors[name] = tensor
        return Message(type_, src, body, tensors)


def _buffer(frame: Any) -> memoryview:
    if isinstance(frame, zmq.Frame):
        return frame.buffer
    if isinstance(frame, bytes | bytearray | memoryview):
        return memoryview(frame)
    raise ProtocolError(f"frame of type {type(frame).__name__}")


def _decode_tensor(desc: Any, frame: Any) -> tuple[str, torch.Tensor]:
    if not (isinstance(desc, list) and len(desc) == 3):
        raise ProtocolError("tensor description must be [name, dtype, shape]")
    name, dtype, shape = desc
    if not isinstance(name, str) or not name or len(name) > 64:
        raise ProtocolError("bad tensor name")
    if dtype not in _DTYPES:
        raise ProtocolError(f"dtype {dtype!r} not allowed")
    if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
        raise ProtocolError(f"bad shape for tensor {name!r}")
    torch_dtype, np_dtype = _DTYPES[dtype]
    buf = _buffer(frame)
    numel = math.prod(shape)
    if numel * np_dtype.itemsize != len(buf):
        raise ProtocolError(f"tensor {name!r}: {len(buf)} bytes for shape {shape} {dtype}")
    if numel == 0:
        return name, torch.empty(shape, dtype=torch_dtype)
    array = np.frombuffer(buf, dtype=np_dtype).reshape(shape)
    return name, torch.from_numpy(array)


# ---------------------------------------------------------------- body field accessors


def get_int(body: Mapping[str, Any], key: str, minimum: int | None = 0) -> int:
    """``body[key]`` as an int (``minimum`` ≤ value), else `ProtocolError`."""
    value = body.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ProtocolError(f"field {key!r} must be an int")
    if minimum is not None and value < minimum:
        raise ProtocolError(f"field {key!r} must be >= {minimum}")
    return value


def get_float(body: Mapping[str, Any], key: str) -> float:
    """``body[key]`` as a finite float, else `ProtocolError`."""
    value = body.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ProtocolError(f"field {key!r} must be a finite number")
    return float(value)


def get_str(body: Mapping[str, Any], key: str, max_len: int = 4096) -> str:
    """``body[key]`` as a string of at most ``max_len`` characters, else `ProtocolError`."""
    value = body.get(key)
    if not isinstance(value, str) or len(value) > max_len:
        raise ProtocolError(f"field {key!r} must be a string")
    return value


def get_int_list(body: Mapping[str, Any], key: str) -> list[int]:
    """``body[key]`` as a list of non-negative ints, else `ProtocolError`."""
    value = body.get(key)
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value
    ):
        raise ProtocolError(f"field {key!r} must be a list of non-negative ints")
    return value


# ---------------------------------------------------------------- sockets


def router(ctx: zmq.Context[Any], endpoint: str) -> tuple[zmq.Socket[Any], str]:
    """A ROUTER bound to ``endpoint`` (``tcp://host:*`` picks a port) and its actual address."""
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 200)
    sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
    sock.setsockopt(zmq.ROUTER_HANDOVER, 1)
    sock.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES - 1)
    sock.bind(endpoint)
    return sock, sock.getsockopt_string(zmq.LAST_ENDPOINT)


def dealer(ctx: zmq.Context[Any], identity: str, endpoint: str) -> zmq.Socket[Any]:
    """A DEALER named ``identity`` connected to ``endpoint``."""
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 200)
    sock.setsockopt(zmq.ROUTING_ID, identity.encode())
    sock.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES - 1)
    sock.setsockopt(zmq.RECONNECT_IVL, 50)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, 500)
    sock.connect(endpoint)
    return sock


def send(sock: zmq.Socket[Any], frames: list[Any], to: bytes | None = None) -> bool:
    """Send without blocking; returns False (and logs) if the peer is gone or the queue is full."""
    try:
        if to is not None:
            sock.send_multipart([to, *frames], copy=False, flags=zmq.NOBLOCK)
        else:
            sock.send_multipart(frames, copy=False, flags=zmq.NOBLOCK)
    except zmq.Again:
        log.warning("send queue full or no peer; message dropped")
        return False
    except zmq.ZMQError as exc:
        log.warning("send to %r failed: %s", to, exc)
        return False
    return True


def recv(sock: zmq.Socket[Any], routed: bool) -> tuple[bytes | None, list[zmq.Frame]]:
    """Receive one multipart message; for a ROUTER (``routed``) split off the sender identity."""
    frames = sock.recv_multipart(copy=False)
    if not routed:
        return None, frames
    if len(frames) < 2:
        return None, []
    return bytes(frames[0].buffer), frames[1:]
