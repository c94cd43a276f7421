"""``compare --dask`` (issues 18, 31): a Dask cluster of several worker processes gives the numbers
of one local process, in order."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.experiments.compare import run_grid
from dlsched.sim import Result

distributed = pytest.importorskip("distributed")
runner = CliRunner()
SCHEDULERS = ["fifo", "drf", "optimus"]


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    """A cluster of two single-threaded worker processes listening on 127.0.0.1 (as
    ``--dask local`` starts); closed after the tests."""
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
    )
    try:
        assert len(cluster.workers) == 2
        yield cluster.scheduler_address
    finally:
        cluster.close()


def _numbers(results: list[Result]) -> list[Any]:
    """Every summary number (wall time aside, NaN as text) and every record, in order."""
    return [
        (
            [(k, "nan" if isinstance(v, float) and math.isnan(v) else v)
             for k, v in r.summary().items() if k != "wall_s"],
            r.records,
        )
        for r in results
    ]  # fmt: skip


def test_dask_gives_the_local_numbers_in_order(address: str) -> None:
    local = run_grid("dl2", SCHEDULERS, [1, 2], num_jobs=30)
    seen: list[tuple[str, int]] = []
    on_dask = run_grid(
        "dl2",
        SCHEDULERS,
        [1, 2],
        dask=address,
        on_run=lambda r: seen.append((r.scheduler, r.seed)),
        num_jobs=30,
    )
    assert [(r.scheduler, r.seed) for r in on_dask] == [(r.scheduler, r.seed) for r in local]
    assert sorted(seen) == sorted((r.scheduler, r.seed) for r in local)
    assert _numbers(on_dask) == _numbers(local)


def test_cli_dask_json_equals_one_process_and_errors_are_one_line(address: str) -> None:
    args = ["compare", "-w", "deeprm", "-o", "num_jobs=15", "--schedulers", "sjf,tetris", "--json"]
    one = runner.invoke(app, [*args, "--seeds", "1-2"])
    dask = runner.invoke(app, [*args, "--seeds", "1-2", "--dask", address])
    assert one.exit_code == dask.exit_code == 0, dask.output
    drop = lambda out: [{k: v for k, v in r.items() if k != "wall_s"} for r in json.loads(out)]  # noqa: E731
    assert drop(dask.stdout) == drop(one.stdout)
    both = runner.invoke(app, [*args, "--dask", address, "--workers", "2"])
    assert both.exit_code == 2 and "--workers or --dask" in both.stderr


def test_a_failing_run_on_dask_fails_the_sweep(address: str) -> None:
    with pytest.raises(ValueError, match="unknown scheduler 'nope'"):
        run_grid("deeprm", ["fifo", "nope"], [1], dask=address, num_jobs=5)
