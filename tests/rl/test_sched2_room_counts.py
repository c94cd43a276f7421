"""SCED²-L counts each server's room for a worker demand once a point (`RoomCounts`, shared by
the lanes' status, the packings and the one-server choice, recounted after each start): the
count it reads equals `tasks_that_fit` over every server at that moment, at every read of
every point of whole runs, and the run decides as the plain rule (which counts at each call).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.api import simulate
from dlsched.core.cluster import tasks_that_fit
from dlsched.papers.sched2 import lookahead
from dlsched.schedulers.common import RoomCounts
from dlsched.workloads.registry import make_workload
from tests.rl.test_sched2_lookahead_queue import Checked
from tests.rl.test_sched2_lookahead_ranked import PARAMS


class CheckedRooms(RoomCounts):
    """`RoomCounts` that checks each read against a fresh count over every server."""

    reads = 0
    shared = 0  # reads answered from a count made earlier in the point

    def of(self, need: tuple[float, float, float]) -> list[int]:
        cached = need in self.rooms
        room = super().of(need)
        assert room == [tasks_that_fit(row, need) for row in self.free], need
        type(self).reads += 1
        type(self).shared += cached
        return room


def _run(params, seed: int, servers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lookahead, "RoomCounts", CheckedRooms)
    monkeypatch.setattr(CheckedRooms, "reads", 0)
    monkeypatch.setattr(CheckedRooms, "shared", 0)
    workload = make_workload("sched2", seed=seed, num_jobs=150, load=6.0, servers=servers)
    simulate(workload, Checked(params), seed=seed)  # decides as the plain rule at every point


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=PARAMS, seed=st.integers(0, 10_000), servers=st.integers(1, 6))
def test_shared_room_count_equals_a_fresh_count(params, seed, servers):
    with pytest.MonkeyPatch.context() as mp:
        _run(params, seed, servers, mp)
        assert CheckedRooms.reads > 0


def test_counts_are_shared_and_kept_after_starts(monkeypatch):
    """A run with reservations (promotion off: many lanes keyed a point) reads shared counts."""
    params = dataclasses.replace(
        lookahead.LookaheadParams(reserve_after_h=0.22, backfill=0.98), promote_after=1e6
    )
    _run(params, 2201, 4, monkeypatch)
    assert CheckedRooms.shared > 100 and CheckedRooms.reads > CheckedRooms.shared
