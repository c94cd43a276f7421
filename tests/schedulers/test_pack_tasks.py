"""SAF's packing (`pack_tasks`) against the direct computation: every server's room
recounted at every step, on a copy of every row."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.schedulers.common import RoomCounts, tasks_that_fit
from dlsched.schedulers.saf import pack_tasks


def ref_pack_tasks(
    free: list[list[float]], need: tuple[float, float, float], count: int
) -> list[tuple[int, int]] | None:
    """`pack_tasks` as it was: rooms of every server recounted at each step."""
    trial = [row[:] for row in free]
    placed: list[tuple[int, int]] = []
    left = count
    while left > 0:
        room = [tasks_that_fit(row, need) for row in trial]
        whole = [s for s, n in enumerate(room) if n >= left]
        if whole:
            server = min(whole, key=lambda s: (room[s], s))
        else:
            server = max(range(len(room)), key=lambda s: (room[s], -s))
            if room[server] <= 0:
                return None
        n = min(left, room[server])
        for r in range(3):
            trial[server][r] -= need[r] * n
        placed.append((server, n))
        left -= n
    free[:] = trial
    return placed


_amount = st.integers(0, 16).map(float) | st.floats(0.0, 16.0, allow_nan=False)
_row = st.lists(_amount, min_size=3, max_size=3)


@settings(max_examples=300, deadline=None)
@given(
    free=st.lists(_row, min_size=1, max_size=20),
    need=st.tuples(
        st.sampled_from([0.0, 1.0, 0.5, 0.1, 3.0]),
        st.sampled_from([0.0, 1.0, 4.0, 0.3]),
        st.sampled_from([0.0, 2.0, 0.7]),
    ),
    counts=st.lists(st.integers(0, 30), min_size=1, max_size=4),
)
def test_pack_tasks_places_as_the_full_recount(
    free: list[list[float]], need: tuple[float, float, float], counts: list[int]
) -> None:
    ours = [row[:] for row in free]
    ref = [row[:] for row in free]
    counted = [row[:] for row in free]  # packed from room counts kept by `RoomCounts`
    rooms = RoomCounts(counted)
    for count in counts:  # one after another on what is left
        expected = ref_pack_tasks(ref, need, count)
        assert pack_tasks(ours, need, count) == expected
        assert ours == ref
        assert pack_tasks(counted, need, count, rooms.of(need)) == expected
        rooms.recount(server for server, _ in expected or [])
        assert counted == ref
        assert rooms.of(need) == [tasks_that_fit(row, need) for row in ref]
