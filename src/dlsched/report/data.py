"""What a report page shows of one run, built from its event log (`dlsched.sim.event_log`):
columns of numbers the page's script draws (compact JSON: one list a column, times in
seconds rounded to 0.1 s).

``bars``: one a job allocation (from a start, rescale or migration to the job's next change),
the rows of the per-job timeline. ``segs``: the same allocations cut per server, each on a
contiguous range of the server's GPU slots (the lowest free ones, as the slots were freed
and taken in the log's order), the rows of the per-server timeline. ``series``: GPUs held,
jobs waiting and running over time (exact step functions, averaged into at most
`MAX_SERIES_POINTS` buckets), fragmentation where the run's timeline sampled it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlsched.sim.event_log import (
    FAIL,
    FINISH,
    KINDS,
    PREEMPT,
    SERVER,
    SUBMIT,
    EventLog,
    no_clock,
)
from dlsched.sim.metrics import Timeline
from dlsched.sim.result import JobRecord

MAX_SERIES_POINTS = 2000
"""Points a time series keeps (each the time-weighted mean of its bucket)."""
CDF_POINTS = 400
"""Quantiles a CDF keeps."""
_NO_JOB = -1


@dataclass
class RunInput:
    """One run as the report reads it: its log, and what else the run knew.

    Attributes:
        records: the finished jobs' records (ideal duration, slowdown, model); None when only
            the log is known (``dlsched report FILE``).
        timeline: the simulator's sampled timeline (fragmentation); None when not known.
        jct_bound_s: mean no-wait lower bound of the finished jobs' JCT (s; NaN if unknown).
        now_s: the run's time now (s) for one still going (a live dashboard): allocations still
            held are drawn to it; NaN: the run ended at its last event.
        decisions: a learned policy's decision points (`dlsched.rl.decision_trace`), if kept.
    """

    workload: str
    scheduler: str
    seed: int
    log: EventLog
    trace_ids: Mapping[int, str]
    records: Sequence[JobRecord] | None = None
    timeline: Timeline | None = None
    jct_bound_s: float = math.nan
    now_s: float = math.nan
    decisions: dict[str, Any] | None = None


def snapshot(log: EventLog) -> EventLog:
    """A consistent copy of ``log`` while another thread appends to it (the rows every column
    already has)."""
    columns = ("time_s", "job_id", "kind", "gpus", "workers", "ps", "servers")
    n = min(len(getattr(log, c)) for c in columns)
    copy = EventLog(no_clock)
    for c in columns:
        setattr(copy, c, list(getattr(log, c)[:n]))
    return copy


def _r(x: float) -> float | None:
    """A time rounded to 0.1 s for the page (None for NaN: JSON has no NaN)."""
    return None if x != x else round(x, 1)


def _take_slots(free: list[bool], n: int) -> list[tuple[int, int]]:
    """Take the ``n`` lowest free slots; their contiguous ``(first, count)`` runs."""
    runs: list[tuple[int, int]] = []
    for k, is_free in enumerate(free):
        if n == 0:
            break
        if not is_free:
            continue
        free[k] = False
        n -= 1
        if runs and runs[-1][0] + runs[-1][1] == k:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((k, 1))
    return runs


class _Builder:
    """Walks one log in order, opening and closing bars and server segments."""

    def __init__(self, capacity: list[int]) -> None:
        self.offset = [0, *np.cumsum(capacity).tolist()]
        self.free = [[True] * c for c in capacity]
        self.bars: dict[str, list[Any]] = {
            k: [] for k in ("job", "t0", "t1", "gpus", "open", "end")
        }
        self.segs: dict[str, list[int]] = {"bar": [], "y": [], "n": []}
        self.open: dict[int, int] = {}  # job index -> its open bar
        self.held: dict[int, list[tuple[int, int, int]]] = {}  # job -> (server, first, count)

    def close(self, job: int, t: float, kind: int) -> None:
        bar = self.open.pop(job, None)
        if bar is not None:
            self.bars["t1"][bar] = _r(t)
            self.bars["end"][bar] = kind
        for server, first, count in self.held.pop(job, []):
            for k in range(first, first + count):
                self.free[server][k] = True

    def start(self, job: int, t: float, kind: int, gpus: int, servers: str) -> None:
        bar = len(self.bars["job"])
        for key, value in zip(self.bars, (job, _r(t), None, gpus, kind, _NO_JOB), strict=True):
            self.bars[key].append(value)
        self.open[job] = bar
        held = self.held[job] = []
        for pair in servers.split():
            server_text, _, gpu_text = pair.partition(":")
            server, gpus_there = int(server_text), int(gpu_text)
            if not 0 <= server < len(self.free):
                raise ValueError(f"at {t} s: no server {server} (the log has {len(self.free)})")
            if sum(self.free[server]) < gpus_there:
                raise ValueError(f"at {t} s: server {server} holds more GPUs than it has")
            for first, count in _take_slots(self.free[server], gpus_there):
                held.append((server, first, count))
                self.segs["bar"].append(bar)
                self.segs["y"].append(self.offset[server] + first)
                self.segs["n"].append(count)


def _step_series(times: np.ndarray, values: np.ndarray, end_s: float) -> tuple[list, list]:
    """A step function (``values[k]`` from ``times[k]``) as at most `MAX_SERIES_POINTS`
    bucket means (time-weighted), at the buckets' starts."""
    if times.size == 0:
        return [], []
    edges = np.append(times, max(end_s, times[-1]))
    if times.size <= MAX_SERIES_POINTS:
        return [_r(t) for t in times], np.round(values, 4).tolist()
    grid = np.linspace(edges[0], edges[-1], MAX_SERIES_POINTS + 1)
    # the integral of the step function at each grid point, then differences over buckets
    area = np.concatenate([[0.0], np.cumsum(values * np.diff(edges))])
    k = np.clip(np.searchsorted(edges, grid, side="right") - 1, 0, times.size - 1)
    at = area[k] + values[k] * (grid - edges[k])
    means = np.diff(at) / np.maximum(np.diff(grid), 1e-12)
    return [_r(t) for t in grid[:-1]], np.round(means, 4).tolist()


