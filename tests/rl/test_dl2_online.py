"""DL2's online phase in the simulator: rewards from measured progress, replay, updates, saving."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
import torch

from dlsched.api import simulate
from dlsched.core import ClusterView, Decision, JobRun
from dlsched.live.online import OnlineLearning, make_learning_scheduler
from dlsched.papers.dl2.network import Dl2Config, load, make_policy, save, seed_everything
from dlsched.papers.dl2.online import Dl2Online, Dl2OnlineConfig, load_dl2_online
from dlsched.rl.checkpoint import read_card
from dlsched.schedulers.base import BaseScheduler
from dlsched.schedulers.registry import make_scheduler

torch.set_num_threads(1)  # tiny networks: threads only contend on a 2-core CI box

SMALL = {"servers": 3, "num_jobs": 12}


@pytest.fixture(scope="module")
def small_policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained small DL2 checkpoint (J = 8 rows, 32 × 32 per-row net)."""
    cfg = Dl2Config(J=8, hidden=(32, 32), arch="rows", batch_size=64, seed=0)
    seed_everything(0)
    where = tmp_path_factory.mktemp("dl2-small")
    save(
        where,
        make_policy(cfg),
        cfg,
        workload="dl2",
        workload_params=dict(SMALL),
        seeds={},
        steps={},
        validation={},
    )
    return where


class _Recorder(BaseScheduler):
    """Drives the online scheduler as the live loop does (decide, then observe_slot) and keeps,
    independently of it, every view's time and each active job's progress at that time."""

    name = "recorder"
    preemptive: ClassVar[bool] = True

    def __init__(self, inner: Dl2Online) -> None:
        self.inner = inner
        self.points: list[tuple[float, dict[int, tuple[JobRun, float]]]] = []
        self.last_view: ClusterView | None = None

    def reset(self) -> None:
        self.inner.reset()

    def decide(self, view: ClusterView) -> Decision:
        jobs = {run.job_id: (run, run.work_done(view.now_s)) for run in view.jobs()}
        self.points.append((view.now_s, jobs))
        self.last_view = view
        decision = self.inner.decide(view)
        self.inner.observe_slot(view, decision)
        return decision


def _expected_rewards(points: list[tuple[float, dict[int, tuple[JobRun, float]]]]) -> list[float]:
    """Σ_i (epochs of job i trained between two views) / (its total epochs), slot by slot; a
    job gone from the next view finished in between (all of its epochs count)."""
    rewards = []
    for (_, jobs), (_, after) in pairwise(points):
        r = 0.0
        for job_id, (run, done) in jobs.items():
            if job_id in after:
                now = after[job_id][1]
            else:
                assert run.finished
                now = run.spec.total_work
            r += (now - done) / run.spec.total_work
        rewards.append(r)
    return rewards


def test_online_dl2_rewards_replay_and_updates_in_the_simulator(small_policy: Path) -> None:
    online = load_dl2_online(small_policy, Dl2OnlineConfig(slots_per_update=4, seed=1))
    assert isinstance(online, OnlineLearning)
    before = [p.detach().clone() for p in online.learner.policy.parameters()]
    recorder = _Recorder(online)
    result = simulate("dl2", recorder, seed=7, **SMALL)
    assert result.summary()["finished"] == SMALL["num_jobs"]
    slots = len(recorder.points)
    assert online.slots == slots >= 12
    # every slot but the last is rewarded when the next is observed, from measured progress
    expected = _expected_rewards(recorder.points)
    assert len(online.rewards) == slots - 1
    np.testing.assert_allclose(online.rewards, expected, rtol=1e-9, atol=1e-12)
    assert online.updates == (slots - 1) // 4 >= 2
    after = list(online.learner.policy.parameters())
    assert all(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    # the last slot ends the episode: every job's epochs counted exactly once in total
    online.end_episode()
    assert len(online.rewards) == slots
    assert sum(online.rewards) == pytest.approx(SMALL["num_jobs"], abs=1e-6)
    assert online.replay.size == online.samples > slots
    dones = online.replay.dones[: online.replay.size]
    terminal = int(dones.sum())  # only the last slot's samples are terminal
    assert terminal >= 1 and dones[-terminal:].all()


def test_saved_online_policy_loads_as_dl2_path_and_schedules(
    small_policy: Path, tmp_path: Path
) -> None:
    online = load_dl2_online(small_policy, Dl2OnlineConfig(slots_per_update=100, seed=2))
    simulate("dl2", _Recorder(online), seed=8, **SMALL)
    assert online.updates == 0  # fewer slots than one round
    written = online.save_policy(tmp_path / "policy_online")
    assert written.is_file() and online.updates == 1  # the save ran the pending round
    card = read_card(written)
    assert card.steps["online_updates"] == 1 and card.steps["online_slots"] == online.slots
    net, _ = load(tmp_path / "policy_online")
    for a, b in zip(net.parameters(), online.learner.policy.parameters(), strict=True):
        assert torch.equal(a, b)

    greedy = make_scheduler(f"dl2:{tmp_path / 'policy_online'}")
    assert not isinstance(greedy, OnlineLearning)

    class Checked(BaseScheduler):
        name = "checked"
        preemptive: ClassVar[bool] = True

        def decide(self, view: ClusterView) -> Decision:
            view.cluster.assert_consistent()  # never over-allocated
            return greedy.decide(view)

    summary = simulate("dl2", Checked(), seed=9, **SMALL).summary()
    assert summary["finished"] == SMALL["num_jobs"]
    # --learn from the saved policy continues its critic and update count
    again = load_dl2_online(tmp_path / "policy_online")
    assert again.updates == 1
    value = online.learner.value.parameters()
    for a, b in zip(again.learner.value.parameters(), value, strict=True):
        assert torch.equal(a, b)


def test_observe_needs_the_decided_view(small_policy: Path) -> None:
    online = load_dl2_online(small_policy)
    recorder = _Recorder(online)
    simulate("dl2", recorder, seed=3, servers=2, num_jobs=2)
    assert recorder.last_view is not None
    with pytest.raises(ValueError, match="decide"):  # already observed
        online.observe_slot(recorder.last_view, Decision())


def test_learn_builds_the_online_variant_and_dl2_stays_greedy() -> None:
    assert not isinstance(make_scheduler("dl2"), OnlineLearning)
    learning = make_learning_scheduler("dl2")
    assert isinstance(learning, Dl2Online) and isinstance(learning, OnlineLearning)
    assert learning.cfg.J == 40  # the shipped policy's shape
