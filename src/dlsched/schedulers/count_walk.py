"""The choosing walk of `dlsched.schedulers.ordered.run_in_order` by counting tasks, where that
is exact.

Why: on all of Philly (59 servers, hundreds of jobs running) a preemptive priority policy (SRTF,
LAS, Tiresias) re-chooses every running job at every one of ~150,000 points by placing it on a
scratch copy of the emptied cluster; a job that finishes is first in SRTF's order, so the memo
of the last walk (`dlsched.schedulers.walk_memo`) is cut at its first step and the placements
are redone: more than half of the run.

When it is exact: every job the walk visits has tasks of one demand vector ``u`` (whole numbers,
at least one positive, none above 2**20) and no PS, and every server's free amount in the
walk's start state is a whole number in [0, 2**30] on the resources ``u`` uses. Then a server
fits ``c = min_r(free_r // u_r)`` tasks (`tasks_that_fit`'s floating-point floor gives exactly
that at these sizes: the ``1e-9`` it adds cannot carry a quotient across a whole number), taking
``k`` tasks leaves ``c - k`` (the rows stay whole), and `FreeTracker.take` of ``n`` tasks
succeeds exactly when the servers' counts sum to at least ``n`` (its greedy loop then always
finds room). A job that does not exceed the summed free resources therefore always fits, so a
step is "took" when ``n`` is at most the tasks left, and otherwise the job's shape is dead (both
ways a walk can fail mark a shape without PS dead). The walk is the same, step for step, as the
placing one: `tests/schedulers/test_count_walk.py` compares the two.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import operator
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

Shape = tuple[Any, ...]
"""`dlsched.schedulers.pending_queue.Shape`: (worker demand, PS demand, workers, PS)."""

_MAX_NEED = 2.0**20
_MAX_FREE = 2.0**30
_FIRST = operator.itemgetter(0)


class UniformTasks:
    """Whether every shape noted since `clear` has no PS and one worker demand, and that
    demand (whole numbers): the condition on the jobs under which the walk can count."""

    __slots__ = ("_noted", "need")

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Forget every shape (a new run)."""
        self._noted = False
        self.need: tuple[float, float, float] | None = None
        """The one worker demand of every shape noted, or None (none noted, or not uniform)."""

    def note(self, shape: Shape) -> None:
        """A shape the walk may visit (noted once per shape object)."""
        if not self._noted:
            self._noted = True
            self.need = shape[0] if _countable(shape) else None
        elif self.need is not None and (shape[3] != 0 or shape[0] != self.need):
            self.need = None


def _countable(shape: Shape) -> bool:
    need, ps_need, _workers, ps = shape
    if ps != 0 or not all(math.isfinite(x) for x in ps_need):
        return False
    if not any(x > 0 for x in need):
        return False
    return all(x >= 0 and x <= _MAX_NEED and float(x).is_integer() for x in need)


def tasks_free(rows: Sequence[Sequence[float]], need: tuple[float, float, float]) -> int | None:
    """Tasks of ``need`` that fit in ``rows`` (summed over servers), or None where the rows
    are not whole numbers in [0, 2**30] on the resources ``need`` uses (no exact count)."""
    used = [(r, int(x)) for r, x in enumerate(need) if x > 0]
    total = 0
    for row in rows:
        fit = -1
        for r, u in used:
            value = row[r]
            if not (0.0 <= value <= _MAX_FREE and value.is_integer()):
                return None
            n = int(value) // u
            if fit < 0 or n < fit:
                fit = n
        total += fit
    return total


Job = TypeVar("Job")


