"""DeepRM: baseline, network equivalence, training, Simulator agreement, shipped policies."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import torch

import dlsched
from dlsched.core import ClusterView, Decision
from dlsched.papers.deeprm.algorithm import (
    Reinforce,
    ReinforceConfig,
    evaluate,
    group_baseline,
    make_jobsets,
    per_step_baseline,
    run_batch,
    sjf_actions,
)
from dlsched.papers.deeprm.net import DeepRMPolicyNet
from dlsched.papers.deeprm.policy import DeepRMEncoder, shipped_policies
from dlsched.papers.deeprm.state import DeepRMBatch, DeepRMShape, Jobset
from dlsched.rl.checkpoint import PolicyCard, save_checkpoint
from dlsched.schedulers.base import BaseScheduler
from dlsched.sim.result import JobRecord
from dlsched.workloads.base import Workload
from dlsched.workloads.deeprm import POOL, make_deeprm

# -- REINFORCE pieces -----------------------------------------------------------------------


def test_baseline_is_the_zero_padded_per_step_mean() -> None:
    returns = [np.array([1.0, 2.0, 3.0]), np.array([3.0]), np.array([2.0, 4.0])]
    np.testing.assert_allclose(per_step_baseline(returns), [2.0, 2.0, 1.0])
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 9, 6)
    values = np.zeros((8, 6))
    for i, n in enumerate(lengths):
        values[:n, i] = rng.normal(size=n)
    grouped = group_baseline(values, 3)
    for g in range(2):
        cols = [values[: lengths[i], i] for i in range(3 * g, 3 * g + 3)]
        np.testing.assert_allclose(grouped[: max(map(len, cols)), g], per_step_baseline(cols))


def test_index_network_equals_dense_network_on_images() -> None:
    shape = DeepRMShape(slots=3, backlog=30)
    torch.manual_seed(0)
    net = DeepRMPolicyNet(shape, hidden=(7, 5))
    batch = DeepRMBatch(make_jobsets([1, 2, 3], load=1.9, horizon_steps=20), shape)
    rng = np.random.default_rng(0)
    for _ in range(25):
        mask = batch.action_masks()
        batch.step((rng.random(mask.shape) * mask).argmax(1))
    assert batch.backlog.max() > 0
    images = torch.from_numpy(batch.images())
    index = torch.from_numpy(batch.index())
    dense = net(images)
    fast = net.forward_index(index)
    torch.testing.assert_close(dense, fast, rtol=1e-5, atol=1e-5)
    grads = []
    for out in (dense, fast):
        net.zero_grad()
        (out * torch.arange(out.numel()).reshape(out.shape)).sum().backward(retain_graph=True)
        grads.append([p.grad.clone() for p in net.parameters() if p.grad is not None])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_short_training_improves_mean_reward() -> None:
    config = ReinforceConfig(
        load=1.0, jobsets=2, episodes=8, horizon_steps=10, workers=1, lr=0.01, seed=0
    )
    trainer = Reinforce(config)
    jobsets = make_jobsets(config.train_seeds(), config.load, config.horizon_steps) * 20

    def mean_reward() -> float:
        return float(evaluate(trainer.net, jobsets, seed=0).rewards.sum(axis=0).mean())

    before = mean_reward()
    for _ in range(5):
        trainer.step()
    assert mean_reward() > before + 2.0


# -- the environment and the Simulator agree ------------------------------------------------

Pick = Callable[[npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.int64]], int]
"""(valid slots, first-fit offsets, lengths) of one state → action."""


def sjf_now(
    fits: npt.NDArray[np.bool_], first: npt.NDArray[np.int64], length: npt.NDArray[np.int64]
) -> int:
    now = fits & (first == 0)
    return int(np.where(now, length, 10**9).argmin()) + 1 if now.any() else 0


def first_valid(
    fits: npt.NDArray[np.bool_], first: npt.NDArray[np.int64], length: npt.NDArray[np.int64]
) -> int:
    """Reserves jobs in the future too (whatever fits somewhere in the horizon)."""
    return int(fits.argmax()) + 1 if fits.any() else 0


class SlotPolicy(BaseScheduler):
    """``pick`` run through the deeprm scheduler's bookkeeping (`DeepRMEncoder`)."""

    name = "slot-policy"

    def __init__(self, pick: Pick) -> None:
        self.pick = pick
        self.encoder = DeepRMEncoder()

    def reset(self) -> None:
        self.encoder.reset()

    def decide(self, view: ClusterView) -> Decision:
        builder = self.encoder.start(view)
        while True:
            fits, first = builder._fit()
            length, _ = builder._slot_arrays()
            if builder.apply(self.pick(fits, first, length[0])):
                return builder.decision()


def env_starts(jobset: Jobset, pick: Pick) -> npt.NDArray[np.int64]:
    def choose(
        batch: DeepRMBatch, rows: npt.NDArray[np.int64], _mask: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.int64]:
        fits, first = batch.fits()
        return np.array([pick(fits[r], first[r], batch.slot_len[r]) for r in rows])

    batch = DeepRMBatch([jobset], max_steps=10_000)
    run_batch(batch, choose)
    assert batch.terminated[0]
    return batch.start[0, : len(jobset)]


@pytest.mark.parametrize(
    ("pick", "load", "seed", "interval"),
    [
        (sjf_now, 0.5, 1, None),  # work-conserving: event-driven scheduling points suffice
        (sjf_now, 1.9, 3, None),
        (first_valid, 1.3, 2, 1.0),  # reserves ahead: needs a point at every step, as DeepRM
        (first_valid, 1.9, 3, 1.0),
    ],
)
def test_env_and_simulator_agree(
    pick: Pick, load: float, seed: int, interval: float | None
) -> None:
    workload = make_deeprm(seed, load=load, horizon_steps=40)
    jobset = Jobset.from_workload(workload)
    result = dlsched.simulate(workload, SlotPolicy(pick), seed, interval_s=interval)
    assert len(result.records) == len(jobset)
    sim = {r.job_id: r.start_s for r in result.records}
    starts = env_starts(jobset, pick)
    assert [sim[int(j)] for j in jobset.job_ids] == starts.astype(float).tolist()


