"""The heterogeneity-aware learned scheduler: feasible decisions, the oracle boundary, the same
seed giving the same run, training and resuming, the shipped policy by name."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.core import Allocation, ClusterView, Decision, JobSpec
from dlsched.papers.hetero.config import HeteroConfig
from dlsched.papers.hetero.features import FEATURES
from dlsched.papers.hetero.policy import HAND_WEIGHTS, TypeScore
from dlsched.papers.hetero.train import train_hetero
from dlsched.placement import make_placement
from dlsched.rl.card_limits import validate_card_data
from dlsched.rl.checkpoint import read_card
from dlsched.rl.run_options import RunOptions
from dlsched.runner import simulate
from dlsched.schedulers.base import Scheduler
from dlsched.sim import Result, SimConfig, Simulator
from dlsched.workloads.registry import make_workload

JOBS = 16
CLUSTER = "v100:1x8,p100:1x8,k80:2x4"


def _run(scheduler: str | Scheduler, seed: int, **extra: Any) -> Result:
    """``scheduler`` on a small gavel workload: 16 jobs at 6 an hour on 8+8+8 GPUs."""
    return simulate(
        "gavel", scheduler, seed, num_jobs=JOBS, cluster=CLUSTER, jobs_per_hour=6.0, **extra
    )


class _Checked(TypeScore):
    """`TypeScore` checking every decision it makes against the view it was given."""

    def decide(self, view: ClusterView) -> Decision:
        decision = super().decide(view)
        types = view.cluster.server_types
        assert types is not None and view.type_speeds is not None
        capacity = [row[0] for row in view.cluster.capacity_rows]
        used = [0.0] * len(capacity)
        held = {run.job_id: run.allocation for run in view.running}
        specs = {run.job_id: run.spec for run in view.jobs()}
        for job_id, target in decision.targets.items():
            alloc = target.placement if target.placement is not None else held[job_id]
            spec = specs[job_id]
            assert target.num_workers == alloc.num_workers == spec.num_workers
            kinds = {types[s] for s, _ in alloc.workers}
            assert len(kinds) == 1  # one GPU type per job
            assert view.type_speeds.of(spec)[kinds.pop()] > 0.0
            for server, n in alloc.workers:
                used[server] += n * spec.worker_demand.gpu
        assert all(u <= c + 1e-9 for u, c in zip(used, capacity, strict=True))
        self.points += 1
        return decision

    points = 0


@settings(max_examples=4, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=len(FEATURES), max_size=len(FEATURES)))
def test_every_decision_is_feasible_whatever_the_weights(weights: list[float]) -> None:
    checked = _Checked(weights)
    run = _run(checked, 3, multi_gpu=True)
    assert checked.points > 0
    assert run.summary()["finished"] == JOBS


def test_it_reads_estimated_speeds_never_true_ones() -> None:
    calls: list[JobSpec] = []

    def spy(spec: JobSpec, alloc: Allocation) -> float:
        calls.append(spec)
        return 1.0

    decisions = []
    for spread in (0.0, 0.8):  # same jobs and profiles, different true speeds
        workload = make_workload(
            "gavel", seed=4, speed_spread=spread, num_jobs=JOBS, cluster=CLUSTER, jobs_per_hour=6.0
        )
        sim = Simulator(
            workload.jobs,
            workload.make_cluster(),
            workload.model,
            TypeScore(HAND_WEIGHTS),
            make_placement("pack"),
            SimConfig(interval_s=workload.interval_s, on_events=False),
        )
        assert sim.next_point() is not None
        view = dataclasses.replace(sim.view(), _oracle=spy)  # an oracle handed to it anyway
        decisions.append(TypeScore(HAND_WEIGHTS).decide(view).targets)
    assert decisions[0] == decisions[1] and decisions[0]
    assert calls == []
    # a whole run with true speeds off the profile: its views hold no oracle (reading one
    # would raise PermissionError), and it finishes
    off_profile = _run(TypeScore(HAND_WEIGHTS), 4, speed_spread=0.8)
    assert off_profile.summary()["finished"] == JOBS


def test_the_same_seed_gives_the_same_run() -> None:
    runs = [_run("hetero-score", 5) for _ in range(2)]
    assert [(r.job_id, r.jct_s) for r in runs[0].records] == [
        (r.job_id, r.jct_s) for r in runs[1].records
    ]


def test_training_writes_a_truthful_card_and_resumes(tmp_path: Path) -> None:
    config = HeteroConfig(
        iterations=1,
        population=3,
        elite=1,
        train_seeds=1,
        validation_seeds=1,
        num_jobs=8,
        rates=(8.0,),
    )
    assert train_hetero(config, RunOptions(tmp_path)).steps == 1
    card = read_card(tmp_path)
    assert card.algorithm == "hetero" and card.shapes == {"features": len(FEATURES)}
    assert "cross-entropy" in card.notes and "never true speeds" in card.notes
    assert {"avg_jct_s", "gavel-las-het_avg_jct_s"} <= set(card.validation)
    assert min(card.seeds["validation"]) >= 10_001  # held out from training's draws
    resumed = train_hetero(replace(config, iterations=2), RunOptions(tmp_path, resume=True))
    assert resumed.steps == 2
    rows = (tmp_path / "train_log.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows[1:]] == ["1", "2"]


def test_the_shipped_policy_runs_by_name_and_its_card_check_refuses_other_features() -> None:
    run = _run("hetero-score", 2)
    assert run.summary()["finished"] == JOBS
    validate_card_data({"algorithm": "hetero", "shapes": {"features": len(FEATURES)}})
    with pytest.raises(ValueError, match="'features' must be 6"):
        validate_card_data({"algorithm": "hetero", "shapes": {"features": 3}})
    with pytest.raises(ValueError, match="6 weights needed"):
        TypeScore([1.0])