def count_walk_merged(
    lanes: Sequence[tuple[Shape, Sequence[Any], Sequence[Job]]],
    running: Sequence[tuple[Any, Job, Shape]],
    tasks_left: int,
) -> list[tuple[Job, Shape]]:
    """`count_walk` over the merge of waiting jobs' ``lanes`` (shape, keys, jobs, each in key
    order) and the ``running`` jobs ((key, job, shape), by key), the same steps as
    `dlsched.schedulers.pending_queue.PendingQueue.candidates` would yield, with the running
    jobs between two waiting ones taken at once where all of them fit
    (keys are unique, so a block is the running jobs keyed below the next waiting job)."""
    dead: set[Shape] = set()
    chosen: list[tuple[Job, Shape]] = []
    keys = [entry[0] for entry in running]
    ends = list(itertools.accumulate(entry[2][2] for entry in running))  # tasks up to each
    heap = [(lane_keys[0], i) for i, (_, lane_keys, _) in enumerate(lanes)]
    heapq.heapify(heap)
    positions = [0] * len(lanes)
    done = 0  # running jobs walked
    while True:
        while heap and lanes[heap[0][1]][0] in dead:
            heapq.heappop(heap)
        end = bisect.bisect_left(keys, heap[0][0], done) if heap else len(keys)
        if end > done:
            need = ends[end - 1] - (ends[done - 1] if done else 0)
            # a block with a dead shape never passes: that shape's n is above the tasks left
            if need <= tasks_left:
                chosen.extend((run, shape) for _, run, shape in running[done:end])
                tasks_left -= need
            else:
                for _, run, shape in running[done:end]:
                    if shape in dead:
                        continue
                    if shape[2] <= tasks_left:
                        tasks_left -= shape[2]
                        chosen.append((run, shape))
                    else:
                        dead.add(shape)
            done = end
        if not heap:
            return chosen
        i = heap[0][1]
        shape, lane_keys, runs = lanes[i]
        pos = positions[i]
        if shape[2] <= tasks_left:
            tasks_left -= shape[2]
            chosen.append((runs[pos], shape))
        else:
            dead.add(shape)
        pos += 1
        if pos == len(lane_keys) or shape in dead:
            heapq.heappop(heap)
        else:
            positions[i] = pos
            heapq.heapreplace(heap, (lane_keys[pos], i))


def count_walk_split(
    lanes: Sequence[tuple[Shape, Sequence[Any], Sequence[Job]]],
    running: Sequence[tuple[Any, Job, Shape]],
    tasks_left: int,
) -> tuple[list[Job], list[Job]]:
    """`count_walk_merged`'s walk, told as what changes: the waiting jobs it chooses (in walk
    order) and the running jobs it leaves out (by key). A preemptive policy's decision needs
    only these, and the running jobs it keeps (most of them, at most points) are passed over
    in blocks without being listed."""
    dead: set[Shape] = set()
    starting: list[Job] = []
    left_out: list[Job] = []
    ends = list(itertools.accumulate(entry[2][2] for entry in running))  # tasks up to each
    heap = [(lane_keys[0], i) for i, (_, lane_keys, _) in enumerate(lanes)]
    heapq.heapify(heap)
    positions = [0] * len(lanes)
    done = 0  # running jobs walked
    while True:
        while heap and lanes[heap[0][1]][0] in dead:
            heapq.heappop(heap)
        end = bisect.bisect_left(running, heap[0][0], done, key=_FIRST) if heap else len(running)
        if end > done:
            need = ends[end - 1] - (ends[done - 1] if done else 0)
            if need <= tasks_left:  # the whole block kept (as in `count_walk_merged`)
                tasks_left -= need
            else:
                for _, run, shape in running[done:end]:
                    if shape in dead:
                        left_out.append(run)
                    elif shape[2] <= tasks_left:
                        tasks_left -= shape[2]
                    else:
                        dead.add(shape)
                        left_out.append(run)
            done = end
        if not heap:
            return starting, left_out
        i = heap[0][1]
        shape, lane_keys, runs = lanes[i]
        pos = positions[i]
        if shape[2] <= tasks_left:
            tasks_left -= shape[2]
            starting.append(runs[pos])
        else:
            dead.add(shape)
        pos += 1
        if pos == len(lane_keys) or shape in dead:
            heapq.heappop(heap)
        else:
            positions[i] = pos
            heapq.heapreplace(heap, (lane_keys[pos], i))


def count_walk(
    walk: Iterator[tuple[Job, Shape]], dead: set[Shape], tasks_left: int
) -> list[tuple[Job, Shape]]:
    """The choosing walk over ``walk`` (candidates that skip the shapes in ``dead``) by counting
    tasks: a job of ``n`` workers is chosen while ``n`` tasks are left, else its shape is dead."""
    chosen: list[tuple[Job, Shape]] = []
    for run, shape in walk:
        n = shape[2]
        if n <= tasks_left:
            tasks_left -= n
            chosen.append((run, shape))
        else:
            dead.add(shape)
    return chosen
