"""A learned policy far outside its setting stops before the run with one line saying why
(issue 34, point 5), instead of crawling (DL2 on DeepRM's jobs: ~0.3 jobs/s) or stalling after
a thousand fruitless retries (DeepRM on kubeflow, pollux, philly)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import dlsched
from dlsched.cli import app
from dlsched.runner import CannotRun
from dlsched.schedulers.base import WrappingScheduler, cannot_run
from dlsched.schedulers.registry import make_scheduler
from dlsched.sim import SimulationStalled
from dlsched.workloads.registry import make_workload


def test_dl2_refuses_a_workload_without_elastic_jobs() -> None:
    with pytest.raises(CannotRun, match=r"^dl2 cannot run the deeprm workload: none of its"):
        dlsched.simulate("deeprm", "dl2", seed=1)
    assert cannot_run(make_scheduler("dl2"), make_workload("dl2", seed=1).jobs, ()) is None


@pytest.mark.parametrize("workload", ["kubeflow", "pollux", "dl2"])
def test_deeprm_refuses_jobs_its_image_cannot_show(workload: str) -> None:
    with pytest.raises(CannotRun, match=r"DeepRM's image shows 20 steps ahead and 20 units"):
        dlsched.simulate(workload, "deeprm")


def test_a_refusal_is_a_stall_for_callers_that_score_stalls() -> None:
    assert issubclass(CannotRun, SimulationStalled)


def test_wrappers_forward_the_refusal() -> None:
    wrapped = WrappingScheduler(make_scheduler("deeprm"))
    jobs = make_workload("kubeflow", seed=0).jobs
    assert "job 0 runs" in (cannot_run(wrapped, jobs, ()) or "")
    assert cannot_run(make_scheduler("fifo"), jobs, ()) is None  # heuristics run anything


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    load=st.floats(0.1, 2.0),
    servers=st.integers(1, 4),
    num_jobs=st.none() | st.integers(1, 300),
)
def test_deeprm_runs_every_deeprm_workload(
    seed: int, load: float, servers: int, num_jobs: int | None
) -> None:
    w = make_workload("deeprm", seed=seed, load=load, servers=servers, num_jobs=num_jobs)
    assert cannot_run(make_scheduler("deeprm"), w.jobs, w.servers) is None


def test_cli_says_why_in_one_line_and_exits_2() -> None:
    done = CliRunner().invoke(app, ["simulate", "-w", "kubeflow", "-s", "deeprm"])
    assert done.exit_code == 2
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: deeprm cannot run the kubeflow")


@pytest.mark.parametrize("scheduler", ["sched2", "sched2:paper"])
def test_sched2_refuses_models_it_cannot_profile(scheduler: str) -> None:
    with pytest.raises(CannotRun, match=r"job 0's model 'tfjob' is not one SCED²'s profiler"):
        dlsched.simulate("kubeflow", scheduler)
    jobs = make_workload("sched2", seed=1).jobs
    assert cannot_run(make_scheduler(scheduler), jobs, ()) is None


@pytest.mark.parametrize(
    ("scheduler", "workload", "why"),
    [
        ("dl2", "deeprm", "none of its"),
        ("offline-rl", "deeprm", "none of its"),
        ("dl2:paper", "deeprm", "none of its"),
        ("sched2", "kubeflow", "job 0's model 'tfjob'"),
        ("sched2:paper", "kubeflow", "job 0's model 'tfjob'"),
        ("deeprm", "kubeflow", "job 0 runs"),
        ("deeprm:paper", "philly:7f04ca", "job 31566 runs"),
        ("deeprm:1.3", "dl2", "job 0 runs"),
    ],
)
def test_refused_before_the_policy_loads(scheduler: str, workload: str, why: str) -> None:
    """The refusal is asked of the registry before the checkpoint (and PyTorch) loads."""
    import subprocess
    import sys

    probe = (
        "import sys, dlsched\nfrom dlsched.runner import CannotRun\n"
        f"try:\n    dlsched.simulate({workload!r}, {scheduler!r}, seed=1)\n"
        "except CannotRun as refused:\n    print(refused)\n"
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    name = scheduler.partition(":")[0]
    assert lines[0].startswith(f"{name} cannot run the {workload} workload: {why}"), done.stderr
    assert lines[-1] == "False"


@pytest.mark.parametrize(
    ("workload", "scheduler"),
    [("philly:7f04ca", "dl2"), ("philly:7f04ca", "deeprm"), ("pollux", "sched2")],
)
def test_the_cli_refuses_before_importing_pytorch(workload: str, scheduler: str) -> None:
    """The whole ``dlsched simulate`` process refuses without PyTorch (issue 36: ~3 s CPU of
    imports and checkpoint loading before; `benchmarks/outside_setting.py` times it) and
    without SciPy for Pollux's jobs (their interpolant is built when a job first runs)."""
    import subprocess
    import sys

    probe = (
        "import sys\nfrom dlsched.cli import main\n"
        f"sys.argv = ['dlsched', 'simulate', '-w', {workload!r}, '-s', {scheduler!r}]\n"
        "try:\n    main()\nexcept SystemExit as done:\n    print('exit', done.code)\n"
        "print([m for m in ('torch', 'scipy.spatial') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip().splitlines()[-2:] == ["exit 2", "[]"], done.stderr
    errors = done.stderr.strip().splitlines()
    assert errors[-1].startswith(f"error: {scheduler} cannot run the {workload}")
