"""Elastic schedulers: DRF, SRTF on PS jobs, Tetris, Optimus (and its oracle), Efficient-SRTF."""

from __future__ import annotations

from typing import ClassVar

import pytest

from dlsched.core import Allocation, JobRun, JobSpec, Resources
from dlsched.schedulers.drf import Drf
from dlsched.schedulers.efficient_srtf import EfficientSrtf, efficient_setting
from dlsched.schedulers.optimus import Optimus, OptimusOracle
from dlsched.schedulers.registry import make_scheduler, schedulers
from dlsched.schedulers.srtf import Srtf
from dlsched.schedulers.tetris import Tetris
from dlsched.workloads.registry import make_workload
from tests.schedulers.helpers import checked_run, counts, gpu, ps, replica, scene

CPU_NODE = Resources(cpu=16, mem=64)


def test_drf_serves_the_lowest_dominant_share():
    """J0's replica takes 1/16 of the CPU (and of memory), J1's 4/16 of the CPU.

    Bundles go to the lower dominant share (ties to the earlier arrival): J0 climbs to 4
    replicas (0.25) while J1 holds 1 (0.25); the tie goes to J0 (5: 0.3125), then J1 (2: 0.5),
    then J0 until the CPU runs out at 8 replicas (0.5). Equal dominant shares, 8 and 2 replicas.
    """
    s = scene(capacity=CPU_NODE)
    s.wait(replica(0, Resources(cpu=1, mem=4), num=1, lo=1, hi=10))
    s.wait(replica(1, Resources(cpu=4, mem=4), num=1, lo=1, hi=10))
    assert counts(Drf().decide(s.view())) == {0: (8, 0), 1: (2, 0)}


def test_drf_reallocates_from_scratch_and_gives_a_newcomer_its_share():
    s = scene(capacity=CPU_NODE)
    s.run(replica(0, Resources(cpu=1, mem=4), num=1, lo=1, hi=16), [(0, 16)])
    s.wait(replica(1, Resources(cpu=1, mem=4), num=1, lo=1, hi=16))
    assert counts(Drf().decide(s.view())) == {0: (8, 0), 1: (8, 0)}


def observed(run: JobRun, samples: list[tuple[int, int, float]]) -> JobRun:
    run.observed.extend(samples)
    return run


def test_srtf_ranks_ps_jobs_by_remaining_epochs_over_observed_speed():
    def two_jobs(slow_model_speed: float) -> dict[int, tuple[int, int]]:
        s = scene(capacity=Resources(gpu=2, cpu=16, mem=64))  # room for one of them
        fast = [(1, 1, 0.1), (1, 2, 0.18), (2, 2, 0.2)]
        slow = [(p, w, v * slow_model_speed / 0.1) for p, w, v in fast]
        observed(s.wait(ps(0, 100.0, workers=2, model="a")), fast)
        observed(s.wait(ps(1, 10.0, workers=2, model="b")), slow)
        return counts(Srtf().decide(s.view()))

    # job 1 has 10× fewer epochs left; it goes first unless its model is >10× slower
    assert two_jobs(0.05) == {1: (2, 1)}
    assert two_jobs(0.001) == {0: (2, 1)}


@pytest.mark.parametrize(("remaining_y", "picked"), [(100.0, 1), (300.0, 0)])
def test_tetris_multiplies_alignment_by_shortness(remaining_y, picked):
    """X: 2 GPUs, 100 s left, alignment 2/4 + 2/16 + 8/64 = 0.75; Y: 4 GPUs, alignment 1.5.

    Y left 100 s: 0.015 > 0.0075, Y first (X then does not fit). Y left 300 s: 0.005, X first.
    """
    s = scene()
    s.wait(gpu(0, 100.0, 2))
    s.wait(gpu(1, remaining_y, 4))
    assert list(counts(Tetris().decide(s.view()))) == [picked]


@pytest.mark.parametrize(("name", "expected"), [("tetris", (2, 2)), ("tetris:3", (3, 3))])
def test_tetris_fills_the_picked_job_up_to_its_threshold(name, expected):
    s = scene()  # 4 GPUs: room for 4 bundles
    s.wait(ps(0, 10.0, workers=2))
    assert counts(make_scheduler(name).decide(s.view())) == {0: expected}
    with pytest.raises(ValueError, match="threshold"):
        make_scheduler("tetris:0")


def worker_oracle(calls: list[int]):
    """True speed = 0.01 epochs/s per worker (PS do not matter); records every call."""

    def speed(spec: JobSpec, alloc: Allocation) -> float:
        calls.append(spec.job_id)
        return 0.01 * alloc.num_workers

    return speed


def test_optimus_oracle_gives_the_next_worker_to_the_largest_marginal_gain():
    """Minimum (1 worker, 1 PS) each on 3 GPUs; the third GPU goes to the job whose remaining
    time falls most: J0 (100 epochs) saves 5,000 s, J1 (10 epochs) 500 s. A PS saves nothing."""
    calls: list[int] = []
    s = scene(capacity=Resources(gpu=3, cpu=16, mem=64))
    s.wait(ps(0, 100.0))
    s.wait(ps(1, 10.0))
    assert counts(OptimusOracle().decide(s.view(worker_oracle(calls)))) == {0: (2, 1), 1: (1, 1)}
    assert calls


