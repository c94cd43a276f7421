"""The comparison figure (issue 36): bars and each scheduler's JCT CDF, log axes on request;
one run's figure names every line it draws."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pytest

import dlsched
from dlsched.experiments import plots
from dlsched.experiments.compare import summarise


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> list[plt.Figure]:
    kept: list[plt.Figure] = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: kept.append(fig) or Path(path))
    return kept


def test_comparison_has_a_jct_cdf_per_scheduler_and_log_axes(figures: list[plt.Figure]) -> None:
    results = [
        dlsched.simulate("sched2", name, seed, num_jobs=40)
        for seed in (1, 2)
        for name in ("fifo", "sif")
    ]
    plots.plot_comparison(summarise(results), "x.png", log=True, results=results)
    bars, cdfs = figures[0].axes
    assert bars.get_yscale() == "log" and cdfs.get_xscale() == "log"
    assert [t.get_text() for t in cdfs.get_legend().get_texts()] == ["fifo", "sif"]
    plots.plot_comparison(summarise(results), "y.png")
    assert len(figures[1].axes) == 1 and figures[1].axes[0].get_yscale() == "linear"


def test_one_runs_figure_names_the_pending_line(figures: list[plt.Figure]) -> None:
    plots.plot_run(dlsched.simulate("sched2", "sif", 1, num_jobs=40), "run.png")
    names = [t.get_text() for t in figures[0].axes[0].get_legend().get_texts()]
    assert "pending jobs" in names