def test_slot_sjf_equals_registered_sjf_without_a_queue_beyond_the_slots() -> None:
    workload = make_deeprm(5, load=0.4, horizon_steps=40)
    jobset = Jobset.from_workload(workload)
    batch = DeepRMBatch([jobset])
    run_batch(batch, sjf_actions)
    result = dlsched.simulate(workload, "sjf", 5)
    assert result.summary()["avg_slowdown"] == pytest.approx(batch.slowdowns(0).mean())


# -- trained policies as schedulers ----------------------------------------------------------


def _peak_use(workload: Workload, result: dlsched.Result) -> tuple[float, float]:
    """Largest (cpu, mem) slots held at once, from the records' start and finish times."""
    spec = {j.job_id: j for j in workload.jobs}
    events = sorted({t for r in result.records for t in (r.start_s, r.finish_s)})
    peak = [0.0, 0.0]
    for t in events:
        held = [spec[r.job_id].worker_demand for r in result.records if r.start_s <= t < r.finish_s]
        peak = [max(peak[0], sum(d.cpu for d in held)), max(peak[1], sum(d.mem for d in held))]
    return peak[0], peak[1]


@pytest.mark.parametrize(
    "spec", ["deeprm", "deeprm:0.7", "deeprm:1.3", "deeprm:paper", "deeprm:paper@1.3"]
)
def test_shipped_policies_load_and_finish_every_job_within_capacity(spec: str) -> None:
    assert {p.name for p in shipped_policies()} >= {"ranked", "load0.7", "load1.3"}
    for load, options in ((0.7, {"num_jobs": 60}), (1.9, {"num_jobs": 60}), (1.3, {})):
        workload = make_deeprm(4, load=load, **options)
        result = dlsched.simulate(workload, spec, 4)
        assert len(result.records) == result.num_jobs == len(workload.jobs) > 0
        assert max(_peak_use(workload, result)) <= POOL.cpu == POOL.mem
        assert all(r.finish_s - r.start_s == spec_len for r, spec_len in _lengths(workload, result))


def _lengths(workload: Workload, result: dlsched.Result) -> list[tuple[JobRecord, float]]:
    """Each record with its job's duration (a DeepRM job runs exactly its duration once started)."""
    spec = {j.job_id: j for j in workload.jobs}
    return [(r, spec[r.job_id].total_work) for r in result.records]


def test_checkpoint_path_runs_and_wrong_cards_are_refused(tmp_path: Path) -> None:
    shape = DeepRMShape()
    net = DeepRMPolicyNet(shape)
    card = PolicyCard(
        algorithm="deeprm",
        workload="deeprm",
        workload_params={"load": 1.0},
        shapes=shape.shapes(),
        hyperparams={"hidden": [20], "action_selection": "sample"},
    )
    save_checkpoint(tmp_path / "ok", net.state_dict(), card)
    result = dlsched.simulate("deeprm", f"deeprm:{tmp_path / 'ok'}", 1, load=1.0, num_jobs=30)
    assert len(result.records) == 30
    card.algorithm = "dl2"
    save_checkpoint(tmp_path / "bad", net.state_dict(), card)
    with pytest.raises(ValueError, match="algorithm"):
        dlsched.simulate("deeprm", f"deeprm:{tmp_path / 'bad'}", 1, num_jobs=5)


def test_the_paper_policy_is_deployed_with_every_action_offered_as_trained() -> None:
    from dlsched.schedulers.registry import make_scheduler

    paper = make_scheduler("deeprm:paper")
    assert paper.deeprm_encoder.every_action  # type: ignore[attr-defined]
    assert not make_scheduler("deeprm").deeprm_encoder.every_action  # type: ignore[attr-defined]
    workload = make_deeprm(4, load=1.3, horizon_steps=20)
    result = dlsched.simulate(workload, paper, 4, interval_s=1.0)
    assert len(result.records) == len(workload.jobs)  # empty slots act as ∅: every job runs
    for seed in range(9001, 9031):  # event-driven: an idle cluster must start a fitting job
        workload = make_deeprm(seed, load=1.3)
        assert len(dlsched.simulate(workload, paper, seed).records) == len(workload.jobs)


def test_a_completion_time_run_is_validated_on_completion_time() -> None:
    from dataclasses import replace

    from dlsched.papers.deeprm.train import VALIDATION_MAX_STEPS, WORSE_PENALTY, ValidationSet

    config = ReinforceConfig(load=1.3, objective="completion", horizon_steps=10)
    val = ValidationSet.build(config, 3)
    batch = DeepRMBatch(val.jobsets, config.shape, max_steps=VALIDATION_MAX_STEPS)
    run = run_batch(batch, sjf_actions)  # SJF is the reference itself: every ratio 1
    want = np.mean([batch.completion_times(i).mean() for i in range(len(val.jobsets))])
    score, means = val.score(run)
    assert score == pytest.approx(1.0)
    assert means[0] == pytest.approx(want)
    # SJF's slowdowns with completion times twice as long: ranked on completion time
    longer = run._replace(completion=2 * run.completion)
    assert val.score(longer)[0] == pytest.approx(2.0 + WORSE_PENALTY)
    on_slowdown = ValidationSet.build(replace(config, objective="slowdown"), 3)
    assert on_slowdown.score(longer)[0] == pytest.approx(1.0)
