"""OfflineRL: Optimus' model fitted to a few measured samples drives the training simulator;
the shipped offline-rl policy schedules the real (measured-speed) dl2 workload."""

from __future__ import annotations

import math

import pytest
import torch

from dlsched.api import simulate
from dlsched.core import ClusterView, Decision
from dlsched.models.measured_ps import MeasuredPS, load_measurements
from dlsched.papers.dl2.env import Dl2Env
from dlsched.papers.dl2.offline_rl import FitSpec, fit_speed_model, fitted_transform
from dlsched.papers.dl2.scheduler import SHIPPED_OFFLINE_RL
from dlsched.papers.dl2.state import Dl2Shape
from dlsched.rl.checkpoint import read_card
from dlsched.schedulers.base import BaseScheduler
from dlsched.schedulers.registry import make_scheduler

torch.set_num_threads(1)


def test_fit_comes_from_measured_samples_and_differs_from_them() -> None:
    fitted = fit_speed_model(FitSpec(samples=10, seed=0))
    table = load_measurements()
    measured = MeasuredPS()
    for model, fit in fitted.fits.items():
        assert fit.fitted and fit.num_configs == 10
        for p, w, _speed in fit._samples:
            assert (p, w) in table[model]  # only measured configurations are observed
    errors = fitted.relative_error(measured)
    assert all(math.isfinite(e) and 0.01 < e < 1.0 for e in errors.values())
    # without noise and with every measured point the fit is closer to the measurements
    dense = fit_speed_model(FitSpec(samples=200, noise=0.0, seed=0)).relative_error(measured)
    assert sum(dense.values()) < sum(errors.values())
    other = fit_speed_model(FitSpec(samples=10, seed=1))
    assert other.epochs_per_s("resnet-50", 3, 5) != fitted.epochs_per_s("resnet-50", 3, 5)
    with pytest.raises(ValueError, match="samples"):
        fit_speed_model(FitSpec(samples=0))


def test_training_simulator_runs_on_the_fitted_speeds() -> None:
    fitted = fit_speed_model(FitSpec(samples=8, seed=2))
    env = Dl2Env(
        shape=Dl2Shape(J=8),
        transform=fitted_transform(fitted),
        servers=3,
        num_jobs=10,
        load=0.5,
        noise=0.0,
    )
    env.reset(seed=5)
    assert env.workload is not None and env.workload.model is fitted
    checked = 0
    measured = MeasuredPS()
    drf = make_scheduler("drf")
    for _ in range(4):  # a few slots allocated like DRF, through DL2's incremental actions
        decision = drf.decide(env.view())
        targets = {j: (t.num_workers, t.num_ps) for j, t in decision.targets.items()}
        done = False
        while not done:
            assert env.slot is not None
            action = env.slot.teacher_action(targets, list(decision.targets))
            _, _, term, trunc, info = env.step(action)
            done = bool(info["slot_end"])
        for run in env.view().running:
            if run.rate > 0:
                alloc = run.allocation
                assert run.rate == pytest.approx(fitted.speed(run.spec, alloc), rel=1e-9)
                truth = measured.epochs_per_s(run.spec.model, alloc.num_ps, alloc.num_workers)
                assert run.rate != pytest.approx(truth, rel=1e-6)
                checked += 1
        if term or trunc:
            break
    assert checked > 0


class _Checked(BaseScheduler):
    """Checks the cluster is within capacity at every decision of the wrapped scheduler."""

    preemptive = True
    is_oracle = False

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.name = "checked-offline-rl"
        self.decisions = 0

    def decide(self, view: ClusterView) -> Decision:
        view.cluster.assert_consistent()
        self.decisions += 1
        return self.inner.decide(view)  # type: ignore[attr-defined]


def test_shipped_offline_rl_policy_schedules_the_measured_cluster() -> None:
    card = read_card(SHIPPED_OFFLINE_RL)
    assert card.workload == "dl2" and card.shapes["J"] == 40
    assert card.workload_params["speed_model"] == "optimus"
    assert card.workload_params["model"] == "optimus_fit"
    scheduler = make_scheduler("offline-rl")
    assert scheduler.name == "offline-rl"
    checked = _Checked(scheduler)
    result = simulate("dl2", checked, seed=101, num_jobs=40)  # type: ignore[arg-type]
    summary = result.summary()
    assert checked.decisions > 0
    assert summary["jobs"] == summary["finished"] == 40