def _cdf(values: Sequence[float | None]) -> dict[str, list]:
    """Sorted values at up to `CDF_POINTS` quantiles: ``x`` and the fraction ``p`` at or below
    (None, NaN and infinite values left out)."""
    known = [v for v in values if v is not None and math.isfinite(v)]
    x = np.sort(np.asarray(known, dtype=float))
    if x.size == 0:
        return {"x": [], "p": []}
    idx = np.unique(np.linspace(0, x.size - 1, min(CDF_POINTS, x.size)).round().astype(int))
    return {"x": np.round(x[idx], 3).tolist(), "p": np.round((idx + 1) / x.size, 5).tolist()}


def run_data(run: RunInput) -> dict[str, Any]:
    """The page's data of one run (see the module docstring)."""
    log = run.log
    capacity = [g for g, k in zip(log.gpus, log.kind, strict=True) if k == SERVER]
    builder = _Builder(capacity)
    index: dict[int, int] = {}
    submit: list[float] = []
    start: list[float] = []
    finish: list[float] = []
    changes: list[int] = []
    points: dict[str, list[float]] = {"t": [], "util": [], "queue": [], "running": []}
    held: dict[int, int] = {}
    used = waiting = 0
    for t, job_id, kind, gpus, servers in zip(
        log.time_s, log.job_id, log.kind, log.gpus, log.servers, strict=True
    ):
        if kind == SERVER:
            continue
        if kind == SUBMIT:
            index[job_id] = len(submit)
            submit.append(t)
            start.append(math.nan)
            finish.append(math.nan)
            changes.append(0)
            waiting += 1
        else:
            if job_id not in index:
                raise ValueError(f"at {t} s: job {job_id} has a {KINDS[kind]} before its submit")
            job = index[job_id]
            was = held.pop(job_id, None)
            builder.close(job, t, kind)
            if was is not None:
                used -= was
            if kind in (FINISH, FAIL):
                if kind == FINISH:
                    finish[job] = t
                if was is None:  # ended while holding nothing (a live job that failed)
                    waiting -= 1
            elif kind == PREEMPT:
                waiting += 1
            else:
                if start[job] != start[job]:
                    start[job] = t
                if was is None:
                    waiting -= 1
                else:
                    changes[job] += 1
                held[job_id] = gpus
                used += gpus
                builder.start(job, t, kind, gpus, servers)
        if points["t"] and points["t"][-1] == t:  # one point an instant: the state after it
            for values in points.values():
                values.pop()
        for key, value in zip(points, (t, used, waiting, len(held)), strict=True):
            points[key].append(value)
    end_s = max(max(log.time_s, default=0.0), run.now_s if run.now_s == run.now_s else 0.0)
    for job in list(builder.open):
        builder.close(job, end_s, _NO_JOB)
    jobs = _job_columns(run, index, submit, start, finish, changes)
    jct = [f - s for f, s in zip(finish, submit, strict=True)]
    return {
        "workload": run.workload,
        "scheduler": run.scheduler,
        "seed": run.seed,
        "end_s": _r(end_s),
        "servers": capacity,
        "kinds": list(KINDS),
        "jobs": jobs,
        "bars": builder.bars,
        "segs": builder.segs,
        "series": _series(points, sum(capacity), end_s),
        "frag": _fragmentation(run.timeline),
        "cdf": {"jct": _cdf(jct), "slowdown": _cdf(jobs["slowdown"])},
        "bound_s": _r(run.jct_bound_s),
        "decisions": run.decisions,
    }


