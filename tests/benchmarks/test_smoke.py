"""Every script in ``benchmarks/`` runs on this tree at its smallest size (issue 34): each is run
as a whole process, as its docstring says, with options that make it as small as it goes, and
must exit 0. The figures it prints are not checked (they are the benchmark's, recorded in
``benchmarks/RESULTS.md``); a benchmark that needs a peer's checkout or a GPU runs only where
that is present. A new benchmark script must get a row here (the test says so)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
PEERS = ROOT.parent.parent / "shared" / "peers"  # /work/shared/peers beside the worktrees
TIMEOUT_S = 600

FAKE_GAVEL_DRIVER = (
    "import sys\nprint('Total duration: 5000.0 seconds')\n"
    "print('Average job completion time: 1000.0 seconds', sys.argv[1:])\n"
)
"""Stands in for Gavel's ``simulate_scheduler_with_trace.py`` (its own venv, minutes a run)."""
FAKE_POLLUX_PEER = 'import sys\nprint("Average JCT: 1000.0", sys.argv[1:])\n'
"""Stands in for Pollux's ``simulator.py``: the peer needs its own venv and minutes per run."""

SMOKE: dict[str, str] = {
    "chaos.py": "--live-jobs 1 --live-faults 1 --steps 30 --skip-k8s",
    "chaos_k8s.py": "--jobs 10 --faults 1",
    "core_ceiling.py": "-w deeprm --schedulers fifo --processes 1,2 --repeat 1",
    "compare_workers.py": "-w deeprm --schedulers fifo --seeds 1-2 --per-task --ceiling",
    "deeprm_authors_setting.py": "--seeds 9001-9001 --loads 1.9",
    "deeprm_completion_diagnose.py": "--part all --seeds 800000-800001 --samples 1 --groups 2 "
    "--jobsets 1 --gammas 1 deeprm:paper",
    "deeprm_gradient_agreement.py": "--groups 2 --jobsets 1 --load 1.1 deeprm:paper",
    "deeprm_paper_diagnose.py": "--iterations 1 --jobsets 2 --episodes 2 --out {tmp}/out",
    "deeprm_paired_samples.py": "--seeds 800000-800001 --samples 2 --load 1.1 deeprm:paper "
    "deeprm:paper@1.3",
    "deeprm_paper_iteration.py": "--iterations 2 --jobsets 2",
    "deeprm_settings.py": "--seeds 9001-9002 --loads 1.3 --settings paper",
    "deeprm_slots.py": "--seeds 9001-9001 --loads 1.3 --policies deeprm:paper,deeprm:paper@1.3",
    "deeprm_slot_limit.py": "--seeds 9001-9001 --loads 1.9 --samples 2",
    "deeprm_train.py": "--loads 0.7 --workers 1 --iterations 1 --jobsets 2 --episodes 2 "
    "--states 50",
    "dl2_advantage_by_action.py": "--critic-updates 1",
    "dl2_episode_pg.py": "--out {tmp}/pg --traces 2 --copies 2 --jobs 8 --updates 1",
    "dl2_gradient_snr.py": "--groups 3 --group-size 64 --critic-updates 1",
    "dl2_decisions.py": "--runs 101/2/0.5 --out {tmp}/out.json",
    "dl2_paper_curves.py": "A=benchmarks/dl2_paper_runs/fourth_session/A.csv --out {tmp}/c.png",
    "dl2_paper_variants.py": "sl --minutes 0 --out {tmp}/out",
    "dl2_signal.py": "--traces 1 --jobs 12 --samples 1 --slots 2 --out {tmp}/s.json",
    "dl2_paired_snr.py": "--groups 3 --traces 1 --copies 2 --window 2 --horizon 3 --max-burn 5 "
    "--jct-gamma 1 --also-gammas 0.99 --out {tmp}/p.json",
    "dl2_reward_alignment.py": "--traces 1 --jobs 12 --policies drf optimus --out {tmp}/a.json",
    "dl2_rloo_train.py": "--out {tmp}/rloo --groups-per-update 1 --traces 1 --copies 2 "
    "--window 2 --horizon 3 --max-burn 5 --minutes 0.05 --reward jct --gamma 1",
    "dl2_policy.py": "--seeds 101-101 --servers 2 --skip-timing",
    "dl2_stalls.py": "--seeds 0-0 --jobs 4",
    "gavel_side_by_side.py": "",  # the peer faked: see test_gavel_side_by_side
    "hetero_learned.py": "--rates 8 --seeds 20001 --num-jobs 6 --out {tmp}/out",
    "fifo_core_equal.py": "--workload philly:6214e9 --max-jobs 300",
    "dl2_collector_before.py": "",  # a module: env_steps.py and tests/rl/test_dl2_collector.py
    "env_steps.py": "--seconds 0.2 --deeprm-batch 4 --dl2-batch 2 --sched2-envs 2",
    "k8s_reconcile.py": "--jobs 10 --nodes 5",
    "live_attacks.py": "--jobs 1 --attack-s 0.2 --steps 20",
    "live_scaling.py": "--quick --max-ps 1 --repeats 1 --no-cold",
    "locality_share.py": "--workloads sched2 --schedulers fifo --seeds 1",
    "outside_setting.py": "--schedulers deeprm --workloads pollux --timeout-s 120",
    "paired_eval.py": "dlsched/DeepRM-v0 --seeds 1-2 --baselines sjf --rule first "
    "-o horizon_steps=5 --metric avg_slowdown",
    "peer_side_by_side.py": "",  # needs Blox's checkout and venv: see test_peer_side_by_side
    "pollux_speed.py": "--src here={src} --repeat 1 --num-jobs 5",
    "pollux_side_by_side.py": "",  # the peer faked: see test_pollux_side_by_side
    "records_fingerprint.py": "--workers 1 --match deeprm --schedulers fifo --out {tmp}/fp.json",
    "report_size.py": "--repeat 1 --cases dl2-drf-200 --out-dir {tmp}/out",  # headless Chromium
    "sched2_dqn_diagnose.py": "--traces 1 --jobs 60 --no-local-holds",
    "sched2_makespan_diagnose.py": "--traces 1 --jobs 60 --swap late",
    "sched2_hold_advantage.py": "--jobs 100 --holds 1 --picks 1",
    "sched2_paper.py": "--traces 1 --no-lookahead",
    "sched2_policy.py": "--traces 1 --loads 1.8",
    "sim_speed.py": "--repeat 1",
    "startup_time.py": "--src here={src} --repeat 1 --trace {tmp}/trace.csv",
    "sweep_cpu.py": "-w deeprm --schedulers fifo --seeds 1-2 --repeat 1 --csv {tmp}/runs.csv "
    "--variants pool,given,pinned,nogc,plain,fewer,fresh,recycle2,pool1,trim "
    "--probe 1",
    "sweep_overhead.py": "-w deeprm --schedulers fifo --seeds 1-2",
    "trace_scale.py": "--workloads philly:6214e9 --schedulers fifo --limit 30",
}
"""Script → the options that make it smallest (``{tmp}``: a scratch folder, ``{src}``: this
tree's ``src``)."""
NEEDS_MODULE = {"paired_eval.py": "sb3_contrib", "report_size.py": "selenium"}  # optional extras


