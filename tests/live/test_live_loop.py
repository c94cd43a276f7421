"""The live scheduling loop: real jobs driven by registered schedulers, cleaned up afterwards."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.core import ClusterView, Decision
from dlsched.live.cluster import LiveCluster
from dlsched.live.online import OnlineLearning
from dlsched.live.snapshot import LiveSnapshot
from dlsched.live.stream import LiveJobRequest, make_stream
from dlsched.rl.checkpoint import read_card
from dlsched.schedulers.base import BaseScheduler
from dlsched.schedulers.registry import make_scheduler, schedulers
from dlsched.sim.jobs_table import write_jobs


def _stream(arrivals: list[float], steps: int = 60) -> list[LiveJobRequest]:
    """Jobs of the ``smooth`` model arriving at ``arrivals`` (seconds), ``steps`` steps each,
    throttled to at most 50 steps/s so that their wall time does not depend on the machine."""
    base = make_stream(len(arrivals), seed=1, cores=2, steps=steps, step_sleep_s=0.02)
    out = []
    for req, t in zip(base, arrivals, strict=True):
        cfg = dataclasses.replace(req.config, model="smooth", total_steps=steps)
        spec = dataclasses.replace(req.spec, submit_time_s=t, model="smooth")
        out.append(LiveJobRequest(spec, cfg))
    return out


def _assert_all_gone(cluster: LiveCluster) -> None:
    assert cluster.pids_seen, "the loop launched no process"
    assert cluster.alive_pids() == []
    for pid in cluster.pids_seen:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_drf_loop_finishes_every_job_with_hot_scaling(tmp_path: Path) -> None:
    cluster = LiveCluster(
        _stream([0.0, 0.3]), make_scheduler("drf"), slot_s=0.4, cores=2, horizon_s=40
    )
    result = cluster.run()
    assert [r.job_id for r in result.records] == [0, 1]
    for rec in result.records:
        assert rec.submit_s <= rec.start_s < rec.finish_s
    # job 0 ran alone on both cores, then DRF shrank it by hot scaling when job 1 arrived
    first = [e for e in cluster.events if e.job_id == 0]
    assert first[0].action == "start" and first[0].after == (2, 2)
    assert any(e.action == "hot" and e.after == (1, 1) for e in first)
    assert not [e for e in cluster.events if e.action == "failed"]
    assert cluster.cluster.used_total().gpu == 0
    summary = result.summary()
    assert summary["finished"] == 2 and summary["avg_jct_s"] > 0
    write_jobs([result], tmp_path / "jobs.csv")
    assert len((tmp_path / "jobs.csv").read_text().splitlines()) == 3
    _assert_all_gone(cluster)


class NewestFirst(BaseScheduler):
    """Preemptive test policy: the most recent arrival gets one worker and one PS, alone."""

    name = "newest-first"
    preemptive: ClassVar[bool] = True

    def decide(self, view: ClusterView) -> Decision:
        newest = max(view.jobs(), key=lambda r: (r.spec.submit_time_s, r.job_id))
        return Decision.from_counts({newest.job_id: (1, 1)})


def test_preempted_job_is_suspended_and_resumed() -> None:
    cluster = LiveCluster(_stream([0.0, 0.3], steps=50), NewestFirst(), slot_s=0.3, horizon_s=40)
    result = cluster.run()
    assert len(result.records) == 2
    actions = [(e.job_id, e.action) for e in cluster.events]
    assert (0, "suspend") in actions and (0, "resume") in actions
    # actions run without blocking the loop: job 1 may start beside job 0 while job 0 is still
    # starting (a busy job's resize waits for the next slot); the preemption follows
    assert (
        actions.index((0, "start")) < actions.index((0, "suspend")) < actions.index((0, "resume"))
    )
    _assert_all_gone(cluster)


def test_ctrl_c_stops_every_process() -> None:
    def interrupt(snap: LiveSnapshot) -> None:
        if snap.processes and any(row.state == "running" for row in snap.jobs):
            raise KeyboardInterrupt

    cluster = LiveCluster(_stream([0.0]), make_scheduler("fifo"), slot_s=0.2, on_slot=interrupt)
    with pytest.raises(KeyboardInterrupt):
        cluster.run()
    _assert_all_gone(cluster)


def test_cli_live_run_writes_simulator_outputs(tmp_path: Path) -> None:
    args = ["live", "run", "-s", "srtf", "-n", "2", "--slot", "0.3", "--steps", "20"]
    args += ["--arrival-gap", "0.3", "--step-sleep", "0.01", "--models", "smooth"]
    args += ["--out", str(tmp_path), "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["workload"] == "live" and summary["scheduler"] == "srtf"
    assert summary["finished"] == 2
    assert len((tmp_path / "jobs.csv").read_text().splitlines()) == 3
    assert json.loads((tmp_path / "summary.json").read_text())["finished"] == 2
    assert (tmp_path / "scaling_events.csv").read_text().startswith("t_s,job_id,action")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-s", "optimus-oracle"], "oracle"),
        (["-s", "drf", "--learn"], "--learn needs --scheduler dl2"),
        (["-s", "drf", "--models", "resnet"], "--models"),
        (["-s", "nope"], "unknown scheduler"),
    ],
)
def test_cli_refuses_bad_settings_in_one_line(args: list[str], message: str) -> None:
    res = CliRunner().invoke(app, ["live", "run", "-n", "1", *args])
    assert res.exit_code == 2
    assert message in res.output and "Traceback" not in res.output


def test_stream_is_seeded_and_within_the_machine() -> None:
    a = make_stream(6, seed=3, cores=3, steps=100)
    b = make_stream(6, seed=3, cores=3, steps=100)
    assert a == b
    assert [r.spec.submit_time_s for r in a] == sorted(r.spec.submit_time_s for r in a)
    for r in a:
        assert 1 <= r.spec.num_workers <= r.spec.max_workers <= 3
        assert 50 <= r.config.total_steps <= 150
        assert r.spec.total_work == pytest.approx(
            r.config.total_steps * r.config.total_batch / r.config.dataset_size
        )
    with pytest.raises(ValueError):
        make_stream(0)


def test_dl2_drives_live_jobs() -> None:
    """DL2's policy drives the same loop as any scheduler (once issue 4 registers it)."""
    if "dl2" not in schedulers():
        pytest.skip("no dl2 scheduler registered yet")
    cluster = LiveCluster(_stream([0.0, 0.3], steps=20), make_scheduler("dl2"), slot_s=0.5)
    result = cluster.run()
    assert len(result.records) == 2
    assert {e.job_id for e in cluster.events if e.action == "start"} == {0, 1}
    assert not [e for e in cluster.events if e.action == "failed"]
    _assert_all_gone(cluster)


