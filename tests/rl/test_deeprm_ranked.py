"""DeepRM's ranked view (`DeepRMShape.ranked`): the slots show the M shortest waiting jobs, the
environment and the Simulator agree on it, and training scores networks over several settings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.core import ClusterView, Decision
from dlsched.papers.deeprm.algorithm import (
    ReinforceConfig,
    make_jobsets,
    run_batch,
    sjf_actions,
    withholding_actions,
)
from dlsched.papers.deeprm.policy import DeepRMEncoder, load_policy
from dlsched.papers.deeprm.state import DeepRMBatch, DeepRMShape, Jobset
from dlsched.papers.deeprm.train import ValidationSet, train_deeprm
from dlsched.rl.training import RunOptions
from dlsched.schedulers.base import BaseScheduler
from dlsched.workloads.deeprm import make_deeprm

RANKED = DeepRMShape(slots=4, ranked=True)


def _expected_slots(batch: DeepRMBatch, i: int) -> list[int]:
    """The waiting jobs of episode ``i`` by (duration, arrival, index), brute force."""
    n = int(batch.num_jobs[i])
    waiting = [j for j in range(n) if batch.arrival[i, j] <= batch.now[i] and batch.start[i, j] < 0]
    return sorted(waiting, key=lambda j: (batch.length[i, j], batch.arrival[i, j], j))


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    load=st.floats(0.3, 1.9),
    long=st.booleans(),
    policy_seed=st.integers(0, 100),
)
def test_slots_are_the_shortest_waiting_jobs(
    seed: int, load: float, long: bool, policy_seed: int
) -> None:
    jobsets = make_jobsets([seed], load, None if long else 30, num_jobs=60)
    batch = DeepRMBatch(jobsets, RANKED, max_steps=5_000)
    rng = np.random.default_rng(policy_seed)
    while batch.active[0]:
        waiting = _expected_slots(batch, 0)
        m = RANKED.slots
        assert batch.slot[0].tolist() == waiting[:m] + [-1] * (m - len(waiting[:m]))
        assert batch.backlog[0] == max(len(waiting) - m, 0)
        fits, first = batch.fits()
        assert not (fits[0] & (first[0] > 0)).any()  # a ranked choice starts now
        mask = batch.action_masks()[0]
        batch.step(np.array([rng.choice(np.flatnonzero(mask))]))
    assert batch.dropped[0] == 0 and batch.terminated[0]  # nothing is dropped


Pick = Callable[[npt.NDArray[np.bool_]], int]


def lowest(valid: npt.NDArray[np.bool_]) -> int:
    return int(valid.argmax()) + 1 if valid.any() else 0


def highest(valid: npt.NDArray[np.bool_]) -> int:
    return len(valid) - int(valid[::-1].argmax()) if valid.any() else 0


class RankedSlotPolicy(BaseScheduler):
    """``pick`` over the ranked slots, through the deeprm scheduler's bookkeeping."""

    name = "ranked-slot-policy"

    def __init__(self, pick: Pick) -> None:
        self.pick = pick
        self.encoder = DeepRMEncoder(RANKED)

    def reset(self) -> None:
        self.encoder.reset()

    def decide(self, view: ClusterView) -> Decision:
        builder = self.encoder.start(view)
        while not builder.apply(self.pick(builder.action_mask()[1:])):
            pass
        return builder.decision()


@pytest.mark.parametrize(
    ("pick", "load", "seed", "horizon"),
    [(lowest, 1.3, 1, 30), (highest, 1.9, 2, 30), (lowest, 1.9, 3, None), (highest, 0.7, 4, None)],
)
def test_env_and_simulator_agree_in_the_ranked_view(
    pick: Pick, load: float, seed: int, horizon: int | None
) -> None:
    workload = make_deeprm(seed, load=load, horizon_steps=horizon, num_jobs=80)
    jobset = Jobset.from_workload(workload, RANKED)
    result = dlsched.simulate(workload, RankedSlotPolicy(pick), seed)
    batch = DeepRMBatch([jobset], RANKED, max_steps=10_000)

    def choose(b: DeepRMBatch, rows: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_]):
        return np.array([pick(m[1:]) for m in mask])

    run_batch(batch, choose)
    sim = {r.job_id: r.start_s for r in result.records}
    assert len(sim) == len(jobset)
    starts = batch.start[0, : len(jobset)].astype(float).tolist()
    assert [sim[int(j)] for j in jobset.job_ids] == starts


def test_validation_score_penalises_being_worse_than_sjf_anywhere() -> None:
    config = ReinforceConfig(loads=(0.5, 1.5), long_jobs=30, horizon_steps=15, shape=RANKED)
    val = ValidationSet.build(config, 2)
    assert len(val.points) == 4 and len(val.jobsets) == 8
    run = run_batch(DeepRMBatch(val.jobsets, RANKED, max_steps=3000), sjf_actions)
    sjf = run.slowdown
    assert val.score(run)[0] == pytest.approx(1.0)
    better_on_average = sjf * np.where(val.point_of == 0, 1.05, 0.9)  # worse at one point
    assert val.score(run._replace(slowdown=better_on_average))[0] > 1.0
    assert val.score(run._replace(slowdown=sjf * 0.95))[0] < 1.0


@pytest.mark.slow
def test_short_training_improves_validation(tmp_path: Path) -> None:
    """Seeded REINFORCE from a random network, ranked view, two loads and long jobsets."""
    config = ReinforceConfig(
        loads=(0.7, 1.5),
        long_jobs=25,
        horizon_steps=15,
        jobsets=4,
        episodes=6,
        iterations=12,
        lr=0.01,
        workers=1,
        seed=3,
        max_steps=2000,
        shape=RANKED,
    )
    train_deeprm(config, RunOptions(tmp_path), validate_every=1, validation_jobsets=3)
    rows = (tmp_path / "train_log.csv").read_text().splitlines()[1:]
    scores = [float(r.split(",")[-1]) for r in rows if r.split(",")[-1]]
    assert min(scores[1:]) < scores[0] - 0.05  # better than after the first update
    _, _, _, card = load_policy(tmp_path)
    assert card.trained_setting == {
        "workload": "deeprm",
        "params": {"servers": 1, "load": [0.7, 1.5]},
    }
    assert card.shapes["ranked"] == 1


@pytest.mark.parametrize(("cpu", "withheld"), [(10, True), (9, False)])
def test_withholding_teacher_keeps_room_for_a_waiting_short_job(cpu: int, withheld: bool) -> None:
    """A long job that fits is not started while the cluster is half busy and a short job
    waits; SJF starts it either way."""
    jobset = Jobset(
        arrival=np.array([0, 1, 1]),
        length=np.array([12, 10, 2]),
        demand=np.array([[cpu, cpu], [5, 5], [12, 1]]),  # the short job does not fit at t=1
        job_ids=np.arange(3),
    )
    batch = DeepRMBatch([jobset], DeepRMShape(ranked=True))
    rows = np.array([0])
    assert sjf_actions(batch, rows, batch.action_masks()).tolist() == [1]
    batch.step(np.array([1]))  # job 0 starts
    batch.step(np.array([0]))  # time moves to step 1
    assert batch.slot[0, :2].tolist() == [2, 1]  # shortest first
    assert sjf_actions(batch, rows, batch.action_masks()).tolist() == [2]
    expected = 0 if withheld else 2
    assert withholding_actions(batch, rows, batch.action_masks()).tolist() == [expected]
