"""The round's order kept between points (`dlsched.sim.gavel_core_order`) gives the old walk's
jobs and types (`gavel_core_round._walk` over every active job's priority), on drawn books:
ties of ``X`` and of priority (consecutive floats of ``X`` whose priorities round together),
jobs that ran since the reset, jobs that left, arrivals, jobs given no time, several types."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.sim import gavel_core as core
from dlsched.sim.gavel_core_order import _o_drop, _ran, _rebuild, _walk_fast

_NEAR = [1.5]
for _ in range(5):
    _NEAR.append(float(np.nextafter(_NEAR[-1], 2.0)))
XS = [0.0, -0.0, -0.5, 1e-3, 0.25, 1.0, *_NEAR]
"""``X``: none, negative, and six consecutive floats from 1.5: with half a round 1.25 and the
type's time 1.0 the 4th and 5th get the same priority (1.2000000000000006)."""
DEFICITS = [0.0, -0.0, 1.0, -1.0, 2.5]


@st.composite
def books(draw: st.DrawFn) -> dict:
    n = draw(st.integers(1, 40))
    T = draw(st.integers(1, 2))
    half = draw(st.sampled_from([1.25, 180.0]))
    nbase = draw(st.integers(0, n))
    tb = np.zeros((4, T, n))
    grate = np.zeros((T, n))
    for c in range(T):
        for j in range(n):
            grate[c, j] = draw(st.sampled_from([0.0, 1.0, 2.0, 2.0]))
            if j < nbase:
                tb[core.X, c, j] = draw(st.sampled_from(XS))
                tb[core.DEFICIT, c, j] = draw(st.sampled_from(DEFICITS))
    tb[core.JT] = half
    steps = [
        (
            draw(st.lists(st.integers(0, n - 1), max_size=6)),  # run (if active)
            draw(st.sampled_from([0.0, 0.1, 1.0, 360.0])),  # for this long
            draw(st.lists(st.integers(0, n - 1), max_size=3)),  # finish (if active)
            draw(st.integers(0, 4)),  # arrivals
            [draw(st.integers(0, 12)) for _ in range(T)],  # the rooms
            draw(st.permutations(range(T))),  # the type order
        )
        for _ in range(draw(st.integers(1, 4)))
    ]
    wt0 = draw(st.sampled_from([1.0, 3.0, half * max(nbase, 1)]))
    scale = np.array([draw(st.sampled_from([1, 1, 2, 4])) for _ in range(n)], dtype=np.int64)
    return {
        "n": n, "T": T, "half": half, "nbase": nbase, "tb": tb, "grate": grate,
        "steps": steps, "wt0": wt0, "scale": scale,
    }  # fmt: skip


def _old_walk(act: list[int], tb: np.ndarray, wt: np.ndarray, args: tuple) -> list[tuple]:
    grate, scale, rooms, order_t, taken, heap, ranked, chosen, ctype = args
    a = np.array(act, dtype=np.int64)
    core._priorities(a, len(act), tb, wt)
    nch = core._walk(a, len(act), tb, grate, scale, rooms, order_t, taken, heap, ranked,
                     chosen, ctype)  # fmt: skip
    taken[chosen[:nch]] = False
    return list(zip(chosen[:nch].tolist(), ctype[:nch].tolist(), strict=True))


@settings(max_examples=300, deadline=None)
@given(books())
def test_the_kept_order_walks_as_every_jobs_priority(b: dict) -> None:
    n, T, half, tb, grate, scale = b["n"], b["T"], b["half"], b["tb"], b["grate"], b["scale"]
    act = list(range(b["nbase"]))
    wt = np.full(T, b["wt0"])
    fin = np.full(n, np.nan)
    oi = np.zeros((7, T, n), dtype=np.int64)
    oi[core.OPOS] = -1
    on = np.zeros((T, 6), dtype=np.int64)
    kept = _rebuild(np.array(act, dtype=np.int64), len(act), tb, grate, oi, on, half, fin)
    assert kept
    seen, base = b["nbase"], b["nbase"]
    heap, ranked, scr = (np.empty(n, dtype=np.int64) for _ in range(3))
    chosen, ctype = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    taken = np.zeros(n, dtype=np.bool_)
    hs = np.zeros(4, dtype=np.int64)
    for runs, elapsed, finish, arrivals, rooms, order in b["steps"]:
        for j in dict.fromkeys(runs):  # as `_account`: the time, then the list
            if j in act:
                c = j % T
                tb[core.JT, c, j] += elapsed
                wt[c] += elapsed
                _ran(c, j, tb, grate, oi, on, half)
        for j in finish:
            if j in act:
                act.remove(j)
                fin[j] = 1.0
                for c in range(T):
                    _o_drop(c, j, oi, on)
        for j in range(seen, min(n, seen + arrivals)):  # zero X and deficit, half a round
            act.append(j)
            wt += half
        seen = min(n, seen + arrivals)
        room_a = np.array(rooms, dtype=np.int64)
        order_t = np.array(order, dtype=np.int64)
        args = (grate, scale, room_a, order_t, taken, heap, ranked, chosen, ctype)
        want = _old_walk(act, tb, wt, args)
        got = _walk_fast(
            tb, wt, grate, scale, room_a, order_t, taken, heap, chosen, ctype, oi, on, fin,
            half, seen, base, scr, hs,
        )  # fmt: skip
        assert got >= 0
        taken[chosen[:got]] = False
        assert list(zip(chosen[:got].tolist(), ctype[:got].tolist(), strict=True)) == want


def test_a_priority_not_above_zero_hands_the_walk_back() -> None:
    """A job given time whose priority is not above 0 (its type's time not above 0 cannot do
    it: ``X * _BIG``; a fraction so large it rounds to 0 does): -1, nothing taken."""
    n, half = 3, 1.0
    tb = np.zeros((4, 1, n))
    tb[core.X, 0] = [1e-300, 0.5, 0.0]
    tb[core.JT, 0] = half
    grate = np.ones((1, n))
    oi = np.zeros((7, 1, n), dtype=np.int64)
    oi[core.OPOS] = -1
    on = np.zeros((1, 6), dtype=np.int64)
    fin = np.full(n, np.nan)
    act = np.arange(n, dtype=np.int64)
    assert _rebuild(act, n, tb, grate, oi, on, half, fin)
    taken = np.zeros(n, dtype=np.bool_)
    scratch = [np.empty(n, dtype=np.int64) for _ in range(5)]
    heap, _, chosen, ctype, scr = scratch
    wt = np.array([1e-300])  # fraction 1e300: 1e-300 / 1e300 is 0
    args = (tb, wt, grate, np.ones(n, dtype=np.int64), np.array([3]), np.array([0]), taken)
    got = _walk_fast(*args, heap, chosen, ctype, oi, on, fin, half, n, n, scr,
                     np.zeros(4, dtype=np.int64))  # fmt: skip
    assert got == -1 and not taken.any()
    tb[core.X, 0, 0] = np.nan
    assert not _rebuild(act, n, tb, grate, oi, on, half, fin)  # X not finite: the old walk
