from dlsched.sim.engine import EventKind, EventQueue


def test_ties_break_by_kind_then_insertion_order():
    q = EventQueue()
    q.push(5.0, EventKind.TICK, "tick")
    q.push(5.0, EventKind.COMPLETION, "done-a")
    q.push(1.0, EventKind.ARRIVAL, "early")
    q.push(5.0, EventKind.COMPLETION, "done-b")
    order = [q.pop()[2] for _ in range(len(q))]
    assert order == ["early", "done-a", "done-b", "tick"]
    assert q.peek_time() == float("inf")
    assert q.handled == 4