def _series(points: dict[str, list[float]], gpus: int, end_s: float) -> dict[str, list]:
    """The page's time series from the state after each instant (``points``: ``t``, GPUs held
    ``util``, ``queue``, ``running``), GPUs held as a fraction of the cluster's ``gpus``."""
    times = np.asarray(points["t"])
    series: dict[str, list] = {"t": _step_series(times, np.zeros(times.size), end_s)[0]}
    for key in ("util", "queue", "running"):
        values = np.asarray(points[key], dtype=float) / (max(gpus, 1) if key == "util" else 1)
        series[key] = _step_series(times, values, end_s)[1]
    if not gpus:
        series["util"] = []  # no GPUs in the cluster, or none known (a jobs table alone)
    return series


def _fragmentation(timeline: Timeline | None) -> dict[str, list]:
    """The simulator's sampled fragmentation (every k-th sample beyond `MAX_SERIES_POINTS`)."""
    if timeline is None or not timeline.times:
        return {"t": [], "v": []}
    stride = max(1, len(timeline.times) // MAX_SERIES_POINTS)
    return {
        "t": [_r(t) for t in timeline.times[::stride]],
        "v": np.round(timeline.fragmentation[::stride], 4).tolist(),
    }


def _job_columns(
    run: RunInput,
    index: Mapping[int, int],
    submit: Sequence[float],
    start: Sequence[float],
    finish: Sequence[float],
    changes: Sequence[int],
) -> dict[str, list]:
    """The job table's columns, in submission order (slowdown and model from the records)."""
    ids = list(index)
    by_id = {r.job_id: r for r in run.records or ()}
    slowdown = [by_id[j].slowdown if j in by_id else math.nan for j in ids]
    return {
        "id": [run.trace_ids.get(j, str(j)) for j in ids],
        "model": [by_id[j].model if j in by_id else "" for j in ids],
        "submit": [_r(t) for t in submit],
        "start": [_r(t) for t in start],
        "finish": [_r(t) for t in finish],
        "jct": [_r(f - s) for f, s in zip(finish, submit, strict=True)],
        "wait": [_r(b - s) for b, s in zip(start, submit, strict=True)],
        "slowdown": [None if x != x else round(x, 3) for x in slowdown],
        "changes": list(changes),
    }
