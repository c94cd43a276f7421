"""Chaos: the faults of issue 30 injected into `dlsched live run`'s loop, each reproduced and
each ending with every job finished, parameters equal to an uninterrupted run, no process left
and the right exit code. Seeded, time-bounded, 127.0.0.1 only; signals go only to the run's own
processes."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.live.chaos import (
    ATOL,
    Fault,
    alive,
    descendants,
    max_param_diff,
    run_with_faults,
    stream,
)
from dlsched.live.cluster import LiveCluster
from dlsched.live.stream import LiveJobRequest


def _check(cluster: LiveCluster, requests: list[LiveJobRequest], params: Path) -> None:
    """Every job finished with the parameters of an uninterrupted run; nothing left running."""
    finished = [lv.run.job_id for lv in cluster.jobs.values() if lv.run.finished]
    assert finished == [r.spec.job_id for r in requests], [e for e in cluster.events]
    assert not [lv.failed for lv in cluster.jobs.values() if lv.failed]
    diffs = max_param_diff(requests, params)
    assert max(diffs.values()) < ATOL, diffs
    assert cluster.pids_seen and not alive(cluster.pids_seen)
    assert cluster.cluster.used_total().gpu == 0


def _actions(cluster: LiveCluster, job_id: int = 0) -> list[str]:
    return [e.action for e in cluster.events if e.job_id == job_id]


def _members_replaced(cluster: LiveCluster) -> int:
    """PS plus workers brought back by ``replace`` events, read from each event's note ("1 PS
    and 1 workers alive of (2, 2)"): two deaths close together are one replace of both."""
    replaced = 0
    for event in cluster.events:
        if event.action == "replace":
            match = re.fullmatch(r"(\d+) PS and (\d+) workers alive of .*", event.error or "")
            assert match, event
            replaced += sum(event.after) - int(match[1]) - int(match[2])
    return replaced


def test_kill_the_only_worker_relaunches_from_the_last_snapshot(tmp_path: Path) -> None:
    """Was: 0 workers, never failed, 30 s resizes freezing the loop, rolled back to step 0."""
    requests = stream([(1, 1)])
    cluster, _ = run_with_faults(requests, [Fault(0, "worker", at_step=25)], tmp_path)
    _check(cluster, requests, tmp_path)
    relaunch = [e for e in cluster.events if e.action == "relaunch"]
    assert relaunch and relaunch[0].steps_redone <= 10 + 12, cluster.events


def test_kill_the_only_ps_relaunches_from_the_last_snapshot(tmp_path: Path) -> None:
    """Was: the job failed with no retry, missing from jobs.csv, exit 0."""
    requests = stream([(1, 1)])
    cluster, _ = run_with_faults(requests, [Fault(0, "ps", at_step=25)], tmp_path)
    _check(cluster, requests, tmp_path)
    assert "relaunch" in _actions(cluster)


def test_kill_one_of_several_is_replaced_and_redoes_at_most_a_snapshot(tmp_path: Path) -> None:
    """Was: one of two PS killed redid all 122 steps (no snapshots); a dead worker's core sat
    idle in the books for the rest of the job."""
    requests = stream([(2, 2)])
    faults = [Fault(0, "ps", at_step=25), Fault(0, "worker", at_step=45)]
    cluster, _ = run_with_faults(requests, faults, tmp_path)
    _check(cluster, requests, tmp_path)
    assert _members_replaced(cluster) >= 2, cluster.events
    redone = sum(e.steps_redone for e in cluster.events)
    assert redone <= 2 * (10 + 12), cluster.events


def test_kill_the_coordinator_restarts_it_without_freezing_the_loop(tmp_path: Path) -> None:
    """Was: the job failed after 60 s and the loop froze 60 s (the next job started late)."""
    requests = stream([(1, 1), (1, 1)], arrivals=[0.0, 2.0])
    cluster, _ = run_with_faults(requests, [Fault(0, "coordinator", at_step=15)], tmp_path)
    _check(cluster, requests, tmp_path)
    assert "restart_coordinator" in _actions(cluster)
    start_1 = next(e.t_s for e in cluster.events if e.job_id == 1 and e.action == "start")
    assert start_1 < 2.0 + 3.0


@pytest.mark.slow
def test_a_stopped_worker_is_replaced_and_not_charged(tmp_path: Path) -> None:
    """Was: SIGSTOP 20 s then SIGCONT: not replaced nor re-admitted, its core idle."""
    requests = stream([(1, 2)])
    fault = Fault(0, "worker", at_step=20, kind="stop", stop_s=4.0)
    cluster, _ = run_with_faults(requests, [fault], tmp_path)
    _check(cluster, requests, tmp_path)
    assert "replace" in _actions(cluster)
    assert not alive(fault.pids)  # replaced for good, not re-admitted


