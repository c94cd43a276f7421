"""Wire format: round trips, and every kind of bad message is a ProtocolError."""

from __future__ import annotations

import json

import pytest
import torch
import zmq

from dlsched.live.protocol import (
    MAX_HEADER_BYTES,
    Codec,
    ProtocolError,
    get_float,
    get_int,
    get_int_list,
    get_str,
)

CODEC = Codec("job1", "s3cret", "test")


def _header(frames: list[object]) -> dict[str, object]:
    first = frames[0]
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
    msg = CODEC.decode([bytes(memoryview(f)) for f in frames], {"PUSH"})
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
        msg = CODEC.decode(b.recv_multipart(copy=False), {"PARAMS"})
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
        [b"x" * (MAX_HEADER_BYTES + 1)],
    ],
)
def test_garbage_is_rejected(frames: list[bytes]) -> None:
    with pytest.raises(ProtocolError):
        CODEC.decode(frames, {"PUSH"})


def test_wrong_secret_job_or_type_is_rejected() -> None:
    with pytest.raises(ProtocolError, match="secret"):
        CODEC.decode(Codec("job1", "other", "x").encode("PUSH"), {"PUSH"})
    with pytest.raises(ProtocolError, match="job"):
        CODEC.decode(Codec("job2", "s3cret", "x").encode("PUSH"), {"PUSH"})
    with pytest.raises(ProtocolError, match="type"):
        CODEC.decode(CODEC.encode("SHUTDOWN"), {"PUSH"})


def _tamper(key: str, value: object, extra_frames: list[bytes] | None = None) -> list[bytes]:
    frames = CODEC.encode("PUSH", {}, {"g0": torch.ones(4)})
    header = _header(frames)
    header[key] = value
    payload = [bytes(memoryview(f)) for f in frames[1:]]
    return [json.dumps(header).encode(), *(extra_frames if extra_frames is not None else payload)]


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
    with pytest.raises(ProtocolError):
        CODEC.decode(frames, {"PUSH"})


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
