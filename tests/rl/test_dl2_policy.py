"""The shipped DL2 policy: loads, schedules the dl2 workload within capacity, finishes every job."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dlsched.api import simulate
from dlsched.core import ClusterView, Decision
from dlsched.papers.dl2.scheduler import SHIPPED
from dlsched.rl.checkpoint import read_card
from dlsched.schedulers.base import BaseScheduler
from dlsched.schedulers.registry import make_scheduler

torch.set_num_threads(1)


class _Checked(BaseScheduler):
    """Wraps a scheduler and checks the cluster is within capacity at every decision."""

    preemptive = True
    is_oracle = False

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.name = "checked-dl2"
        self.decisions = 0

    def decide(self, view: ClusterView) -> Decision:
        view.cluster.assert_consistent()
        self.decisions += 1
        return self.inner.decide(view)  # type: ignore[attr-defined]


def test_shipped_card_describes_the_policy() -> None:
    card = read_card(SHIPPED)
    assert card.algorithm == "dl2" and card.workload == "dl2"
    assert card.shapes["J"] == 40 and card.shapes["L"] == 8
    assert card.validation["avg_jct_s"] > 0
    assert card.seeds["validation"]


def test_shipped_policy_schedules_dl2_and_finishes_every_job() -> None:
    checked = _Checked(make_scheduler("dl2"))
    result = simulate("dl2", checked, seed=101, num_jobs=40)  # type: ignore[arg-type]
    assert checked.decisions > 0
    summary = result.summary()
    assert summary["jobs"] == summary["finished"] == 40
    assert summary["avg_jct_s"] > 0


def test_dl2_path_loads_another_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        make_scheduler(f"dl2:{tmp_path / 'nothing'}")
    scheduler = make_scheduler(f"dl2:{SHIPPED}")
    assert scheduler.name == "dl2"


@pytest.mark.slow
def test_shipped_policy_never_stalls_a_tiny_cluster() -> None:
    # The invariant test's clusters (tests/schedulers/test_every_scheduler.py), every seed it
    # could draw below 40 at each of its loads; a policy that leaves a job idle for good on one
    # of them raises SimulationStalled here (an earlier one-command policy did in 5 of 120).
    scheduler = make_scheduler("dl2")  # greedy and stateless: one instance for every run
    for load in (0.5, 1.0, 2.0):
        for seed in range(40):
            result = simulate("dl2", scheduler, seed=seed, load=load, servers=2, num_jobs=12)
            summary = result.summary()
            assert summary["jobs"] == summary["finished"] == 12, (seed, load)
