"""The issue-3 experiments run at a tiny size and write plausible files."""

from __future__ import annotations

import csv
from pathlib import Path

from dlsched.experiments import kubeflow
from dlsched.experiments.registry import experiments
from dlsched.papers.sched2 import fragmentation as sched2_fragmentation

PNG_MAGIC = b"\x89PNG"


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_both_are_registered_with_their_run_functions():
    assert experiments()["sched2-fragmentation"].function() is sched2_fragmentation.run
    assert experiments()["kubeflow"].function() is kubeflow.run


def test_sched2_fragmentation_writes_curves_summary_plot_and_markdown(tmp_path):
    size = sched2_fragmentation.Size(num_jobs=40, seeds=(1, 2))
    paths = sched2_fragmentation.run(tmp_path, size=size)
    names = {p.name for p in paths}
    assert names == {"fragmentation.csv", "summary.csv", "fragmentation.png", "README.md"}
    assert all(p.exists() and p.parent == tmp_path for p in paths)
    samples = rows(tmp_path / "fragmentation.csv")
    assert {r["scheduler"] for r in samples} == {"sif", "lrf", "fifo"}
    assert {r["seed"] for r in samples} == {"1", "2"}
    frag = [float(r["fragmentation"]) for r in samples]
    assert all(0.0 <= f <= 1.0 for f in frag)
    assert max(frag) > 0.0  # jobs of different lengths share servers at some point
    for name in ("sif", "lrf", "fifo"):
        times = [float(r["time_s"]) for r in samples if r["scheduler"] == name and r["seed"] == "1"]
        assert times == sorted(times) and len(times) > 3
    summary = rows(tmp_path / "summary.csv")
    assert [r["scheduler"] for r in summary] == ["sif", "lrf", "fifo"]
    assert all(0.0 <= float(r["avg_fragmentation"]) <= 1.0 for r in summary)
    assert all(float(r["avg_jct_s"]) > 0 for r in summary)
    assert (tmp_path / "fragmentation.png").read_bytes().startswith(PNG_MAGIC)
    text = (tmp_path / "README.md").read_text()
    assert "Reduced size" in text and "| SIF |" in text and "40 jobs" in text


def test_kubeflow_writes_runs_summary_plot_and_markdown(tmp_path):
    size = kubeflow.Size(num_jobs=15, seeds=(1, 2))
    paths = kubeflow.run(tmp_path, size=size)
    assert {p.name for p in paths} == {"runs.csv", "summary.csv", "kubeflow.png", "README.md"}
    runs = rows(tmp_path / "runs.csv")
    assert len(runs) == len(kubeflow.MIXES) * len(kubeflow.SCHEDULERS) * 2
    assert all(r["finished"] == r["jobs"] == "15" for r in runs)
    assert all(0.0 < float(r["cpu_util"]) <= 1.0 for r in runs)
    for r in runs:
        assert float(r["makespan_s"]) >= float(r["avg_jct_s"]) > 0
        if r["scheduler"] == "kubeflow-static":
            assert float(r["rescales"]) == 0  # fixed replicas: never resized
    summary = rows(tmp_path / "summary.csv")
    assert {(r["mix"], r["scheduler"]) for r in summary} == {
        (m, s) for m in kubeflow.MIXES for s in kubeflow.SCHEDULERS
    }
    assert (tmp_path / "kubeflow.png").read_bytes().startswith(PNG_MAGIC)
    text = (tmp_path / "README.md").read_text()
    assert "Reduced size" in text and "high-priority-burst" in text and "Dynamic relative" in text
