"""The event log (`dlsched.sim.event_log`): what the executor and simulator record, that
recording changes no result, and that the written table reads back."""

from __future__ import annotations

import csv
import pickle
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.sim.event_log import EVENT_COLUMNS, KINDS, write_event_rows


def _records(result: dlsched.sim.Result) -> list[tuple[float, ...]]:
    return [(r.job_id, r.start_s, r.finish_s, r.rescales) for r in result.records]


def replay(log: dlsched.sim.event_log.EventLog) -> dict[int, list[str]]:
    """Each job's kinds in order, checking on the way that no server ever holds more GPUs than
    it has and that a job holds something exactly between a start and a preempt or finish."""
    capacity: dict[int, int] = {}
    used: dict[int, int] = defaultdict(int)
    holding: dict[int, dict[int, int]] = {}
    kinds: dict[int, list[str]] = defaultdict(list)
    for t, job, code, gpus, servers in zip(
        log.time_s, log.job_id, log.kind, log.gpus, log.servers, strict=True
    ):
        kind = KINDS[code]
        if kind == "server":
            capacity[int(servers)] = gpus
            continue
        kinds[job].append(kind)
        for server, g in holding.pop(job, {}).items():
            used[server] -= g
        if kind in ("start", "rescale", "migrate"):
            assert kinds[job][0] == "submit"
            pairs = {int(s): int(g) for s, g in (p.split(":") for p in servers.split())}
            assert sum(pairs.values()) == gpus
            holding[job] = pairs
            for server, g in pairs.items():
                used[server] += g
                assert used[server] <= capacity[server], (t, server)
        else:
            assert servers == "" and gpus == 0
    assert not holding  # every job let go of everything at its finish
    return kinds


@pytest.mark.parametrize("scheduler", ["fifo", "drf", "tiresias", "optimus"])
def test_recording_changes_nothing_and_replays(scheduler: str) -> None:
    plain = dlsched.simulate("dl2", scheduler, 3, num_jobs=40)
    logged = dlsched.simulate("dl2", scheduler, 3, num_jobs=40, record_events=True)
    assert plain.event_log is None
    assert _records(plain) == _records(logged)
    log = logged.event_log
    assert log is not None
    kinds = replay(log)
    assert len(kinds) == 40
    by_id = {r.job_id: r for r in logged.records}
    for job, seq in kinds.items():
        assert seq[0] == "submit" and seq[-1] == "finish" and seq[1] == "start"
        changes = sum(k in ("rescale", "migrate") for k in seq)
        resumes = seq.count("start") - 1
        assert by_id[job].rescales == seq.count("rescale") + seq.count("migrate"), (job, seq)
        assert resumes == seq.count("preempt")
        assert changes >= 0
    times = log.time_s
    assert times == sorted(times)


def test_repacking_logs_migrations() -> None:
    options = dict(num_jobs=60, load=2.0, repack=True)
    logged = dlsched.simulate("dl2", "drf", 1, record_events=True, **options)
    assert _records(logged) == _records(dlsched.simulate("dl2", "drf", 1, **options))
    assert logged.event_log is not None and logged.params.get("repack")
    replay(logged.event_log)
    assert KINDS.index("migrate") in logged.event_log.kind


def test_preemptive_run_logs_preemptions() -> None:
    result = dlsched.simulate("dl2", "tiresias", 1, num_jobs=60, load=2.0, record_events=True)
    assert result.event_log is not None
    assert KINDS.index("preempt") in result.event_log.kind


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 25))
def test_replay_holds_for_any_seed(seed: int, jobs: int) -> None:
    result = dlsched.simulate("dl2", "drf", seed, num_jobs=jobs, record_events=True)
    assert result.event_log is not None
    assert len(replay(result.event_log)) == jobs


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_written_table_reads_back(tmp_path: Path, suffix: str) -> None:
    result = dlsched.simulate("dl2", "drf", 2, num_jobs=10, record_events=True)
    log = pickle.loads(pickle.dumps(result.event_log))  # as a result from a worker process
    rows = log.rows(result.scheduler, result.seed, {3: "job-three"})
    path = tmp_path / f"events{suffix}"
    write_event_rows(rows, path)
    if suffix == ".csv":
        with path.open(newline="") as f:
            back = list(csv.DictReader(f))
        assert list(back[0]) == list(EVENT_COLUMNS)
        assert [float(r["time_s"]) for r in back] == [r["time_s"] for r in rows]
    else:
        back = pq.read_table(path).to_pylist()
        assert back == rows
    assert {r["trace_id"] for r in back if r["job_id"] in (3, "3")} == {"job-three"}
