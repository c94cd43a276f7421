"""Issue 30, "no second writer": a leader paused between its lease check and its send.

The pause is a hook in the leader's fence (run after the check passed, just before the request
leaves), not timing luck: while it "sleeps", the lease expires, the other controller takes it
over and runs a round in which an older job takes the room the paused leader was about to give.
The write the paused leader then sends is one no check of its own can stop. With the server's
fence (``FakeApiServer(fence=...)``) it is refused (403), the stale leader re-reads the lease and
stands down, and nothing is lost, duplicated or over-committed; without it (what a check-then-act
lease alone gives) the same write is accepted and over-commits the node: the test can fail.
A running controller logs the refusal as one line and stands by; a stale write answered 409
stands down the same way, without a retry.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kubernetes import client

from dlsched.k8s.controller import Controller
from dlsched.k8s.lease import NotLeading
from tests.k8s.chaos_server import ChaosApiServer
from tests.k8s.k8s_helpers import NS, controller, dljob, finish, grants, node

LEASE_S = 15.0


def _job(name: str, second: int) -> dict[str, object]:
    return dljob(name, workers=2, arch="allreduce", created=f"2026-01-01T00:00:0{second}Z")


@contextmanager
def paused_leader(
    fenced: bool, older: bool = True
) -> Iterator[tuple[ChaosApiServer, Controller, Controller, list[float]]]:
    """Controllers ``a`` (leading, j0 running) and ``b``; ``a``'s next write (the start of j1)
    pauses after its lease check, during which ``b`` takes the expired lease and starts j2,
    older than j1 (``older=False``: no j2 comes, and ``b`` starts j1 itself)."""
    now = [1_000.0]
    server = ChaosApiServer(seed=0, fence=fenced)
    with (
        server,
        client.ApiClient(client.Configuration(host=server.url)) as api_a,
        client.ApiClient(client.Configuration(host=server.url)) as api_b,
    ):
        server.clock = lambda: now[0]
        kw: dict[str, Any] = {
            "clock": lambda: now[0],
            "lease_duration_s": LEASE_S,
            "bind": True,
            "interval_s": 0.2,
        }
        first = controller(api_a, "fifo", identity="a", **kw)
        second = controller(api_b, "fifo", identity="b", **kw)
        server.put("nodes", "", node("n0", gpu=4))  # room for two jobs of 2 GPUs
        server.put("dljobs", NS, _job("j0", 0))
        first.reconcile()  # a leads: j0 runs
        server.put("dljobs", NS, _job("j1", 2))
        check = first.rest.guard
        assert check is not None
        paused: list[str] = []

        def check_then_pause() -> None:
            check()  # the lease check passed ...
            if not paused:  # ... and the process sleeps before the send, once
                paused.append("a")
                now[0] += 2 * LEASE_S
                if older:
                    server.put("dljobs", NS, _job("j2", 1))  # older than j1: first in line
                second.reconcile()  # b takes the expired lease over: j2 gets the room

        first.rest.guard = check_then_pause
        yield server, first, second, now


def test_a_write_sent_past_the_lease_is_refused_and_nothing_is_lost() -> None:
    with paused_leader(fenced=True) as (server, first, second, now):
        with pytest.raises(NotLeading, match=r"refused \(403 Forbidden\).*held by 'b'"):
            first.reconcile()  # its start of j1 reaches the server after b took over
        tally = server.tally
        assert (tally.writes_refused, tally.writes_past_lease, tally.overcommit) == (1, 0, 0)
        assert not first.lease.leading
        assert grants(server) == {"j0": (2, 0), "j1": (0, 0), "j2": (2, 0)}
        assert first.reconcile().skipped == "another controller holds the lease"  # stood down
        for name in ("j0", "j2"):
            finish(server, name)
        now[0] += 1.0
        second.reconcile()  # deletes the finished jobs' pods (their room counts until gone)
        second.reconcile()
        assert grants(server)["j1"] == (2, 0)  # the refused start was not lost
        pods = sorted(p["metadata"]["name"] for p in server.objects("pods", NS))
        assert pods == ["j1-worker-0", "j1-worker-1"]  # no duplicate, no orphan
        assert (tally.writes_past_lease, tally.overcommit, tally.max_writers) == (0, 0, 1)


def test_without_the_fence_the_same_write_is_accepted() -> None:
    with paused_leader(fenced=False) as (server, first, _, _):
        with pytest.raises(NotLeading):  # at its next write: its own check sees the lease gone
            first.reconcile()
        tally = server.tally
        assert (tally.writes_refused, tally.writes_past_lease) == (0, 1)
        assert tally.overcommit >= 1  # j0, j2 and the stale start of j1 on one 4-GPU node
        assert tally.max_writers == 2


def test_a_stale_write_answered_409_stands_down_without_retrying() -> None:
    with paused_leader(fenced=False, older=False) as (server, first, _, _):
        with pytest.raises(NotLeading, match=r"refused \(409 Conflict\).*held by 'b'"):
            first.reconcile()  # b started j1 meanwhile: a's version of j1 is stale
        assert server.tally.writes_past_lease == 0
        assert server.count("PATCH", "/dljobs/j1") == 2  # b's start, a's refused one: no retry
        assert grants(server)["j1"] == (2, 0)


def test_the_running_controller_logs_one_line_and_stands_by(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with paused_leader(fenced=True) as (server, first, _, _):
        stop = threading.Event()
        loop = threading.Thread(target=first.run, args=(stop,), daemon=True)
        with caplog.at_level(logging.INFO, logger="dlsched.k8s"):
            loop.start()
            deadline = time.monotonic() + 20
            while server.count("GET", "/leases/") < 6 and time.monotonic() < deadline:
                time.sleep(0.05)  # a few rounds after the refusal: standing by
            stop.set()
            loop.join(timeout=20)
        assert not loop.is_alive()
        said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(said) == 1 and "refused (403 Forbidden)" in said[0], said  # one line
        assert server.tally.writes_refused == 1  # written once, never again
        assert server.count("PATCH", "/dljobs/j1") == 1
