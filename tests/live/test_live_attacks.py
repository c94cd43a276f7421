"""Local processes without the job's secret cannot stall, steer or redirect a live job.

Each attack runs against a real job (coordinator, PS and workers as processes); the job must
keep training and end with the parameters of an unattacked run (`reference_train`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import zmq

from dlsched.live import LiveJob
from dlsched.live.protocol import Codec
from tests.live.live_helpers import assert_matches_reference, config


@contextmanager
def _silent_peers(endpoints_and_ids: list[tuple[str, bytes]]) -> Iterator[None]:
    """Connect a DEALER per (endpoint, identity) that never sends anything."""
    ctx: zmq.Context[Any] = zmq.Context()
    socks = []
    try:
        for endpoint, ident in endpoints_and_ids:
            sock = ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.ROUTING_ID, ident)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(endpoint)
            socks.append(sock)
        yield
    finally:
        for sock in socks:
            sock.close(0)
        ctx.term()


def _progress_during(job: LiveJob, seconds: float) -> int:
    start = job.progress()
    time.sleep(seconds)
    return job.progress() - start


def test_takeover_with_guessed_or_known_identities_stalls_nothing() -> None:
    cfg = config(total_steps=120, step_sleep_s=0.01)
    with LiveJob(cfg, 2, 2, timeout_s=30) as job:
        job.wait(steps=5, timeout_s=30)
        st = job.status()
        # the old predictable names, and the real coordinator identities of every member
        targets = [(ep, name) for ep in job.roster().ps.values() for name in (b"w0", b"w1", b"p0")]
        for m in st["members"]:
            targets += [(job._endpoint, f"n-{m['nonce']}".encode())]
            targets += [(job._endpoint, f"h-{m['nonce']}".encode())]
        with _silent_peers(targets):
            assert _progress_during(job, 2.0) > 0, "the job stalled under the takeover attempt"
            assert len(job.status()["members"]) == 4  # nobody was declared dead
        job.wait(timeout_s=60)
        params = job.parameters()
    assert_matches_reference(params, cfg)


def test_messages_without_mac_with_a_bad_mac_or_replayed_are_refused() -> None:
    cfg = config(total_steps=80)
    with LiveJob(cfg, 1, 2, timeout_s=30) as job:
        job.wait(steps=5, timeout_s=30)
        forger = Codec(job.job_id, "guessed-secret", "intruder")
        insider = Codec(job.job_id, job._secret, "capture")  # stands for a captured message
        shutdown = [bytes(memoryview(f)) for f in insider.encode("SHUTDOWN")]
        status = [bytes(memoryview(f)) for f in insider.encode("CTL_STATUS", {"req": 7})]
        ctx: zmq.Context[Any] = zmq.Context()
        try:
            targets = [job._endpoint, *job.roster().ps.values()]
            for endpoint in targets:
                sock = ctx.socket(zmq.DEALER)
                sock.setsockopt(zmq.LINGER, 0)
                sock.connect(endpoint)
                sock.send_multipart(shutdown[1:])  # no MAC frame
                sock.send_multipart([bytes(32), *shutdown[1:]])  # zero MAC
                sock.send_multipart(forger.encode("SHUTDOWN"))  # MAC under a wrong key
                sock.send_multipart(forger.encode("CTL_CHECKPOINT", {"req": 1, "dir": "/tmp"}))
                sock.close(0)
            # a genuine request is answered once; the same frames again are refused
            sock = ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(job._endpoint)
            sock.send_multipart(status)
            assert sock.poll(5000), "the genuine request was not answered"
            reply = insider.decode(sock.recv_multipart()[0:], {"CTL_REPLY"})
            assert reply.body["req"] == 7
            sock.send_multipart(status)
            assert not sock.poll(1000), "the replayed request was answered"
            sock.close(0)
        finally:
            ctx.term()
        assert job.status()["members"] and not job.status()["failed"]
        job.wait(timeout_s=60)
        params = job.parameters()
    assert_matches_reference(params, cfg)


def test_checkpoint_path_traversal_is_refused(tmp_path: Any) -> None:
    cfg = config(total_steps=60)
    outside = tmp_path / "outside"
    with LiveJob(cfg, 1, 1, workdir=tmp_path / "job", timeout_s=30) as job:
        job.wait(steps=3, timeout_s=30)
        for bad in [str(outside), "../outside", str(tmp_path / "job" / ".." / "outside")]:
            reply = job._request("CTL_CHECKPOINT", {"dir": bad}, 10.0)
            assert not reply["ok"] and "outside the job directory" in reply["error"]
        assert not outside.exists()
        job.wait(timeout_s=60)
        params = job.parameters()
    assert_matches_reference(params, cfg)


def test_a_silent_newcomer_times_the_round_out_and_training_goes_on() -> None:
    # enough steps that the job is still training when the 2 s round has timed out
    cfg = config(total_steps=500, step_sleep_s=0.01, round_timeout_s=2.0)
    with LiveJob(cfg, 1, 2, timeout_s=30) as job:
        job.wait(steps=5, timeout_s=30)
        before = job.roster()
        body = {"join": ["silent0123456789"], "add_workers": 1}
        body |= {"add_ps": 0, "remove_ps": [], "remove_workers": []}
        with _silent_peers([(job._endpoint, b"n-silent0123456789")]):
            reply = job._request("CTL_SCALE", body, 10.0)
        assert not reply["ok"] and "timed out" in reply["error"]
        after = job.roster()
        assert after.workers == before.workers and after.ps == before.ps
        assert _progress_during(job, 1.0) > 0
        job.wait(timeout_s=90)
        params = job.parameters()
    assert_matches_reference(params, cfg)


def _peak_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):  # peak resident memory
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for {pid}")


def test_oversized_unauthenticated_frames_are_dropped_unbuffered() -> None:
    """Issue 35: a sender pushed a member from 180 MB to 472 MB with 2 GiB frames. Sockets now
    cap frames by what the job sends (no tensors to the coordinator, one block to a PS), so
    ZeroMQ drops a bigger frame, and its connection, before buffering it."""
    cfg = config(total_steps=100, step_sleep_s=0.01)
    big = b"\0" * (48 << 20)
    with LiveJob(cfg, 1, 1, timeout_s=30) as job:
        job.wait(steps=5, timeout_s=30)
        pids = job.member_pids()
        watched = pids["coordinator"] + pids["ps"]
        before = {pid: _peak_rss_bytes(pid) for pid in watched}
        ctx: zmq.Context[Any] = zmq.Context()
        try:
            for endpoint in [job._endpoint, *job.roster().ps.values()]:
                for _ in range(3):
                    sock = ctx.socket(zmq.DEALER)
                    sock.setsockopt(zmq.LINGER, 2000)
                    sock.connect(endpoint)
                    sock.send_multipart([b"\0" * 32, big, big])
                    sock.close()
            time.sleep(1.0)
        finally:
            ctx.term()
        grown = {pid: _peak_rss_bytes(pid) - before[pid] for pid in watched}
        assert max(grown.values()) < 24 << 20, f"members buffered the frames: {grown}"
        job.wait(timeout_s=60)
        params = job.parameters()
    assert_matches_reference(params, cfg)
