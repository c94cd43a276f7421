"""Wire format of the live runtime: a MAC frame, a JSON header frame, then raw tensor frames.

A message is one ZeroMQ multipart message ``[mac, header, payload_0, ..., payload_k]``:

- ``mac`` is the 32-byte HMAC-SHA256, under a key derived from the job's secret, of the header and
  every payload (each prefixed by its length), so no frame can be changed, added or dropped;
- ``header`` is UTF-8 JSON ``{"v": 2, "job": ..., "sid": ..., "seq": ..., "ts": ..., "type": ...,
  "src": ..., "body": {...}, "tensors": [[name, dtype, shape], ...]}`` of at most
  `MAX_HEADER_BYTES`; ``sid`` names the sending `Codec` (random per instance) and ``seq`` counts
  its messages, so a receiver refuses a replayed message (``seq`` not above the last one it
  accepted from ``sid``) and one older than `MAX_MESSAGE_AGE_S` (``ts``, wall clock);
- ``payload_i`` holds the raw little-endian bytes of tensor ``i`` (C order).

The secret itself never travels: the owner hands it to its child processes through their launch
arguments (the multiprocessing pipe). Nothing is unpickled. A message whose MAC, job id,
sequence number or age is wrong, whose type is not expected by the receiver, or whose tensor
descriptions do not match the frames raises `ProtocolError`; every process logs and drops such
messages and keeps running.

Sockets: DEALERs connect with unpredictable identities (`random_identity`) and ROUTERs never
hand an identity over to a new connection, so a local process that connects with a guessed or
old identity neither receives another peer's messages nor blocks them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import secrets
import struct
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import zmq

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 2
MAC_BYTES = 32
"""Length of the HMAC-SHA256 frame, bytes."""
MAX_MESSAGE_AGE_S = 300.0
"""A message whose timestamp is older than this (or this far in the future), seconds, is refused."""
MAX_SENDERS = 4096
"""Senders whose last sequence number a `Codec` remembers (the oldest is forgotten first)."""
MAX_HEADER_BYTES = 1 << 20
"""Largest accepted header frame, bytes."""
MAX_TENSORS = 8192
"""Most tensors one message may carry."""
MAX_FRAME_BYTES = 1 << 31
"""ZeroMQ refuses larger frames (ZMQ_MAXMSGSIZE), bytes."""
CONTROL_FRAME_BYTES = MAX_HEADER_BYTES + 1024
"""Largest frame a socket that carries no tensors accepts (coordinator, heartbeats, control),
bytes: ZeroMQ drops a larger one (and its sender's connection) before it is buffered whole."""
TENSOR_TYPES = frozenset({"PUSH", "PARAMS", "MIGRATE"})
"""Message types that carry tensor frames; every other type carries none."""


def tensor_frame_bytes(bounds: Sequence[tuple[int, int]]) -> int:
    """Largest legitimate frame of a job whose blocks are ``bounds``, bytes: one block of
    float64 (tensors of a message are one frame each), or a header, whichever is larger."""
    largest = max((end - start for start, end in bounds), default=0)
    return max(CONTROL_FRAME_BYTES, 8 * largest)


def tensor_message_bytes(bounds: Sequence[tuple[int, int]]) -> int:
    """Largest legitimate sum of the tensor frames of one message, bytes: every block's
    parameters and momentum as float64 (a PS handing over all it holds)."""
    total = sum(end - start for start, end in bounds)
    return max(CONTROL_FRAME_BYTES, 2 * 8 * total)


_DTYPES: dict[str, tuple[torch.dtype, np.dtype[Any]]] = {
    "float32": (torch.float32, np.dtype("<f4")),
    "float64": (torch.float64, np.dtype("<f8")),
    "int64": (torch.int64, np.dtype("<i8")),
}
_DTYPE_NAMES = {torch_dtype: name for name, (torch_dtype, _) in _DTYPES.items()}
_LEN = struct.Struct("<Q")


def derive_key(secret: str, job: str) -> bytes:
    """The per-job MAC key: HMAC-SHA256 of the job id under the shared secret."""
    return hmac.new(secret.encode(), b"dlsched-live-mac\0" + job.encode(), hashlib.sha256).digest()


def random_identity(prefix: str = "") -> str:
    """A ZeroMQ routing identity no other process can guess (128 random bits)."""
    return prefix + secrets.token_hex(16)


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
    """Encodes, authenticates and checks messages of one job (its id and MAC key).

    One instance per thread that sends or receives: its sequence counter and its record of the
    last sequence number accepted per sender are guarded by a lock, but messages that one codec
    sends over two sockets to the same receiver could arrive out of order and be refused.

    Args:
        job: job id, carried in every header.
        secret: per-job shared secret; only a key derived from it is kept, never sent.
        name: this process's name, put in ``src`` (informative only).
    """

    def __init__(self, job: str, secret: str, name: str) -> None:
        self.job = job
        self._key = derive_key(secret, job)
        self.name = name
        self._sid = secrets.token_hex(8)
        self._seq = 0
        self._seen: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self.max_frame_bytes = MAX_FRAME_BYTES - 1
        self.max_message_bytes = MAX_FRAME_BYTES - 1

    def limit(self, bounds: Sequence[tuple[int, int]]) -> Codec:
        """Cap the tensor frames this codec accepts to what a job of blocks ``bounds`` sends
        (`tensor_frame_bytes`, `tensor_message_bytes`); returns the codec."""
        self.max_frame_bytes = tensor_frame_bytes(bounds)
        self.max_message_bytes = tensor_message_bytes(bounds)
        return self

    def fork(self, name: str) -> Codec:
        """A codec of the same job and key with its own sender id and replay record."""
        other = Codec.__new__(Codec)
        other.job, other._key, other.name = self.job, self._key, name
        other._sid, other._seq = secrets.token_hex(8), 0
        other._seen, other._lock = OrderedDict(), threading.Lock()
        other.max_frame_bytes = self.max_frame_bytes
        other.max_message_bytes = self.max_message_bytes
        return other

    def _mac(self, header: bytes | memoryview, payloads: Sequence[Any]) -> bytes:
        mac = hmac.new(self._key, digestmod=hashlib.sha256)
        mac.update(_LEN.pack(len(header)))
        mac.update(header)
        for payload in payloads:
            view = payload if isinstance(payload, memoryview) else memoryview(payload)
            mac.update(_LEN.pack(view.nbytes))
            mac.update(view)
        return mac.digest()

    def seal(self, header: Mapping[str, Any], payloads: Sequence[Any]) -> list[Any]:
        """Frames ``[mac, header, *payloads]`` for an already built header (tests forge with it)."""
        raw = json.dumps(header, separators=(",", ":")).encode()
        return [self._mac(raw, payloads), raw, *payloads]

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
        with self._lock:
            self._seq += 1
            seq = self._seq
        header = {
            "v": PROTOCOL_VERSION,
            "job": self.job,
            "sid": self._sid,
            "seq": seq,
            "ts": time.time(),
            "type": type_,
            "src": self.name,
            "body": dict(body or {}),
            "tensors": descs,
        }
        return self.seal(header, frames)

    def decode(self, frames: Sequence[Any], allowed: Collection[str]) -> Message:
        """Authenticate, check and decode ``frames`` (bytes or `zmq.Frame`).

        Sizes are checked before the MAC is computed: tensor frames where no expected type
        carries tensors (`TENSOR_TYPES`), or larger than the job's caps (`limit`), are refused
        unread.

        Args:
            frames: the multipart message without any routing identity.
            allowed: message types the receiver accepts now.

        Raises:
            ProtocolError: bad MAC, wrong job, replayed or stale message, unexpected type, or
                inconsistent frames.
        """
        if len(frames) < 2:
            raise ProtocolError("message without MAC and header")
        mac = _buffer(frames[0])
        raw = _buffer(frames[1])
        if len(raw) > MAX_HEADER_BYTES:
            raise ProtocolError(f"header of {len(raw)} bytes exceeds {MAX_HEADER_BYTES}")
        payloads = [_buffer(f) for f in frames[2:]]
        if len(payloads) > MAX_TENSORS:
            raise ProtocolError(f"{len(payloads)} tensor frames exceed {MAX_TENSORS}")
        self._check_sizes(payloads, allowed)
        if len(mac) != MAC_BYTES or not hmac.compare_digest(bytes(mac), self._mac(raw, payloads)):
            raise ProtocolError("bad MAC")
        try:
            header = json.loads(bytes(raw))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ProtocolError(f"header is not JSON: {exc}") from None
        if not isinstance(header, dict):
            raise ProtocolError("header is not a JSON object")
        if header.get("job") != self.job:
            raise ProtocolError(f"message for job {header.get('job')!r}, not {self.job!r}")
        if header.get("v") != PROTOCOL_VERSION:
            raise ProtocolError(f"protocol version {header.get('v')!r} not supported")
        self._check_fresh(header)
        type_ = header.get("type")
        if not isinstance(type_, str) or type_ not in allowed:
            raise ProtocolError(f"unexpected message type {type_!r}")
        src = header.get("src")
        body = header.get("body")
        descs = header.get("tensors")
        if not isinstance(src, str) or not isinstance(body, dict) or not isinstance(descs, list):
            raise ProtocolError("header fields src/body/tensors have wrong types")
        if len(descs) != len(payloads):
            raise ProtocolError(f"{len(descs)} tensor descriptions for {len(payloads)} frames")
        tensors: dict[str, torch.Tensor] = {}
        with warnings.catch_warnings():
            # frames are read-only; tensors built on them are never written in place
            warnings.simplefilter("ignore", UserWarning)
            for desc, frame in zip(descs, payloads, strict=True):
                name, tensor = _decode_tensor(desc, frame)
                if name in tensors:
                    raise ProtocolError(f"duplicate tensor {name!r}")
                tensors[name] = tensor
        return Message(type_, src, body, tensors)

    def _check_sizes(self, payloads: Sequence[memoryview], allowed: Collection[str]) -> None:
        """Refuse tensor frames no expected type carries, or larger than this codec's caps."""
        if payloads and not TENSOR_TYPES.intersection(allowed):
            raise ProtocolError(
                f"{len(payloads)} tensor frames where only {sorted(allowed)} are expected"
            )
        total = 0
        for view in payloads:
            if view.nbytes > self.max_frame_bytes:
                raise ProtocolError(
                    f"tensor frame of {view.nbytes} bytes exceeds {self.max_frame_bytes}"
                )
            total += view.nbytes
        if total > self.max_message_bytes:
            raise ProtocolError(f"tensor frames of {total} bytes exceed {self.max_message_bytes}")

    def _check_fresh(self, header: dict[str, Any]) -> None:
        """Refuse a replayed (sequence number not above the sender's last) or stale message."""
        sid, seq, ts = header.get("sid"), header.get("seq"), header.get("ts")
        if not isinstance(sid, str) or len(sid) > 64:
            raise ProtocolError("header without a sender id")
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
            raise ProtocolError("header without a sequence number")
        if not isinstance(ts, int | float) or abs(time.time() - ts) > MAX_MESSAGE_AGE_S:
            raise ProtocolError("stale message (timestamp out of range)")
        with self._lock:
            last = self._seen.get(sid, 0)
            if seq <= last:
                raise ProtocolError(f"replayed message (sequence {seq}, last {last})")
            self._seen[sid] = seq
            self._seen.move_to_end(sid)
            if len(self._seen) > MAX_SENDERS:
                self._seen.popitem(last=False)


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


def router(
    ctx: zmq.Context[Any], endpoint: str, max_frame: int = CONTROL_FRAME_BYTES
) -> tuple[zmq.Socket[Any], str]:
    """A ROUTER bound to ``endpoint`` (``tcp://host:*`` picks a port) and its actual address;
    ZeroMQ disconnects a peer that sends a frame over ``max_frame`` bytes before buffering it."""
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 200)
    sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
    # no ROUTER_HANDOVER: a connection claiming an identity already in use is refused, so an
    # intruder cannot take a peer's route over
    sock.setsockopt(zmq.MAXMSGSIZE, min(max_frame, MAX_FRAME_BYTES - 1))
    sock.bind(endpoint)
    return sock, sock.getsockopt_string(zmq.LAST_ENDPOINT)


def dealer(
    ctx: zmq.Context[Any], identity: str, endpoint: str, max_frame: int = CONTROL_FRAME_BYTES
) -> zmq.Socket[Any]:
    """A DEALER named ``identity`` (use `random_identity`) connected to ``endpoint``, accepting
    frames of at most ``max_frame`` bytes."""
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 200)
    sock.setsockopt(zmq.ROUTING_ID, identity.encode())
    sock.setsockopt(zmq.MAXMSGSIZE, min(max_frame, MAX_FRAME_BYTES - 1))
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
