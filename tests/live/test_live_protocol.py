"""Wire format: round trips, and every kind of bad message is a ProtocolError."""

from __future__ import annotations

import json
import time

import pytest
import torch
import zmq

from dlsched.live.protocol import (
    MAX_HEADER_BYTES,
    MAX_MESSAGE_AGE_S,
    Codec,
    ProtocolError,
    get_float,
    get_int,
    get_int_list,
    get_str,
)

CODEC = Codec("job1", "s3cret", "test")
RECEIVER = Codec("job1", "s3cret", "receiver")


def _header(frames: list[object]) -> dict[str, object]:
    first = frames[1]
    assert isinstance(first, bytes)
    return dict(json.loads(first))


def test_round_trip_with_tensors() -> None:
    tensors = {
        "a": torch.arange(10, dtype=torch.float32),
        "b": torch.ones(2, 3, dtype=torch.float64),
        "c": torch.tensor([1, 2], dtype=torch.int64),
        "e": torch.zeros(0),
        "s": torch.arange(20, dtype=torch.float32)[5:9],  # a view
    }
    frames = CODEC.encode("PUSH", {"step": 3}, tensors)
    msg = RECEIVER.decode([bytes(memoryview(f)) for f in frames], {"PUSH"})
    assert msg.type == "PUSH" and msg.body == {"step": 3} and msg.src == "test"
    for name, t in tensors.items():
        assert torch.equal(msg.tensors[name], t)
        assert msg.tensors[name].dtype == t.dtype


def test_round_trip_over_zeromq_zero_copy() -> None:
    ctx: zmq.Context[object] = zmq.Context()
    try:
        a, b = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
        a.bind("inproc://t")
        b.connect("inproc://t")
        big = torch.randn(100_000)
        a.send_multipart(CODEC.encode("PARAMS", {}, {"p0": big}), copy=False)
        msg = RECEIVER.decode(b.recv_multipart(copy=False), {"PARAMS"})
        assert torch.equal(msg.tensors["p0"], big)
        a.close(0)
        b.close(0)
    finally:
        ctx.term()


@pytest.mark.parametrize(
    "frames",
    [
        [],
        [b"not json"],
        [b"[1]"],
        [b"\xff\xfe"],
        [b"\0" * 32, b"x" * (MAX_HEADER_BYTES + 1)],
        [b"\0" * 32, b"{}"],
        [b"short-mac", b"{}"],
    ],
)
def test_garbage_is_rejected(frames: list[bytes]) -> None:
    with pytest.raises(ProtocolError):
        CODEC.decode(frames, {"PUSH"})


def test_wrong_secret_job_or_type_is_rejected() -> None:
    with pytest.raises(ProtocolError, match="MAC"):
        RECEIVER.decode(Codec("job1", "other", "x").encode("PUSH"), {"PUSH"})
    with pytest.raises(ProtocolError, match="MAC"):  # the key depends on the job id too
        RECEIVER.decode(Codec("job2", "s3cret", "x").encode("PUSH"), {"PUSH"})
    with pytest.raises(ProtocolError, match="type"):
        RECEIVER.decode(CODEC.encode("SHUTDOWN"), {"PUSH"})


def test_secret_never_travels() -> None:
    frames = Codec("job1", "s3cret-abcdef", "x").encode("PUSH", {"step": 1}, {"g0": torch.ones(2)})
    assert all(b"s3cret-abcdef" not in bytes(memoryview(f)) for f in frames)
    assert "secret" not in _header(frames)


def test_message_without_mac_or_with_a_bad_mac_is_rejected() -> None:
    frames = [
        bytes(memoryview(f)) for f in CODEC.encode("PUSH", {"step": 1}, {"g0": torch.ones(4)})
    ]
    with pytest.raises(ProtocolError):  # the MAC frame dropped
        RECEIVER.decode(frames[1:], {"PUSH"})
    bad_mac = [bytes(32), *frames[1:]]
    with pytest.raises(ProtocolError, match="MAC"):
        RECEIVER.decode(bad_mac, {"PUSH"})
    header = _header(frames)
    header["body"] = {"step": 2}  # a changed header under the old MAC
    with pytest.raises(ProtocolError, match="MAC"):
        RECEIVER.decode([frames[0], json.dumps(header).encode(), frames[2]], {"PUSH"})
    flipped = bytearray(frames[2])
    flipped[0] ^= 1  # a changed tensor payload
    with pytest.raises(ProtocolError, match="MAC"):
        RECEIVER.decode([frames[0], frames[1], bytes(flipped)], {"PUSH"})
    with pytest.raises(ProtocolError, match="MAC"):  # a payload frame dropped
        RECEIVER.decode(frames[:2], {"PUSH"})
    assert RECEIVER.decode(frames, {"PUSH"}).body == {"step": 1}  # the original is fine


