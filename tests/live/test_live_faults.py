"""Faults: dead workers and PS, a restarted coordinator, and hostile or broken messages."""

from __future__ import annotations

import time
import uuid

import zmq

from dlsched.live import LiveJob
from dlsched.live.protocol import Codec
from tests.live.live_helpers import assert_matches_reference, config


def _events(job: LiveJob, kind: str) -> list[dict[str, object]]:
    return [e for e in job.status()["events"] if e["kind"] == kind]


def test_worker_killed_mid_training() -> None:
    cfg = config(total_steps=80)
    with LiveJob(cfg, 2, 3, timeout_s=30) as job:
        job.wait(steps=15, timeout_s=30)
        victim = job.roster().workers[1]
        t_kill = job.kill("worker", victim)
        deadline = time.monotonic() + 5.0
        while not _events(job, "worker_failure") and time.monotonic() < deadline:
            time.sleep(0.02)
        failures = _events(job, "worker_failure")
        assert failures, "the coordinator did not notice the dead worker"
        assert float(failures[0]["t"]) - t_kill < 2.0  # type: ignore[arg-type]
        job.wait(timeout_s=60)
        assert victim not in job.roster().workers
        assert len(job.roster().workers) == 2
        params = job.parameters()
    assert_matches_reference(params, cfg)


def test_ps_killed_rolls_back_to_snapshot() -> None:
    cfg = config(total_steps=80, snapshot_every=5)
    with LiveJob(cfg, 3, 2, timeout_s=30) as job:
        job.wait(steps=22, timeout_s=30)
        job.kill("ps", 1)
        deadline = time.monotonic() + 5.0
        while not _events(job, "rollback") and time.monotonic() < deadline:
            time.sleep(0.02)
        rollbacks = _events(job, "rollback")
        assert rollbacks, "no rollback after a PS died"
        version = int(rollbacks[0]["version"])  # type: ignore[call-overload]
        assert version % 5 == 0 and version >= 10
        assert int(rollbacks[0]["steps_rolled_back"]) >= 0  # type: ignore[call-overload]
        job.wait(timeout_s=60)
        assert sorted(job.roster().ps) == [0, 2]
        params = job.parameters()
    assert_matches_reference(params, cfg)


def test_coordinator_restart_recovers_from_state_file() -> None:
    cfg = config(total_steps=90)
    with LiveJob(cfg, 2, 2, timeout_s=30) as job:
        job.wait(steps=10, timeout_s=30)
        before = job.roster()
        job.kill_coordinator()
        time.sleep(0.5)  # training goes on without the coordinator
        job.restart_coordinator()
        assert job.roster().ps == before.ps
        assert any(e["kind"] == "coordinator_recovered" for e in job.status()["events"])
        job.scale_to(3, 3)  # the recovered coordinator runs a scaling round
        job.wait(timeout_s=60)
        params = job.parameters()
    assert_matches_reference(params, cfg)


def test_malformed_and_foreign_messages_are_rejected() -> None:
    cfg = config(total_steps=50)
    with LiveJob(cfg, 2, 2, timeout_s=30) as job:
        job.wait(steps=5, timeout_s=30)
        roster = job.roster()
        ctx: zmq.Context[object] = zmq.Context()
        try:
            targets = [job._endpoint, *roster.ps.values()]
            good = Codec(job.job_id, job._secret, "intruder")
            stranger = Codec(job.job_id, "not-the-secret", "intruder")
            other_job = Codec("other", job._secret, "intruder")
            garbage: list[list[bytes]] = [
                [b"not json"],
                [b"[1, 2]"],
                [b'{"v": 1}'],
                [b"\xff" * 100],
                [b"{}", b"payload-without-description"],
            ]
            forged = [
                stranger.encode("SHUTDOWN"),
                other_job.encode("SHUTDOWN"),
                good.encode("NOT_A_TYPE"),
                good.encode("PUSH", {"step": "x", "epoch": 0, "worker": 0}),
                good.encode("PUSH", {"step": 0, "epoch": 0, "worker": 99}),
                good.encode("MIGRATE", {"epoch": 10**6, "version": 0, "from": 0}),
                good.encode("CTL_SCALE", {"req": 1, "join": "x"}),
                good.encode("REGISTER", {"role": "ps", "nonce": "n", "server": 0}),
            ]
            for endpoint in targets:
                sock = ctx.socket(zmq.DEALER)
                sock.setsockopt(zmq.ROUTING_ID, f"x-{uuid.uuid4().hex[:8]}".encode())
                sock.setsockopt(zmq.LINGER, 0)
                sock.connect(endpoint)
                for frames in [*garbage, *forged]:
                    sock.send_multipart(frames)
                sock.close()
        finally:
            ctx.destroy(linger=0)
        job.wait(timeout_s=60)
        assert len(job.roster().ps) == 2 and len(job.roster().workers) == 2
        params = job.parameters()
    assert_matches_reference(params, cfg)
