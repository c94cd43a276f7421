"""Gavel's mechanism, policies and workload; heterogeneous clusters and the oracle boundary."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.core import (
    Allocation,
    Arch,
    Cluster,
    ClusterView,
    Decision,
    JobRun,
    JobSpec,
    Resources,
)
from dlsched.core.gpu_types import ClusterSpec
from dlsched.models.gavel_table import JOB_TYPES, throughputs
from dlsched.models.typed import TypedSpeed
from dlsched.papers.gavel.fifo_rounds import GavelFifoHet
from dlsched.papers.gavel.ftf import ftf_allocation
from dlsched.papers.gavel.lp import Problem, check_feasible, max_min
from dlsched.papers.gavel.makespan import makespan_allocation
from dlsched.papers.gavel.max_min_fairness import GavelLas, GavelLasHet, las_allocation
from dlsched.papers.gavel.workload import draw_jobs, gavel_workload, make_gavel
from dlsched.placement import make_placement
from dlsched.runner import simulate
from dlsched.schedulers.base import BaseScheduler, Scheduler
from dlsched.sim import RescaleCost, SimConfig, Simulator
from dlsched.workloads.base import Workload

# -- the cluster spec and the model ------------------------------------------------------------


def test_cluster_spec_gives_servers_types_and_gpus() -> None:
    spec = ClusterSpec.parse("v100:2x8, k80:3x4")
    assert spec.server_types() == ("v100", "v100", "k80", "k80", "k80")
    assert spec.servers(4.0, 16.0)[2] == Resources(4, 16, 64)
    assert (spec.gpus_of("v100"), spec.gpus_of("k80"), spec.reference) == (16, 12, "v100")
    cluster = Cluster(spec.servers(4.0, 16.0), spec.server_types())
    assert cluster.gpus_by_type() == {"v100": 16, "k80": 12}
    assert cluster.gpu_types == ("v100", "k80")
    assert str(spec) == "v100:2x8,k80:3x4"


@pytest.mark.parametrize(
    ("text", "why"),
    [("v100", "TYPE:SERVERSxGPUS"), ("v100:0x8", "at least 1"), ("v100:1x8,v100:1x4", "twice")],
)
def test_cluster_spec_refuses_bad_groups_in_one_line(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why) as err:
        ClusterSpec.parse(text, "-o cluster")
    assert str(err.value).startswith("-o cluster: ") and "\n" not in str(err.value)


def test_a_homogeneous_cluster_names_no_type() -> None:
    cluster = Cluster([Resources(4, 8, 8)] * 2)
    assert cluster.server_types is None and cluster.gpus_by_type() == {}


def test_a_job_spanning_types_runs_at_its_slowest_member() -> None:
    workload = make_gavel(seed=1, num_jobs=3, cluster="v100:1x4,k80:1x4")
    model = workload.model
    assert isinstance(model, TypedSpeed)
    spec = workload.jobs[0]
    v100, k80 = model.rate(spec, "v100"), model.rate(spec, "k80")
    assert v100 > k80 > 0
    assert model.speed(spec, Allocation.of([(0, 1)])) == v100
    assert model.speed(spec, Allocation.of([(1, 1)])) == k80
    assert model.speed(spec, Allocation.of([(0, 1), (1, 1)])) == k80  # the slowest member
    assert model.speed(spec, Allocation.EMPTY) == 0.0
    two = make_gavel(seed=1, num_jobs=40, cluster="v100:2x4,k80:2x4", multi_gpu=True)
    big = next(j for j in two.jobs if j.num_workers == 2)
    slow = two.model.rate(big, "k80")  # type: ignore[attr-defined]
    assert two.model.speed(big, Allocation.of([(0, 1), (2, 1)])) == slow


# -- the oracle boundary -----------------------------------------------------------------------


class _Reader(BaseScheduler):
    """Records what a policy could read of per-type speeds."""

    name = "reader"

    def __init__(self) -> None:
        self.seen: dict[int, dict[str, float]] = {}
        self.refused = 0

    def decide(self, view: ClusterView) -> Decision:
        assert view.type_speeds is not None
        for run in view.jobs():
            self.seen[run.job_id] = dict(view.type_speeds.of(run.spec))
            try:
                view.oracle_speed(run.spec, Allocation.of([(0, 1)]))
            except PermissionError:
                self.refused += 1
        return Decision()


def test_a_policy_not_labelled_oracle_cannot_read_true_per_type_speeds() -> None:
    workload = make_gavel(seed=2, num_jobs=6, cluster="v100:1x4,k80:1x4", speed_spread=0.5)
    model = workload.model
    assert isinstance(model, TypedSpeed)
    reader = _Reader()
    sim = Simulator(
        workload.jobs,
        workload.make_cluster(),
        model,
        reader,
        make_placement("pack"),
        SimConfig(interval_s=workload.interval_s, on_events=False),
    )
    assert sim.next_point() is not None
    reader.decide(sim.view())
    assert reader.refused == len(reader.seen) > 0
    for spec in workload.jobs:
        if spec.job_id not in reader.seen:
            continue
        truth = {t: model.rate(spec, t) for t in ("v100", "k80")}
        assert reader.seen[spec.job_id] != truth  # the profile, not the job's true speeds
        profile = throughputs()
        assert reader.seen[spec.job_id]["v100"] == profile["v100"][(spec.model, 1)]
    # the estimates object keeps no path to the model's true rates
    estimates = sim.view().type_speeds
    assert not any(isinstance(v, TypedSpeed) for v in vars(type(estimates)).values())
    assert getattr(estimates, "__dict__", None) is None  # slots only: _estimates and types


# -- the linear programs -----------------------------------------------------------------------


def test_las_matches_a_hand_solved_case() -> None:
    # A: 4 steps/s on a V100, 1 on a K80; B: 2 and 1; one GPU of each type.
    # Proportional throughputs 2.5 and 1.5, so normalised rates (8/5, 2/5) and (4/3, 2/3);
    # the max-min optimum shares both GPUs half and half, both jobs at 1.0.
    problem = Problem(np.array([[4.0, 1.0], [2.0, 1.0]]), np.ones(2), np.ones(2))
    x = las_allocation(problem)
    np.testing.assert_allclose(x, [[0.5, 0.5], [0.5, 0.5]], atol=1e-6)
    # unweighted: the slower job cannot get more than 1.0, and it gets that
    rates = np.array([[2.0, 1.0], [1.0, 1.0]])
    x = max_min(Problem(rates, np.ones(2), np.ones(2)), np.ones(2))
    assert (rates * x).sum(axis=1).min() == pytest.approx(1.0)


def test_makespan_and_ftf_match_hand_solved_cases() -> None:
    one = Problem(np.ones((2, 1)), np.ones(2), np.array([1.0]))
    t, x = makespan_allocation(one, np.array([100.0, 200.0]))
    assert 300.0 <= t <= 300.0 * 1.05  # 100/T + 200/T <= 1 GPU
    check_feasible(x, one)
    two = Problem(np.ones((2, 1)), np.ones(2), np.array([2.0]))
    t, _ = makespan_allocation(two, np.array([100.0, 200.0]))
    assert 200.0 <= t <= 210.0  # each job at most all of one GPU
    rho, x = ftf_allocation(one, np.array([50.0, 50.0]), np.zeros(2), np.zeros(2))
    assert 1.0 <= rho <= 1.01  # an equal share is exactly the isolated share
    np.testing.assert_allclose(x, [[0.5], [0.5]], atol=0.02)


@st.composite
def problems(draw: st.DrawFn) -> Problem:
    m = draw(st.integers(1, 8))
    n = draw(st.integers(1, 3))
    rates = np.array(
        [[draw(st.sampled_from([0.0, 0.5, 1.0, 2.5, 7.0])) for _ in range(n)] for _ in range(m)]
    )
    rates[:, 0] = np.maximum(rates[:, 0], 0.5)  # every job runs somewhere
    scale = np.array([float(draw(st.sampled_from([1, 2, 4, 8]))) for _ in range(m)])
    gpus = np.array([float(draw(st.integers(8, 16))) for _ in range(n)])
    return Problem(rates, scale, gpus)


def _spec(job_id: int) -> JobSpec:
    return JobSpec(job_id, 0.0, "A3C", Arch.ALLREDUCE, 1.0, Resources(1.0))


@settings(max_examples=25, deadline=None)
@given(problem=problems(), seed=st.integers(0, 1000))
def test_every_allocation_is_feasible(problem: Problem, seed: int) -> None:
    rng = np.random.default_rng(seed)
    remaining = rng.uniform(100.0, 1e5, problem.shape[0])
    for x in (
        las_allocation(problem),
        makespan_allocation(problem, remaining)[1],
        ftf_allocation(
            problem, remaining, rng.uniform(0, 1e4, problem.shape[0]), np.zeros(len(remaining))
        )[1],
        GavelFifoHet().allocation(problem, [JobRun(_spec(i)) for i in range(len(remaining))], 0.0),
    ):
        check_feasible(x, problem)
        assert (x[problem.rates <= 0] == 0).all()


@settings(max_examples=20, deadline=None)
@given(problem=problems(), seed=st.integers(0, 1000), interior=st.booleans())
def test_highspy_and_scipy_linprog_give_the_same_point(
    problem: Problem, seed: int, interior: bool
) -> None:
    import scipy

    from dlsched.papers.gavel import lp

    if not scipy.__version__.startswith("1.17."):
        pytest.skip("SciPy 1.17 bundles HiGHS 1.12.0, highspy's pinned release; others may not")
    floor = np.random.default_rng(seed).uniform(0.0, 0.3, problem.shape[0])
    for program in (
        lp._columns(problem, -problem.rates, extra_column=False),
        lp._columns(problem, -problem.rates, extra_column=True),
    ):
        program.upper[sum(problem.shape) :] = -floor
        if len(program.c) > problem.shape[0] * problem.shape[1]:
            program.c[-1] = -1.0
        ours, scipys = lp._run_highs(program, interior), lp._run_linprog(program, interior)
        assert ours[0] == scipys[0]
        if ours[1] is not None and scipys[1] is not None:
            np.testing.assert_array_equal(ours[1], scipys[1])  # the same HiGHS, the same point


# -- the workload ------------------------------------------------------------------------------


def test_jobs_are_drawn_as_gavel_draws_them() -> None:
    drawn = draw_jobs(np.random.default_rng(0), 4000, 6.0, multi_gpu=True)
    scales = np.array([d[2] for d in drawn])
    for size, p in ((1, 0.7), (2, 0.1), (4, 0.15), (8, 0.05)):
        assert abs((scales == size).mean() - p) < 0.025
    durations = np.array([d[3] for d in drawn])
    assert durations.min() >= 60 * 10**1.5 and durations.max() <= 60 * 10**4
    assert abs((durations >= 60 * 1000).mean() - 0.2) < 0.03
    gaps = np.diff([d[0] for d in drawn])
    assert abs(gaps.mean() - 600.0) < 40.0  # 6 jobs an hour
    distributed = {j.name for j in JOB_TYPES if j.distributed}
    assert all(d[1] in distributed for d in drawn if d[2] > 1)


def test_a_jobs_work_is_its_duration_on_a_v100() -> None:
    workload = make_gavel(seed=3, num_jobs=5, cluster="p100:1x4,v100:1x4")
    spec = workload.jobs[0]
    model = workload.model
    assert isinstance(model, TypedSpeed)
    duration = spec.total_work / model.rate(spec, "v100")
    assert 60 * 10**1.5 <= duration <= 60 * 10**4
    assert workload.server_types == ("p100", "v100") and workload.interval_s == 360.0


def test_bad_gavel_options_are_refused() -> None:
    with pytest.raises(ValueError, match="jobs_per_hour"):
        make_gavel(jobs_per_hour=0.0)
    with pytest.raises(ValueError, match="no Gavel throughputs"):
        make_gavel(cluster="a100:1x8", num_jobs=2)


# -- the mechanism -----------------------------------------------------------------------------


def _equal_jobs(num: int, rounds: float) -> Workload:
    """``num`` one-GPU A3C jobs at 0 s, each ``rounds`` rounds long on a V100."""
    return gavel_workload([(0.0, "A3C", 1, 360.0 * rounds)] * num, cluster="v100:1x2", name="equal")


def _run(workload: Workload, scheduler: Scheduler) -> list[float]:
    """Finish times, checking that no target of any decision failed."""
    sim = Simulator(
        workload.jobs,
        workload.make_cluster(),
        workload.model,
        scheduler,
        make_placement(workload.placement),
        SimConfig(
            interval_s=workload.interval_s,
            on_events=False,
            rescale=workload.rescale or RescaleCost(),
        ),
    )
    while sim.next_point() is not None:
        failed = sim.apply(scheduler.decide(sim.view()))
        assert not failed, failed
    return sorted(r.finish_s for r in sim.finished if r.finish_s is not None)


def test_las_time_shares_rounds_where_fifo_runs_to_completion() -> None:
    las = _run(_equal_jobs(4, 10.0), GavelLas())
    fifo = _run(_equal_jobs(4, 10.0), GavelFifoHet())
    assert fifo[1] <= 10 * 360.0 + 1e-6 and fifo[3] >= 20 * 360.0 - 1e-6
    assert las[0] >= 15 * 360.0  # every job got about half of the rounds


def test_heterogeneity_aware_las_beats_agnostic_las_on_a_mixed_cluster() -> None:
    def avg_jct_s(policy: str) -> float:
        result = simulate(
            "gavel", policy, seed=4, num_jobs=40, jobs_per_hour=6.0, cluster="v100:1x4,k80:1x4"
        )
        return float(result.summary()["avg_jct_s"])

    aware, agnostic = avg_jct_s("gavel-las-het"), avg_jct_s("gavel-las")
    assert aware < agnostic


def test_jobs_moving_between_servers_never_collide() -> None:
    workload = make_gavel(
        seed=5, num_jobs=30, jobs_per_hour=20.0, multi_gpu=True, cluster="v100:2x4,p100:2x4,k80:2x4"
    )
    for policy in (GavelLasHet(), GavelLas()):
        finished = _run(workload, policy)
        assert len(finished) == len(workload.jobs)


def test_reproduce_gavel_writes_its_table_figure_and_ratios(tmp_path: Path) -> None:
    from dlsched.papers.gavel.experiments import POLICIES, Size, run

    paths = run(tmp_path, size=Size(window=(2, 4), rates=(4.0,), seeds=(1,), cutoff_h=50.0))
    assert sorted(p.name for p in paths) == ["README.md", "gavel.png", "runs.csv", "summary.csv"]
    readme = (tmp_path / "README.md").read_text()
    assert all(f"| {policy} | 4 |" in readme for policy in POLICIES)
    assert "gavel-las-het / gavel-las at 4 jobs/h:" in readme


def test_reproduce_gavel_gives_the_same_files_on_any_count_of_workers(tmp_path: Path) -> None:
    from dlsched.papers.gavel.experiments import Size, run

    size = Size(window=(2, 4), rates=(4.0, 8.0), seeds=(1,), cutoff_h=50.0)
    run(tmp_path / "one", size=size, workers=1)
    run(tmp_path / "two", size=size, workers=2)
    for name in ("runs.csv", "summary.csv", "README.md"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_reproduce_gavel_measures_a_window_of_a_stream_that_goes_on() -> None:
    from dlsched.papers.gavel.experiments import Size, run_one

    size = Size(window=(2, 4), rates=(4.0,), seeds=(1,), cutoff_h=50.0)
    row = run_one("gavel-fifo-het", 4.0, 1, size)
    assert row["arrived"] > 4  # jobs after the window arrived while it ran
    if row["window_finished"] == 2:
        assert 0 < row["avg_jct_s"] < math.inf
    else:  # not finished by the cutoff: saturated
        assert row["avg_jct_s"] == math.inf and row["end_s"] > 50 * 3600
    crowded = run_one("gavel-fifo-het", 4.0, 1, Size((2, 4), (4.0,), (1,), 50.0, 0.01))
    assert crowded["avg_jct_s"] == math.inf and crowded["window_finished"] < 2


def test_any_workload_runs_typed_with_a_jobs_gavel_type_from_its_model() -> None:
    from dataclasses import replace

    from dlsched.workloads.hetero import with_types
    from dlsched.workloads.registry import make_workload

    base = make_workload("sched2", seed=1, servers=2, num_jobs=4)
    named = replace(base, jobs=(replace(base.jobs[0], model="A3C"), *base.jobs[1:]))
    typed = with_types(named, ["v100", "k80"], seed=1)
    model = typed.model
    assert isinstance(model, TypedSpeed) and typed.make_cluster().gpu_types == ("v100", "k80")
    a3c = throughputs()
    expected = a3c["k80"][("A3C", 1)] / a3c["v100"][("A3C", 1)]
    assert model.rate(typed.jobs[0], "k80") == pytest.approx(expected)
    assert model.rate(typed.jobs[0], "v100") == 1.0  # the reference type: as the workload says
    with pytest.raises(ValueError, match="3 GPU types for 2 servers"):
        with_types(base, ["v100", "k80", "k80"])


def test_cross_server_slowdown_off_reaches_the_model_under_the_gpu_types() -> None:
    on = simulate("sched2", "fifo", 1, servers=2, num_jobs=6, cluster="v100:1x8,k80:1x8")
    off = simulate(
        "sched2",
        "fifo",
        1,
        servers=2,
        num_jobs=6,
        cluster="v100:1x8,k80:1x8",
        cross_server_slowdown=False,
    )
    assert on.params["speed_model"].startswith("per GPU type (v100, k80) x locality: ")
    assert (
        off.params["speed_model"]
        == "per GPU type (v100, k80) x locality: cross-server slowdown off"
    )