@pytest.mark.slow
def test_a_cpu_hog_beside_a_hot_scale_up_declares_nobody_dead(tmp_path: Path) -> None:
    """Was: with no fault, at load ~10, a worker and then the PS were declared dead during a
    hot scale-up (fixed 1 s timeout), 114 steps rolled back, then "no PS left"."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(4)]
    try:
        requests = stream([(1, 1), (1, 1)], arrivals=[0.0, 3.0], steps=120, heartbeat_timeout_s=1.0)
        cluster, _ = run_with_faults(requests, [], tmp_path, scheduler="drf")
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    _check(cluster, requests, tmp_path)
    assert any(e.action == "hot" for e in cluster.events)
    repairs = [e for e in cluster.events if e.action in ("replace", "relaunch", "rollback")]
    assert not repairs, repairs


def test_a_job_that_keeps_failing_is_a_failed_row_and_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was: a failed job missing from jobs.csv, an empty error column, 'finished: 2', exit 0."""
    import dlsched.live.cluster as cluster_module

    real_start = cluster_module.start_job

    def start_job(job):  # type: ignore[no-untyped-def]
        if job.job_id == "j1":
            raise RuntimeError("injected start failure")
        return real_start(job)

    monkeypatch.setattr(cluster_module, "start_job", start_job)
    args = ["live", "run", "-s", "fifo", "-n", "2", "--slot", "0.2", "--steps", "20"]
    args += ["--arrival-gap", "0.2", "--step-sleep", "0.01", "--models", "smooth"]
    args += ["--out", str(tmp_path), "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 1, res.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["finished"] == 1 and summary["failed"] == 1
    with (tmp_path / "jobs.csv").open() as fh:
        rows = {row["job_id"]: row for row in csv.DictReader(fh)}
    assert rows["0"]["status"] == "finished"
    assert rows["1"]["status"] == "failed" and "injected start failure" in rows["1"]["error"]
    with (tmp_path / "scaling_events.csv").open() as fh:
        failed = [r for r in csv.DictReader(fh) if r["action"] in ("failed", "job_failed")]
    assert failed and all(r["error"] for r in failed)
    assert not (tmp_path / "work").exists()


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "dlsched", "live", "run", *args]


@pytest.mark.slow
def test_kill_live_run_itself_then_resume_from_the_snapshots(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Was: no resume (a rerun started from scratch), the work dir and a pymp-* dir stayed."""
    from dlsched.live.run_log import ended_jobs, read_progress
    from dlsched.live.stream import make_stream

    out = tmp_path / "out"
    args = [
        "-s",
        "fifo",
        "-n",
        "3",
        "--slot",
        "0.3",
        "--steps",
        "100",
        "--arrival-gap",
        "1",
        "--step-sleep",
        "0.03",
        "--models",
        "smooth",
        "--snapshot-every",
        "10",
        "--seed",
        "4",
        "--out",
        str(out),
        "--json",
    ]
    requests = make_stream(
        3,
        seed=4,
        cores=2,
        steps=100,
        arrival_gap_s=1,
        step_sleep_s=0.03,
        models=("smooth",),
        snapshot_every=10,
    )
    short = Path(tempfile.mkdtemp(prefix="dlc-", dir="/tmp"))  # AF_UNIX paths are short
    request.addfinalizer(lambda: shutil.rmtree(short, ignore_errors=True))
    env = {**os.environ, "TMPDIR": str(short)}
    first = subprocess.Popen(
        _cli(*args), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and first.poll() is None:
            ended = ended_jobs(out)
            going = {j: n for j, n in read_progress(out / "work").items() if j not in ended}
            if ended and any(  # a job ended, another is half-way between two snapshots
                n % 10 >= 5 and n + 10 < requests[j].config.total_steps for j, n in going.items()
            ):
                break
            time.sleep(0.05)
        assert first.poll() is None, "the run ended before the kill"
        children = descendants(first.pid)
    finally:
        first.kill()
        first.wait(10)
    assert children
    deadline = time.monotonic() + 15  # members notice their owner is gone
    while alive(children) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(children)
    second = subprocess.run(
        _cli("--resume", str(out), "--json"), env=env, capture_output=True, text=True, timeout=120
    )
    assert second.returncode == 0, second.stderr[-2000:]
    summary = json.loads(second.stdout.strip().splitlines()[-1])
    assert summary["finished"] == 3 and summary["failed"] == 0
    with (out / "jobs.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    # at most what was done since the last snapshot (a lower bound: the members of the killed
    # run go on for a moment after their owner died, and may snapshot then)
    assert summary["steps_redone"] <= 10
    with (out / "scaling_events.csv").open() as fh:
        actions = [r["action"] for r in csv.DictReader(fh)]
    assert "resume" in actions  # jobs the killed run had started go on from their snapshots
    with (out / "scaling_events.csv").open() as fh:
        starts = [(r["job_id"], float(r["t_s"])) for r in csv.DictReader(fh)]
    first = {j: min(t for i, t in starts if i == j) for j, _ in starts}
    for row in rows:  # a job's first start is kept across the kill (its wait, its JCT)
        assert float(row["start_s"]) == pytest.approx(first[row["job_id"]], abs=0.2)
    assert sorted(int(r["job_id"]) for r in rows) == [0, 1, 2]
    diffs = max_param_diff(requests, out / "params")
    assert max(diffs.values()) < ATOL, diffs
    left = [p.name for p in short.iterdir()]
    assert left == [], left  # no dlsched-live-* nor pymp-* folder
    assert not (out / "work").exists()


def test_repairs_follow_what_the_status_shows() -> None:
    """A whole job needs nothing; dead members are replaced; a job with no PS or no worker
    left, or whose coordinator gave up, is relaunched from its snapshot; a settling round
    (a rollback) is waited for."""
    from dlsched.core import Allocation
    from dlsched.live.cluster_ops import repair_needed

    held = Allocation.of(workers=[(0, 2)], ps=[(0, 2)])

    def status(ps: int, workers: int, **extra: object) -> dict[str, object]:
        roster = {"ps": {str(i): "tcp://x" for i in range(ps)}, "workers": list(range(workers))}
        return {"roster": roster, "round": None, "failed": "", "finished": False, **extra}

    assert repair_needed(status(2, 2), held) is None
    assert repair_needed(status(2, 1), held) == ("replace", "2 PS and 1 workers alive of (2, 2)")
    for broken in (status(2, 0), status(0, 2), status(1, 2, failed="no PS left")):
        need = repair_needed(broken, held)
        assert need is not None and need[0] == "relaunch", broken
    assert repair_needed(status(1, 2, round={"kind": "rollback"}), held) is None
