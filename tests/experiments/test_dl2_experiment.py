"""``dlsched reproduce dl2`` end to end at the hidden smoke size (tiny traces, a few updates)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.api import simulate
from dlsched.cli import app
from dlsched.core import ClusterView, Decision
from dlsched.experiments.registry import experiments
from dlsched.papers.dl2 import experiments as dl2
from dlsched.papers.dl2.experiments import EpochEstimateError
from dlsched.papers.dl2.experiments_training import SEEN_TYPES, UNSEEN_TYPES, only_types
from dlsched.schedulers.base import BaseScheduler
from dlsched.schedulers.registry import make_scheduler
from dlsched.workloads.registry import make_workload

PNG_MAGIC = b"\x89PNG"
CSV_COLUMNS = {
    "fig9_jct.csv": {"scheduler", "seed", "avg_jct_s"},
    "fig10_training.csv": {"run", "phase", "step", "val_avg_jct_s"},
    "table2_ablations.csv": {
        "variant",
        "sl_val_avg_jct_s",
        "final_val_avg_jct_s",
        "best_val_avg_jct_s",
        "slowdown_vs_full_pct",
    },
    "table2_curves.csv": {"run", "phase", "step", "val_avg_jct_s"},
    "fig13_speed_variation.csv": {"noise", "scheduler", "seed", "avg_jct_s"},
    "fig14_epoch_error.csv": {"error", "scheduler", "seed", "avg_jct_s"},
    "fig15_unseen_types.csv": {"run", "phase", "step", "val_avg_jct_s", "types_in_training"},
    "fig16_teachers.csv": {
        "teacher",
        "teacher_val_avg_jct_s",
        "sl_agreement",
        "sl_val_avg_jct_s",
        "sl_rl_val_avg_jct_s",
    },
    "fig16_curves.csv": {"run", "phase", "step", "val_avg_jct_s"},
    "fig17_job_cap.csv": {"load", "J", "scheduler", "seed", "avg_jct_s", "max_concurrent_jobs"},
}
PNGS = {
    "fig9_jct.png",
    "fig10_training.png",
    "table2_ablations.png",
    "fig13_speed_variation.png",
    "fig14_epoch_error.png",
    "fig15_unseen_types.png",
    "fig16_teachers.png",
    "fig17_job_cap.png",
}


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def check_outputs(out: Path) -> None:
    """Every file exists; CSVs have their columns, the expected rows and finite numbers."""
    smoke = dl2.SMOKE
    assert {p.name for p in out.iterdir()} == {*CSV_COLUMNS, *PNGS, "dl2.md"}
    for name, columns in CSV_COLUMNS.items():
        table = rows(out / name)
        assert table and set(table[0]) == columns, name
        for row in table:
            for key, value in row.items():
                if key not in ("scheduler", "run", "phase", "variant", "teacher"):
                    assert math.isfinite(float(value)), (name, key, value)
    for name in PNGS:
        assert (out / name).read_bytes().startswith(PNG_MAGIC)
    fig9 = rows(out / "fig9_jct.csv")
    assert {"drf", "tetris", "optimus", "efficient-srtf", "dl2"} <= {r["scheduler"] for r in fig9}
    assert len(rows(out / "fig13_speed_variation.csv")) == 3 * len(smoke.noise_levels)
    assert {float(r["error"]) for r in rows(out / "fig14_epoch_error.csv")} == set(
        smoke.epoch_errors
    )
    assert {int(r["J"]) for r in rows(out / "fig17_job_cap.csv")} == {0, *smoke.job_caps}
    tr = smoke.train
    fig10 = rows(out / "fig10_training.csv")
    assert {r["run"] for r in fig10} == {"SL only", "RL only", "SL then RL"}
    last = tr.sl_steps + tr.rl_steps
    for run in ("SL only", "RL only", "SL then RL"):
        steps = [int(r["step"]) for r in fig10 if r["run"] == run]
        assert steps[0] == 0 and steps[-1] == last and steps == sorted(steps), run
    table2 = rows(out / "table2_ablations.csv")
    assert [r["variant"] for r in table2] == [
        "DL2 (full)",
        "without value network",
        "without exploration",
        "without experience replay",
    ]
    assert float(table2[0]["slowdown_vs_full_pct"]) == 0.0
    assert [r["teacher"] for r in rows(out / "fig16_teachers.csv")] == list(tr.teachers)
    fig15 = rows(out / "fig15_unseen_types.csv")
    assert {r["types_in_training"] for r in fig15} == {"6", "8"}
    text = (out / "dl2.md").read_text()
    assert "SMOKE" in text and "Table 2" in text and "Fig. 17" in text and "| dl2 |" in text


def test_registered():
    assert experiments()["dl2"].function() is dl2.run


@pytest.mark.slow
def test_cli_reproduce_dl2_smoke_size_writes_every_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole reproduction, through the CLI, at the smoke size (set by the environment)."""
    monkeypatch.setenv(dl2.SIZE_ENV, "smoke")
    result = CliRunner().invoke(app, ["reproduce", "dl2", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    check_outputs(tmp_path)  # --out is used as given


def test_unknown_size_is_a_one_line_cli_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(dl2.SIZE_ENV, "huge")
    result = CliRunner().invoke(app, ["reproduce", "dl2", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "DLSCHED_DL2_REPRO_SIZE" in result.output


class _Spy(BaseScheduler):
    """DRF, recording the total epochs it is shown for every job."""

    name = "spy"
    preemptive = True  # type: ignore[misc]

    def __init__(self) -> None:
        self.inner = make_scheduler("drf")
        self.seen: dict[int, float] = {}

    def decide(self, view: ClusterView) -> Decision:
        for run in view.jobs():
            self.seen[run.job_id] = run.spec.total_work
        return self.inner.decide(view)


def test_epoch_estimate_error_shows_v_while_the_job_needs_v_times_one_plus_or_minus_error():
    options = {"servers": 2, "num_jobs": 30, "load": 0.2}
    truth = {j.job_id: j.total_work for j in make_workload("dl2", seed=3, **options).jobs}
    spy = _Spy()
    told = simulate("dl2", EpochEstimateError(spy, 0.2, seed=3), seed=3, **options)
    assert spy.seen.keys() == truth.keys()
    ratios = {round(truth[j] / v, 6) for j, v in spy.seen.items()}
    assert ratios == {0.8, 1.2}  # both signs occur, and nothing else
    # the simulator still runs the true epochs: DRF ignores them, so nothing else changes
    plain = simulate("dl2", "drf", seed=3, **options)
    assert told.summary()["avg_jct_s"] == pytest.approx(plain.summary()["avg_jct_s"])


def test_only_types_remaps_unseen_jobs_and_keeps_their_duration():
    workload = make_workload("dl2", seed=5, num_jobs=80)
    assert {j.model for j in workload.jobs} & set(UNSEEN_TYPES)
    seen = only_types(SEEN_TYPES)(workload)
    assert {j.model for j in seen.jobs} <= set(SEEN_TYPES)
    model = workload.model
    for old, new in zip(workload.jobs, seen.jobs, strict=True):
        assert (old.job_id, old.submit_time_s, old.num_workers) == (
            new.job_id,
            new.submit_time_s,
            new.num_workers,
        )
        if old.model in SEEN_TYPES:
            assert new == old
        else:
            w = old.num_workers
            before = old.total_work / model.epochs_per_s(old.model, w, w)
            after = new.total_work / model.epochs_per_s(new.model, w, w)
            assert after == pytest.approx(before, rel=0.05, abs=60.0)


def test_fig9_labels_say_how_each_dl2_policy_was_made() -> None:
    """Both DL2 rows are labelled; the paper's −44.1 % stands only beside ``dl2:paper``."""
    from dlsched.papers.dl2.report import vs_drf
    from dlsched.papers.dl2.scheduler import how_trained, policy_dir

    assert "not the paper's method" in how_trained("dl2")
    assert how_trained("drf") == ""
    assert policy_dir("dl2:paper").name == "dl2_paper"
    assert policy_dir("dl2:runs/x") == Path("runs/x")
    f9 = [
        {"scheduler": "drf", "seed": 1, "avg_jct_s": 100.0},
        {"scheduler": "dl2", "seed": 1, "avg_jct_s": 70.0},
        {"scheduler": "dl2:paper", "seed": 1, "avg_jct_s": 90.0},
    ]
    lines = vs_drf(f9)
    assert lines[0].startswith("- dl2 vs DRF: -30.0 %") and "44.1" not in lines[0]
    assert lines[1].startswith("- dl2:paper vs DRF: -10.0 %") and "(paper −44.1 %)" in lines[1]
    assert vs_drf(f9[:2]) == [lines[0]]