def _run(args: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def _ok(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, (
        f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )


def test_every_benchmark_script_has_a_smoke_row() -> None:
    scripts = {p.name for p in BENCHMARKS.glob("*.py")}
    assert scripts == set(SMOKE), f"add a row to SMOKE for {sorted(scripts ^ set(SMOKE))}"


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(s for s, args in SMOKE.items() if args))
def test_benchmark_runs_at_its_smallest_size(script: str, tmp_path: Path) -> None:
    if script in NEEDS_MODULE:
        pytest.importorskip(NEEDS_MODULE[script], reason=f"{script} needs an optional extra")
    _small_trace(tmp_path / "trace.csv")
    args = SMOKE[script].format(tmp=tmp_path, src=ROOT / "src").split()
    _ok(_run([str(BENCHMARKS / script), *args]))


def _small_trace(path: Path) -> Path:
    """A 20-job trace CSV in the ``trace:`` format."""
    rows = ["job_id,submit_time,num_gpus,duration"]
    rows += [f"{i},{i * 60},{1 + i % 4},{600 + 30 * i}" for i in range(20)]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.slow
def test_pollux_side_by_side(tmp_path: Path) -> None:
    peer = tmp_path / "peer"
    peer.mkdir()
    (peer / "simulator.py").write_text(FAKE_POLLUX_PEER)
    script = str(BENCHMARKS / "pollux_side_by_side.py")
    done = _run([script, str(peer), "--peer-python", sys.executable, "--policies", "optimus"])
    _ok(done)
    assert "optimus | " in done.stdout and "x / " in done.stdout


@pytest.mark.slow
@pytest.mark.skipif(
    not (PEERS / "blox").is_dir()
    or shutil.which("python", path="/work/peer-venvs/blox/bin") is None,
    reason="needs Blox's checkout and its venv (/work/peer-venvs/blox)",
)
def test_peer_side_by_side(tmp_path: Path) -> None:
    script = str(BENCHMARKS / "peer_side_by_side.py")
    args = ["--blox", str(PEERS / "blox"), "--blox-run", str(PEERS / "blox-run")]
    args += ["--blox-python", "/work/peer-venvs/blox/bin/python", "--jobs", "20"]
    done = _run([script, *args, "--policies", "fifo", "--blox-rounds", "--out", str(tmp_path)])
    _ok(done)
    assert "dlsched-rounds" in done.stdout.splitlines()[-1]


@pytest.mark.slow
def test_gavel_side_by_side(tmp_path: Path) -> None:
    scheduler = tmp_path / "peer" / "scheduler"
    (scheduler / "scripts" / "drivers").mkdir(parents=True)
    (scheduler / "runtime" / "protobuf").mkdir(parents=True)
    (scheduler / "scheduler.py").write_text("")
    (scheduler / "scripts" / "drivers" / "simulate_scheduler_with_trace.py").write_text(
        FAKE_GAVEL_DRIVER
    )
    script = str(BENCHMARKS / "gavel_side_by_side.py")
    args = ["--gavel-python", sys.executable, "--jobs", "6", "--cluster", "4:4:4"]
    done = _run([script, str(tmp_path / "peer"), *args, "--policies", "gavel-las-het"])
    _ok(done)
    assert "gavel-las-het" in done.stdout and "x" in done.stdout.splitlines()[-1]
    source = str(Path(__file__).resolve().parents[2] / "src")  # as an older copy would be
    done = _run(
        [script, str(tmp_path / "peer"), *args, "--policies", "gavel-las", "--before", source]
    )
    _ok(done)
    assert done.stdout.splitlines()[-1].startswith("gavel-las (before)")
    stored = ["--policies", "gavel-las", "--gavel-results", str(tmp_path / "gavel.json")]
    first = _run([script, str(tmp_path / "peer"), *args, *stored])
    again = _run([script, str(tmp_path / "peer"), *args, *stored])  # Gavel's figures reused
    _ok(first)
    _ok(again)
    assert "gavel cached" not in first.stdout and "gavel cached" in again.stdout
    assert first.stdout.splitlines()[-1].split()[1:3] == again.stdout.splitlines()[-2].split()[1:3]
