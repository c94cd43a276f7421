"""``compare --workers N`` (issue 18): the same numbers, bit for bit, in the same order."""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
from typing import Any

import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.experiments.compare import run_grid, summarise
from dlsched.experiments.parallel import run_task
from dlsched.schedulers.registry import make_scheduler
from dlsched.sim import Result

runner = CliRunner()
SCHEDULERS = ["fifo", "drf", "srtf", "tetris", "optimus"]
OPTIONS: dict[str, Any] = {"num_jobs": 40}


def _numbers(results: list[Result]) -> list[tuple[Any, ...]]:
    """Every summary number of every run (wall time aside) and every record, in order."""
    rows = []
    for result in results:
        summary = {k: v for k, v in result.summary().items() if k != "wall_s"}
        rows.append((tuple(summary.items()), tuple(result.records)))
    return rows


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN (summaries hold NaN where a metric is undefined)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@pytest.fixture(scope="module")
def serial() -> list[Result]:
    return run_grid("dl2", SCHEDULERS, [1, 2, 3], **OPTIONS)


@pytest.mark.parametrize("start_method", ["fork", pytest.param("spawn", marks=pytest.mark.slow)])
def test_workers_give_the_serial_numbers_bit_for_bit(
    serial: list[Result], start_method: str
) -> None:
    parallel = run_grid(
        "dl2", SCHEDULERS, [1, 2, 3], workers=2, start_method=start_method, **OPTIONS
    )
    assert [(r.scheduler, r.seed) for r in parallel] == [(r.scheduler, r.seed) for r in serial]
    assert _same(_numbers(parallel), _numbers(serial))
    for a, b in zip(summarise(parallel), summarise(serial), strict=True):
        assert a.scheduler == b.scheduler and a.runs == b.runs
        assert _same(tuple(a.mean.items()), tuple(b.mean.items()))
        assert _same(tuple(a.ci95.items()), tuple(b.ci95.items()))


def test_on_run_sees_every_run_once() -> None:
    seen: list[tuple[str, int]] = []
    results = run_grid(
        "deeprm",
        ["sjf", "fifo"],
        [1, 2],
        workers=2,
        on_run=lambda r: seen.append((r.scheduler, r.seed)),
        num_jobs=10,
    )
    assert sorted(seen) == sorted((r.scheduler, r.seed) for r in results)
    assert [(r.scheduler, r.seed) for r in results] == [
        ("sjf", 1),
        ("fifo", 1),
        ("sjf", 2),
        ("fifo", 2),
    ]


def test_a_scheduler_object_forces_one_worker(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="dlsched.experiments.compare"):
        results = run_grid("deeprm", ["fifo", make_scheduler("sjf")], [1], workers=4, num_jobs=10)
    assert [r.scheduler for r in results] == ["fifo", "sjf"]
    (record,) = caplog.records
    assert "'sjf'" in record.getMessage() and "1 worker instead of 4" in record.getMessage()


def test_a_failing_run_fails_the_sweep() -> None:
    with pytest.raises(ValueError, match="unknown scheduler 'bogus-scheduler'"):
        run_grid("deeprm", ["fifo", "bogus-scheduler"], [1, 2], workers=2, num_jobs=5)
    with pytest.raises(ValueError, match="workers"):
        run_grid("deeprm", ["fifo"], [1], workers=0)


def test_cli_workers_json_equals_one_worker() -> None:
    args = [
        "compare",
        "-w",
        "deeprm",
        "-o",
        "num_jobs=20",
        "--schedulers",
        "sjf,tetris",
        "--seeds",
        "1-3",
        "--json",
    ]
    one = runner.invoke(app, args)
    two = runner.invoke(app, [*args, "--workers", "2"])
    assert one.exit_code == two.exit_code == 0, two.output
    drop = lambda runs: [{k: v for k, v in r.items() if k != "wall_s"} for r in runs]  # noqa: E731
    assert drop(json.loads(two.stdout)) == drop(json.loads(one.stdout))
    bad = runner.invoke(app, [*args, "--workers", "0"])
    assert bad.exit_code == 2 and "--workers" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_dask_without_the_extra_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed
    with pytest.raises(ValueError, match=r"--dask needs Dask distributed: pip install"):
        run_grid("deeprm", ["fifo"], [1, 2], dask="local", num_jobs=5)
    args = [
        "compare",
        "-w",
        "deeprm",
        "-o",
        "num_jobs=5",
        "--schedulers",
        "fifo",
        "--dask",
        "local",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "'dlsched[dask]'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_forked_workers_inherit_the_policy_modules() -> None:
    """With fork, the parent imports what the runs need before the workers start (so that each
    worker does not import it again); the parent itself runs nothing."""
    probe = (
        "import sys\nfrom dlsched.experiments.parallel import RunTask, run_in_processes\n"
        "tasks = [RunTask('deeprm', 'sjf', s, {'num_jobs': 5}) for s in (1, 2)]\n"
        "run_in_processes(tasks, 2, start_method='fork')\n"
        "print('dlsched.schedulers.sjf' in sys.modules, 'dlsched.workloads.deeprm' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "True True", result.stderr


def _dies_on_seed_2(task: Any) -> Result:
    """A run that kills its worker process (as a crash in a C extension would)."""
    import os

    if task.seed == 2:
        os._exit(3)
    return run_task(task)


def test_a_worker_that_dies_fails_the_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    from dlsched.experiments import parallel

    tasks = [parallel.RunTask("deeprm", "fifo", seed, {"num_jobs": 5}) for seed in (1, 2, 3)]
    monkeypatch.setattr(parallel, "run_task", _dies_on_seed_2)  # the forked workers inherit it
    with pytest.raises(RuntimeError, match=r"died without answering \(exit codes \[3\]\)"):
        parallel.run_in_processes(tasks, 2, start_method="fork")
