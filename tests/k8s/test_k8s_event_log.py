"""The controller writes the same event log as the simulator and the live runtime
(`dlsched.k8s.event_record`): servers, submissions, the executor's changes and finishes, with
the jobs' namespace/name as trace IDs; `k8s run --once --events-out` writes it."""

from __future__ import annotations

import csv
from pathlib import Path

from kubernetes import client

from dlsched.k8s.event_record import ControllerLog
from dlsched.report.data import RunInput, run_data
from dlsched.sim.event_log import KINDS
from tests.k8s.apiserver import FakeApiServer
from tests.k8s.k8s_helpers import NS, controller, dljob, finish, node
from tests.k8s.test_k8s_bad_input import _config_for, _kubeconfig, _run


def _cluster(server: FakeApiServer) -> None:
    for i in range(2):
        server.put("nodes", "", node(f"n{i}"))
    for i in range(3):
        server.put("dljobs", NS, dljob(f"j{i}", created=f"2026-01-01T00:00:0{i}Z", workers=3))


def test_rounds_are_logged_and_draw(server: FakeApiServer, api_client: client.ApiClient) -> None:
    _cluster(server)  # 8 GPUs: j0 and j1 start, j2 waits until j0 finishes
    ctl = controller(api_client, "drf")
    ctl.event_log = recorder = ControllerLog(ctl.clock)
    ctl.reconcile()
    finish(server, "j0")
    ctl.reconcile()
    log = recorder.log
    kinds = [KINDS[k] for k in log.kind]
    assert kinds[:2] == ["server", "server"] and log.gpus[:2] == [4, 4]
    by_job: dict[str, list[str]] = {}
    for job_id, kind in zip(log.job_id, kinds, strict=True):
        if job_id >= 0:
            by_job.setdefault(recorder.trace_ids[job_id], []).append(kind)
    assert by_job == {
        f"{NS}/j0": ["submit", "start", "finish"],
        f"{NS}/j1": ["submit", "start"],
        f"{NS}/j2": ["submit", "start"],
    }
    data = run_data(RunInput("k8s", "drf", 0, log, recorder.trace_ids))
    assert len(data["bars"]["job"]) == 3 and sum(data["segs"]["n"]) == sum(data["bars"]["gpus"])


def test_once_writes_the_events_file(server: FakeApiServer, tmp_path: Path) -> None:
    _cluster(server)
    out = tmp_path / "events.csv"
    args = ["k8s", "run", "--once", "-s", "fifo", "--namespace", NS, "--events-out", str(out)]
    done = _run([*args, "--kubeconfig", _kubeconfig(tmp_path, _config_for(server.url))])
    assert done.returncode == 0, done.stderr
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["kind"] for r in rows].count("start") == 2
    assert {r["trace_id"] for r in rows if r["kind"] == "submit"} == {
        f"{NS}/j{i}" for i in range(3)
    }


def test_run_options_record_serve_and_write(
    server: FakeApiServer, api_client: client.ApiClient, tmp_path: Path
) -> None:
    """``--events-out`` and ``--dashboard``: the rounds are recorded, a dashboard serves them
    (on a free port of 127.0.0.1) and the log is written on the way out."""
    from dlsched.commands.k8s import ControllerOptions, _event_outputs

    _cluster(server)
    ctl = controller(api_client, "fifo")
    out = tmp_path / "events.parquet"
    on_exit = _event_outputs(ctl, ControllerOptions(events_out=out, dashboard="127.0.0.1:0"))
    assert isinstance(ctl.event_log, ControllerLog)
    ctl.reconcile()
    on_exit()
    import pyarrow.parquet as pq

    kinds = pq.read_table(out).column("kind").to_pylist()
    assert kinds.count("server") == 2 and kinds.count("start") == 2
