"""Finish-time fairness (Themis' ρ) and per-user fairness in every summary (issue 36)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import dlsched
from dlsched.cli import app
from dlsched.sim.fairness import fairness_summary, finish_time_fairness, jobs_in_system
from dlsched.sim.metrics import jain_index
from dlsched.sim.result import JobRecord

intervals = st.lists(
    st.tuples(st.floats(0, 1e4), st.just(0.0) | st.floats(1, 1e4)).map(
        lambda p: (p[0], p[0] + p[1])
    ),  # zero-length or at least 1 s: prefix sums of times lose ~1e-16 x time / length
    min_size=1,
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(intervals)
def test_jobs_in_system_is_the_time_average_of_every_overlap(jobs: list[tuple[float, float]]):
    submit = np.array([s for s, _ in jobs])
    finish = np.array([f for _, f in jobs])
    got = jobs_in_system(submit, finish)
    for i, (s, f) in enumerate(jobs):
        if f > s:
            overlap = sum(max(0.0, min(f, fj) - max(s, sj)) for sj, fj in jobs)
            want = max(1.0, overlap / (f - s))
            assert abs(got[i] - want) <= 1e-9 * want
        else:
            assert got[i] == 1.0


def test_rho_is_the_slowdown_over_the_stretch_of_a_job_larger_than_its_fair_share():
    # Two jobs side by side for all of the first one's life: N = 2 for it.
    submit, finish = np.array([0.0, 0.0]), np.array([100.0, 200.0])
    ideal = np.array([50.0, 200.0])
    rho = finish_time_fairness(submit, finish, ideal, np.array([2.0, 2.0]), cluster_gpus=8.0)
    assert rho[0] == 2.0  # 2 GPUs fit in 8/2: alone on its share it takes its ideal 50 s
    rho = finish_time_fairness(submit, finish, ideal, np.array([8.0, 2.0]), cluster_gpus=8.0)
    assert rho[0] == 1.0  # 8 GPUs in a share of 4: alone it would take 2 x 50 s = its JCT
    no_gpus = finish_time_fairness(submit, finish, ideal, np.zeros(2), 0.0)
    assert no_gpus.tolist() == (finish / ideal).tolist()  # DeepRM's jobs: ρ is the slowdown


def test_per_user_fairness_pools_each_users_jobs_and_a_job_without_a_user_is_its_own():
    submit, finish = np.zeros(3), np.array([10.0, 30.0, 40.0])
    ideal = np.full(3, 10.0)
    slowdown = finish / ideal  # 1, 3, 4
    users = {0: "ann", 1: "ann"}
    out = fairness_summary([0, 1, 2], submit, finish, ideal, slowdown, np.ones(3), 8.0, users)
    assert out["worst_user_slowdown"] == 4.0  # job 2, a user of its own; ann's mean is 2
    assert out["user_fairness"] == jain_index([2.0, 4.0])
    out = fairness_summary([0, 1, 2], submit, finish, ideal, slowdown, np.ones(3), 8.0, None)
    assert out["user_fairness"] == jain_index([1.0, 3.0, 4.0])


def test_every_summary_has_the_fairness_fields() -> None:
    result = dlsched.simulate("dl2", "fifo", seed=1)
    summary = result.summary()
    rho_max, user = summary["max_ftf_rho"], summary["user_fairness"]
    assert summary["avg_ftf_rho"] <= rho_max and 0 < user <= 1
    assert summary["worst_user_slowdown"] == max(r.slowdown for r in result.records)
    assert "user" not in JobRecord.__dataclass_fields__  # the per-job records are as before


def test_a_trace_user_column_gives_per_user_fairness_and_compare_can_pick_it(
    tmp_path: Path,
) -> None:
    lines = ["submit_time,duration,num_gpus,username"]
    lines += [f"{i * 10},{100 + 50 * (i % 3)},1,{'ann' if i % 2 else 'bob'}" for i in range(12)]
    trace = tmp_path / "t.csv"
    trace.write_text("\n".join(lines) + "\n")
    result = dlsched.simulate(f"trace:{trace}", "fifo", servers=1)
    assert set(result.params["users"].values()) == {"ann", "bob"}
    by_user: dict[str, list[float]] = {}
    for record in result.records:
        by_user.setdefault(result.params["users"][record.job_id], []).append(record.slowdown)
    means = [float(np.mean(v)) for v in by_user.values()]
    assert result.summary()["user_fairness"] == jain_index(means)
    out = CliRunner().invoke(
        app,
        ["compare", "-w", f"trace:{trace}", "--servers", "1", "--schedulers", "fifo,sjf",
         "--seeds", "1", "--metric", "user_fairness,max_ftf_rho", "--json",
         "--summary-out", str(tmp_path / "summary.csv")],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert all("user_fairness" in row and "worst_user_slowdown" in row for row in rows)
    header = (tmp_path / "summary.csv").read_text().splitlines()[0].split(",")
    assert {"avg_ftf_rho_mean", "max_ftf_rho_ci95", "user_fairness_mean"} <= set(header)
    assert "avg_queued_s_mean" in header


def test_queued_time_counts_the_waits_after_a_preemption_that_the_first_wait_hides() -> None:
    # issue 36: LAS and Tiresias preempt, so their avg_wait_s (before a first start) is small
    las = dlsched.simulate("dl2", "las", seed=1).summary()
    assert las["avg_queued_s"] > 10 * las["avg_wait_s"]
    fifo = dlsched.simulate("dl2", "fifo", seed=1)  # never preempts: every queued s is a wait
    assert fifo.queued_s == pytest.approx([r.wait_s for r in fifo.records], abs=1e-6)