def test_optimus_is_not_an_oracle_and_never_reads_true_speeds():
    assert not Optimus.is_oracle and OptimusOracle.is_oracle
    assert "oracle" in schedulers()["optimus-oracle"].description
    s = scene()
    s.wait(ps(0, 100.0))
    with pytest.raises(PermissionError):
        OptimusOracle().decide(s.view())
    Optimus().decide(s.view())  # no oracle in the view, no error
    # over a whole run, with a spy oracle handed to it anyway: optimus never calls it
    workload = make_workload("dl2", seed=2, num_jobs=8, servers=2)
    for name, should_call in (("optimus", False), ("optimus-oracle", True)):
        calls: list[int] = []
        checked_run(workload, make_scheduler(name), 2, oracle_for_all=worker_oracle(calls))
        assert bool(calls) is should_call, name


class FakeSpeeds:
    """Stands in for `ObservedSpeeds`: a fixed speed table s(p, w), epochs/s."""

    TABLE: ClassVar[dict[tuple[int, int], float]] = {
        (1, 1): 1.0,
        (1, 2): 1.5,
        (1, 3): 1.6,
        (2, 1): 1.0,
        (2, 2): 2.4,
        (2, 3): 2.7,
    }

    def update(self, runs: object) -> None:
        pass

    def reset(self) -> None:
        pass

    def theta(self, spec: JobSpec) -> tuple[float, ...]:
        return (0.0,) * 5

    def version(self, model: str) -> int:
        return 0

    def speed(self, run: JobRun, num_ps: int, num_workers: int) -> float:
        return self.TABLE.get((num_ps, num_workers), 0.0)

    def speed_grid(self, spec: JobSpec, max_ps: int, max_workers: int):
        import numpy as np

        grid = np.zeros((max_ps, max_workers))
        for (p, w), v in self.TABLE.items():
            if p <= max_ps and w <= max_workers:
                grid[p - 1, w - 1] = v
        return grid


def test_efficient_setting_maximises_speed_per_dominant_share():
    """Dominant share is the GPU's, w/4: speed/share is 4, 3, 2.1 (1 PS) and 4, 4.8, 3.6 (2 PS);
    the best is 2 PS, 2 workers."""
    run = JobRun(ps(0, 10.0, max_workers=3, max_ps=2))
    total = Resources(gpu=4, cpu=16, mem=64)
    assert efficient_setting(FakeSpeeds(), run, total) == (2, 2, 2.4, 0.5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("gpus", "epochs", "expected"),
    [
        (2, (1000.0, 10.0), {1: (2, 2)}),  # the short job's efficient setting takes both GPUs
        (2, (10.0, 1000.0), {0: (2, 2)}),
        (5, (1000.0, 10.0), {1: (2, 2), 0: (3, 2)}),  # the spare GPU: largest marginal gain
    ],
)
def test_efficient_srtf_serves_smallest_remaining_time_times_share_first(gpus, epochs, expected):
    s = scene(capacity=Resources(gpu=gpus, cpu=16, mem=64))
    s.wait(ps(0, epochs[0], max_workers=3, max_ps=2))
    s.wait(ps(1, epochs[1], max_workers=3, max_ps=2))
    policy = EfficientSrtf()
    policy.speeds = FakeSpeeds()  # type: ignore[assignment]
    decided = counts(policy.decide(s.view()))
    assert decided == expected
    assert list(decided) == list(expected)  # served in that order


def test_config_fit_recovers_a_model_from_per_configuration_means():
    """Speeds from Optimus' model; the usual configuration is run 50 times with ±20 % noise
    (mean exact), five others once: the per-configuration fit predicts an unseen setting."""
    from dlsched.schedulers.speed_estimate import ObservedSpeeds, step_time

    theta = (2.0, 0.1, 0.3, 0.02, 0.05)

    def true(p: int, w: int) -> float:
        return 1.0 / step_time(theta, p, w)

    samples = [(1, 1, true(1, 1) * (1.2 if k % 2 else 0.8)) for k in range(50)]
    samples += [(p, w, true(p, w)) for p, w in ((1, 2), (2, 2), (2, 4), (4, 4), (1, 4))]
    run = JobRun(ps(0, 10.0))
    run.observed.extend(samples)
    speeds = ObservedSpeeds(measured_first=True, config_fit=True)
    speeds.update([run])
    fresh = JobRun(ps(1, 10.0))  # same model, nothing observed itself
    assert speeds.speed(fresh, 3, 8) == pytest.approx(true(3, 8), rel=0.01)
    assert speeds.speed(fresh, 1, 1) == pytest.approx(true(1, 1), rel=1e-9)  # the mean
