"""A seeded chaos run of ``dlsched k8s run``: controller processes against `ChaosApiServer`.

Two (or more) controllers run as real processes (``python -m dlsched k8s run --bind``) against
the fake API server on 127.0.0.1, so that they can be paused (SIGSTOP/SIGCONT) and stopped
(SIGTERM) as a cluster would. DLJobs are submitted over time; a runner plays the training jobs
(a job granted workers runs for a seeded 1-3 s, then reports Succeeded; its worker pods end,
its PS pods keep running until the controller deletes them). Faults are injected one after the
other: the leader paused past its lease, the leader stopped with SIGTERM (and a new controller
started), bursts of 500s, stalls, 409s and off-spec list replies, dropped watches, a job
finished at once, a node cordoned or deleted (and back), an invalid DLJob. Light 500s, 409s and
stalls run all along. `ChaosApiServer` checks the invariants; `run` returns its tally.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from dlsched.k8s.objects import PLACEMENT_ANNOTATION, parse_dljob
from tests.k8s.chaos_server import ChaosApiServer
from tests.k8s.k8s_helpers import NS, dljob, node

ROOT = Path(__file__).resolve().parents[2]
FAULTS = (
    "pause_leader",
    "term_leader",
    "errors_500",
    "stalls",
    "conflicts",
    "drop_watches",
    "bad_replies",
    "finish_now",
    "cordon",
    "delete_node",
    "invalid_job",
)
INVALID_JOBS: tuple[dict[str, Any], ...] = (
    {"metadata": {"annotations": {PLACEMENT_ANNOTATION: '{"workers": {"n0": 1e999}}'}}},
    {"metadata": {"annotations": ["not", "a", "map"]}},
    {"status": "Running"},
    {"spec": {"worker": {"gpu": 0, "cpu": 0, "memory": 0}, "maxWorkers": 2**62}},
    {"spec": {"totalWork": "lots"}},
)


def _kubeconfig(folder: Path, url: str) -> Path:
    path = folder / "kubeconfig"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": url}}],
        "users": [{"name": "fake", "user": {}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
        "current-context": "fake",
    }
    path.write_text(json.dumps(config))
    return path


class Chaos:
    """One run; see `run`."""

    def __init__(
        self, seed: int, folder: Path, lease_s: float, interval_s: float, fence: bool = True
    ) -> None:
        self.rng = random.Random(seed)
        self.server = ChaosApiServer(seed, grace_s=max(4.0, 2 * lease_s), fence=fence)
        self.folder = folder
        self.lease_s = lease_s
        self.interval_s = interval_s
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.started = 0
        self.crashes = 0
        self.exit_s: list[float] = []
        self.released = 0
        self.done = threading.Event()
        self.running_since: dict[str, float] = {}
        self.run_s: dict[str, float] = {}

    # ------------------------------------------------------------------ processes

    def start_controller(self) -> None:
        name = f"c{self.started}"
        self.started += 1
        log = (self.folder / f"{name}.log").open("wb")
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        command = [sys.executable, "-m", "dlsched", "k8s", "run", "--kubeconfig",
                   str(_kubeconfig(self.folder, self.server.url)), "-s", "drf", "--bind",
                   "--kinds", "dljob", "--interval", str(self.interval_s), "--lease-duration",
                   str(self.lease_s), "--identity", name, "--max-events", "10"]  # fmt: skip
        self.procs[name] = subprocess.Popen(command, stdout=log, stderr=log, env=env)

    def leader(self, wait_s: float = 0.0) -> str:
        """The controller holding the lease (waiting up to ``wait_s`` for one), or ``""``."""
        deadline = time.monotonic() + wait_s
        while True:
            holder = str((self.server.lease().get("spec") or {}).get("holderIdentity") or "")
            if holder in self.procs or time.monotonic() >= deadline:
                return holder if holder in self.procs else ""
            time.sleep(0.1)

    def terminate(self, name: str) -> None:
        """SIGTERM ``name``; note how long it took to exit and whether it gave the lease up."""
        held = self.leader() == name
        proc = self.procs.pop(name)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGCONT)
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self.exit_s.append(time.monotonic() - t0)
        if held:
            spec = self.server.lease().get("spec") or {}
            if spec.get("holderIdentity") != name:
                self.released += 1

    def watch_processes(self) -> None:
        for name, proc in list(self.procs.items()):
            if proc.poll() is not None:
                self.crashes += 1
                self.procs.pop(name)
                self.start_controller()

    # ------------------------------------------------------------------ the training jobs

    def play_jobs(self) -> None:
        """Jobs granted workers run ``run_s`` seconds, then report Succeeded."""
        while not self.done.wait(0.1):
            now = time.time()
            for obj in self.server.objects("dljobs", NS):
                name = obj["metadata"]["name"]
                try:
                    job = parse_dljob(obj)
                except Exception:
                    continue
                if job.done or job.workers == 0:
                    continue
                start = self.running_since.setdefault(name, now)
                if now - start >= self.run_s.get(name, 1.0):
                    self.finish(name)
            self.server.sample()
            self.watch_processes()

    def finish(self, name: str) -> None:
        with self.server._lock:
            obj = self.server.get("dljobs", NS, name)
            obj["status"] = {"phase": "Succeeded", "progress": obj["spec"]["totalWork"]}
            self.server.put("dljobs", NS, obj)
            for pod in self.server.objects("pods", NS):
                labels = pod["metadata"].get("labels") or {}
                if (
                    labels.get("dlsched.io/job") == name
                    and labels.get("dlsched.io/role") == "worker"
                ):
                    pod["status"] = {"phase": "Succeeded"}
                    self.server.put("pods", NS, pod)

    # ------------------------------------------------------------------ faults

    def fault(self, kind: str) -> None:
        s, r = self.server, self.server.rates
        s.tally.injected[kind] += 1
        s.tally.notes.append(f"{time.strftime('%H:%M:%S')} fault {kind} (leader {self.leader()!r})")
        if kind == "pause_leader" and (name := self.leader(wait_s=3 * self.lease_s)):
            self.procs[name].send_signal(signal.SIGSTOP)
            time.sleep(self.lease_s * 1.5)
            self.procs[name].send_signal(signal.SIGCONT)
        elif kind == "term_leader" and (name := self.leader(wait_s=3 * self.lease_s)):
            self.terminate(name)
            self.start_controller()
        elif kind in ("errors_500", "stalls", "conflicts", "bad_replies"):
            field = {"errors_500": "error_500", "stalls": "stall", "conflicts": "conflict_409",
                     "bad_replies": "bad_reply"}[kind]  # fmt: skip
            old = getattr(r, field)
            setattr(r, field, 0.3)
            time.sleep(2.0)
            setattr(r, field, old)
        elif kind == "drop_watches":
            s.drop_watches()
        elif kind == "finish_now":
            running = [j.name for j in _jobs(s) if j.workers and not j.done]
            for name in self.rng.sample(running, min(3, len(running))):
                self.finish(name)
        elif kind in ("cordon", "delete_node"):
            nodes = s.objects("nodes")
            obj = self.rng.choice(nodes)
            name = obj["metadata"]["name"]
            if kind == "cordon":
                obj["spec"] = {"unschedulable": True}
                s.put("nodes", "", obj)
            else:
                s.delete("nodes", "", name)
            threading.Timer(3.0, self._restore, args=(obj,)).start()
        elif kind == "invalid_job":
            bad = dljob(f"bad{s.tally.injected[kind]}", workers=1)
            for key, value in self.rng.choice(INVALID_JOBS).items():
                bad[key] = {**bad.get(key, {}), **value} if isinstance(value, dict) else value
            s.put("dljobs", NS, bad)

    def _restore(self, obj: dict[str, Any]) -> None:
        obj = {k: v for k, v in obj.items() if k != "metadata"} | {
            "metadata": {"name": obj["metadata"]["name"]}
        }
        obj["spec"] = {}
        self.server.put("nodes", "", obj)


def _jobs(server: ChaosApiServer) -> list[Any]:
    found = []
    for obj in server.objects("dljobs", NS):
        try:
            found.append(parse_dljob(obj))
        except Exception:
            continue
    return found


def run(seed: int, jobs: int, faults: int, **options: Any) -> dict[str, int]:
    """Run the chaos (`run_with_notes`) and return its figures."""
    return run_with_notes(seed, jobs, faults, **options)[0]


def run_with_notes(
    seed: int,
    jobs: int,
    faults: int,
    *,
    nodes: int = 50,
    controllers: int = 2,
    submit_s: float = 20.0,
    lease_s: float = 6.0,
    interval_s: float = 0.5,
    time_limit_s: float = 600.0,
    log_dir: Path | None = None,
    fence: bool = True,
) -> tuple[dict[str, int], list[str]]:
    """Run the chaos; its figures (all must be 0 but the counts of work done and of writes
    refused) and what the checks noted (the first 20 notes); ``fence=False``: the server does
    not refuse writes of a controller past its lease (it only counts them)."""
    t_start = time.monotonic()
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="dlsched-chaos-") as scratch:
        tmp = str(log_dir or scratch)
        chaos = Chaos(seed, Path(tmp), lease_s, interval_s, fence)
        server = chaos.server
        server.rates.error_500 = server.rates.conflict_409 = server.rates.stall = 0.01
        with server:
            for i in range(nodes):
                server.put("nodes", "", node(f"n{i:03d}", gpu=4, cpu=16, mem_gi=64))
            for i in range(nodes // 5):  # a workload dlsched does not manage
                server.put("pods", NS, _other_pod(f"other{i}", f"n{i * 5:03d}"))
            for _ in range(controllers):
                chaos.start_controller()
            player = threading.Thread(target=chaos.play_jobs, daemon=True)
            player.start()
            arrivals = sorted(rng.uniform(0, submit_s) for _ in range(jobs))
            kinds = [FAULTS[i % len(FAULTS)] for i in range(faults)]
            rng.shuffle(kinds)
            fault_at = sorted(rng.uniform(2.0, max(submit_s, faults * 2.5)) for _ in kinds)
            t0 = time.monotonic()
            names = []
            try:
                while arrivals or kinds:
                    now = time.monotonic() - t0
                    if arrivals and arrivals[0] <= now:
                        arrivals.pop(0)
                        name = f"j{len(names):04d}"
                        names.append(name)
                        chaos.run_s[name] = rng.uniform(1.0, 3.0)
                        server.put("dljobs", NS, _job(rng, name))
                    elif kinds and fault_at[0] <= now:
                        fault_at.pop(0)
                        chaos.fault(kinds.pop(0))
                    else:
                        time.sleep(0.05)
                server.rates.error_500 = server.rates.conflict_409 = server.rates.stall = 0.0
                deadline = t_start + time_limit_s
                while time.monotonic() < deadline:
                    done = {j.name for j in _jobs(server) if j.done}
                    if all(n in done for n in names):
                        break
                    time.sleep(0.2)
                time.sleep(server.grace_s + 1.0)  # what lingers now is counted
                server.sample(final=True)
            finally:
                chaos.done.set()
                player.join(timeout=5)
                for name in list(chaos.procs):
                    chaos.terminate(name)
            finished = {j.name for j in _jobs(server) if j.done}
            lease_spec = server.lease().get("spec") or {}
            tally = server.tally
            logs = "".join((Path(tmp) / f"c{i}.log").read_text() for i in range(chaos.started))
    figures = {
        "jobs": len(names),
        "jobs_finished": sum(n in finished for n in names),
        "jobs_lost": sum(n not in finished for n in names),
        "jobs_never_granted": sum(n not in server.granted for n in names),
        "max_writers": tally.max_writers,
        "writes_past_lease": tally.writes_past_lease,
        "writes_refused": tally.writes_refused,
        "duplicate_pods": tally.duplicate_pods,
        "orphan_pods": tally.orphan_pods,
        "orphan_linger_max_ms": round(1000 * tally.orphan_linger_max_s),
        "overcommit": tally.overcommit,
        "finished_jobs_regrown": tally.regrown,
        "faults_injected": sum(tally.injected[k] for k in FAULTS),
        "request_faults": sum(tally.injected[k] for k in ("500", "409", "stall", "bad_reply")),
        "controller_writes": tally.writes,
        "lease_terms_written": len(tally.writers_by_term),
        "lease_transitions": int(lease_spec.get("leaseTransitions") or 0),
        "controllers_started": chaos.started,
        "controller_crashes": chaos.crashes,
        "tracebacks": logs.count("Traceback"),
        "sigterm_exit_max_ms": round(1000 * max(chaos.exit_s, default=0.0)),
        "sigterm_exits_over_5s": sum(t > 5.0 for t in chaos.exit_s),
        "leases_released": chaos.released,
        "wall_s": round(time.monotonic() - t_start),
    }
    return figures, tally.notes[:20]


def _job(rng: random.Random, name: str) -> dict[str, Any]:
    arch = rng.choice(["ps", "allreduce"])
    workers = rng.randint(1, 3)
    return dljob(name, workers=workers, arch=arch, max_workers=workers + rng.randint(0, 2))


def _other_pod(name: str, node_name: str) -> dict[str, Any]:
    resources = {"requests": {"nvidia.com/gpu": "1", "cpu": "4", "memory": "8Gi"}}
    return {
        "metadata": {"name": name, "labels": {"app": "other"}},
        "spec": {"nodeName": node_name, "containers": [{"name": "x", "resources": resources}]},
        "status": {"phase": "Running"},
    }