def test_learn_flag_continues_dl2_online_and_saves_a_loadable_policy(tmp_path: Path) -> None:
    """``--learn``: DL2 learns from the live slots and writes a policy ``dl2:PATH`` runs."""
    args = ["live", "run", "-s", "dl2", "--learn", "-n", "1", "--slot", "0.2", "--steps", "20"]
    args += ["--step-sleep", "0.01", "--models", "smooth", "--out", str(tmp_path), "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["finished"] == 1
    written = Path(summary["policy"])
    assert written.is_file() and written.parent == tmp_path / "policy_online"
    card = read_card(written)
    assert card.steps["online_slots"] >= 2 and card.steps["online_updates"] >= 1
    assert not isinstance(make_scheduler("dl2"), OnlineLearning)  # plain dl2 stays greedy
    loaded = make_scheduler(f"dl2:{written.parent}")
    shipped = make_scheduler("dl2")
    assert loaded.name == "dl2"
    assert any(  # the update changed the shipped weights
        not np.array_equal(a, b) for a, b in zip(_weights(loaded), _weights(shipped), strict=True)
    )


def _weights(scheduler: object) -> list[np.ndarray]:
    net = scheduler.net  # type: ignore[attr-defined]
    return [net._wflat]  # the NumPy copy's weights, packed