def test_replayed_and_stale_messages_are_rejected() -> None:
    sender = Codec("job1", "s3cret", "sender")
    receiver = Codec("job1", "s3cret", "receiver")
    first = [bytes(memoryview(f)) for f in sender.encode("PUSH", {"n": 1})]
    second = [bytes(memoryview(f)) for f in sender.encode("PUSH", {"n": 2})]
    assert receiver.decode(first, {"PUSH"}).body == {"n": 1}
    with pytest.raises(ProtocolError, match="replayed"):
        receiver.decode(first, {"PUSH"})
    assert receiver.decode(second, {"PUSH"}).body == {"n": 2}
    with pytest.raises(ProtocolError, match="replayed"):  # an older one after a newer one
        receiver.decode(first, {"PUSH"})
    old = _header(first)
    old.update(seq=99, ts=time.time() - MAX_MESSAGE_AGE_S - 1)
    with pytest.raises(ProtocolError, match="stale"):
        receiver.decode(sender.seal(old, []), {"PUSH"})
    # another receiver has its own record: each sender's sequence is checked per receiver
    assert Codec("job1", "s3cret", "other").decode(first, {"PUSH"}).body == {"n": 1}


def _tamper(key: str, value: object, extra_frames: list[bytes] | None = None) -> list[bytes]:
    frames = CODEC.encode("PUSH", {}, {"g0": torch.ones(4)})
    header = _header([bytes(memoryview(f)) for f in frames])
    header[key] = value
    payload = [bytes(memoryview(f)) for f in frames[2:]]
    # sealed with the right key: these reach the checks behind the MAC
    return [
        bytes(memoryview(f))
        for f in CODEC.seal(header, extra_frames if extra_frames is not None else payload)
    ]


@pytest.mark.parametrize(
    "frames",
    [
        _tamper("tensors", [["g0", "float32", [5]]]),  # size mismatch
        _tamper("tensors", [["g0", "object", [4]]]),  # dtype not allowed
        _tamper("tensors", [["g0", "float32", [-4]]]),  # negative shape
        _tamper("tensors", [["g0", "float32", [4]], ["g1", "float32", [4]]]),  # too few frames
        _tamper("tensors", [["g0", "float32", [2]], ["g0", "float32", [2]]], [b"\0" * 8] * 2),
        _tamper("tensors", "nope"),
        _tamper("body", [1, 2]),
        _tamper("v", 99),
    ],
)
def test_inconsistent_tensor_frames_are_rejected(frames: list[bytes]) -> None:
    with pytest.raises(ProtocolError) as err:
        RECEIVER.decode(frames, {"PUSH"})
    assert "MAC" not in str(err.value)


def test_body_accessors_validate_types() -> None:
    body = {"i": 3, "f": 1.5, "s": "x", "l": [1, 2], "b": True, "neg": -1, "nan": float("nan")}
    assert get_int(body, "i") == 3
    assert get_float(body, "f") == 1.5
    assert get_str(body, "s") == "x"
    assert get_int_list(body, "l") == [1, 2]
    for fn, key in [
        (get_int, "b"),
        (get_int, "neg"),
        (get_int, "missing"),
        (get_float, "nan"),
        (get_str, "i"),
        (get_int_list, "s"),
    ]:
        with pytest.raises(ProtocolError):
            fn(body, key)  # type: ignore[operator]


def test_frame_sizes_are_capped_per_message_type_before_the_mac() -> None:
    """Tensor frames reach the MAC check only where an expected type carries tensors, and only
    up to the job's block size (issue 35)."""
    from dlsched.live.protocol import TENSOR_TYPES, tensor_frame_bytes

    sender = Codec("job", "secret", "w0")
    bounds = [(0, 4096), (4096, 5000)]
    receiver = Codec("job", "secret", "coord").limit(bounds)

    def enc(type_: str, tensors: dict[str, torch.Tensor]) -> list[bytes]:
        return [bytes(memoryview(f)) for f in sender.encode(type_, {}, tensors)]

    frames = enc("READY", {"g0": torch.zeros(4)})
    with pytest.raises(ProtocolError, match="tensor frames where only"):
        receiver.decode(frames, {"READY", "ACK"})
    huge = enc("PUSH", {"g0": torch.zeros(300_000)})
    with pytest.raises(ProtocolError, match="exceeds"):
        receiver.decode(huge, TENSOR_TYPES)
    ok = enc("PUSH", {"g0": torch.zeros(4096)})
    assert receiver.decode(ok, TENSOR_TYPES).tensors["g0"].numel() == 4096
    assert tensor_frame_bytes(bounds) >= 4 * 4096
